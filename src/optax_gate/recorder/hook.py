"""The recorder's import hook (inside the environment under test): switches the recorder on and patches ``optax``,
``flax.nnx`` and ``jax`` once imported (``docs/module-notes.md``)."""

from __future__ import annotations

import importlib.abc
import os
import sys
import warnings
from typing import Any

from optax_gate.recorder import ROOT_ENV, TRACE_ENV, calls, process, transforms

_real_warn = warnings.warn
_installed = [False]


def _warn(
    message: Any, category: Any = None, stacklevel: Any = 1, source: Any = None, *, skip_file_prefixes: Any = ()
) -> Any:
    """``warnings.warn`` that also notes the warning on the recorded call under way (same frame attribution)."""
    stack = getattr(process.thread, "warnings", None)
    if stack:
        name = type(message).__name__ if isinstance(message, Warning) else (category or UserWarning).__name__
        stack[-1].append({"category": name, "message": str(message)[:500]})
        process.thread.noted = (name, str(message)[:500])  # shown next by _show, which must not note it twice
    return _real_warn(message, category, stacklevel + 1, source, skip_file_prefixes=skip_file_prefixes)


_real_show = warnings.showwarning


def _show(message: Any, category: Any, filename: Any, lineno: Any, file: Any = None, line: Any = None) -> Any:
    """``warnings.showwarning`` that also notes, on the recorded call under
    way, a warning raised from C (NumPy's ``RuntimeWarning: divide by zero``
    never passes through ``warnings.warn``, and a schedule's such warning is
    recorded too); one :func:`_warn` noted already is not noted again.
    Only warnings the filters show are seen: the same on both sides."""
    stack = getattr(process.thread, "warnings", None)
    entry = (getattr(category, "__name__", str(category)), str(message)[:500])
    if stack and getattr(process.thread, "noted", None) != entry:
        stack[-1].append({"category": entry[0], "message": entry[1]})
    process.thread.noted = None
    return _real_show(message, category, filename, lineno, file, line)


_PATCHES = {"optax": calls.patch_optax, "flax.nnx": transforms.patch_nnx, "jax": transforms.patch_jax}


class _Finder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: lets the other finders find a target module and
    wraps its loader's ``exec_module`` so that the module is patched once executed."""

    def __init__(self) -> None:
        self.busy: set[str] = set()

    def find_spec(self, name: Any, path: Any, target: Any = None) -> Any:
        if name not in _PATCHES or name in self.busy:
            return None
        self.busy.add(name)
        try:
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    break
            else:
                return None
        finally:
            self.busy.discard(name)
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        original = loader.exec_module

        def exec_module(module: Any) -> None:
            original(module)
            _PATCHES[name](module)

        setattr(loader, "exec_module", exec_module)  # noqa: B010 (mypy refuses an assignment to a method)
        return spec


def install(folder: str | None = None, root: str | None = None) -> None:
    """Switch the recorder on for this process (once): traces go to
    ``folder`` (default ``$OPTAX_GATE_TRACE``), calls from files under ``root``
    (default ``$OPTAX_GATE_TEAM_ROOT``, else the working folder) are recorded.
    A target module already imported is patched at once."""
    if _installed[0]:
        return
    _installed[0] = True
    process.writer = process.Writer(folder or os.environ[TRACE_ENV])
    process.root = os.path.realpath(root or os.environ.get(ROOT_ENV) or os.getcwd())
    warnings.warn = _warn
    warnings.showwarning = _show
    sys.meta_path.insert(0, _Finder())
    for name, patch in _PATCHES.items():
        if name in sys.modules:
            patch(sys.modules[name])
