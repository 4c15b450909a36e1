"""The recorder's import hook and wrappers (inside the environment under test).

:func:`install` (called by ``site/sitecustomize.py`` when ``OPTAX_GATE_TRACE``
is set) puts a finder first on ``sys.meta_path``: when ``optax`` or
``flax.nnx`` has been executed, their public callables are wrapped in place.

- Functions of ``optax`` and its public submodules (``optax.losses``,
  ``optax.schedules``, ``optax.tree``, ``optax.contrib``, ``optax.transforms``,
  ... whatever ``optax/__init__`` imported) are replaced in the module
  namespace by a wrapper (one wrapper per function, whatever the module it is
  reached from; named after the first public name it has, ``optax.`` first).
- A GradientTransformation a wrapped call returns gets wrapped ``init`` and
  ``update`` (``_replace`` keeps its class); a plain function it returns (a
  schedule, a transformation factory) gets wrapped too.
- Classes with ``init`` and ``update`` methods (``optax.MultiSteps``) have
  ``__init__``, ``init``, ``update`` and ``gradient_transformation`` wrapped on
  the class; ``flax.nnx.Optimizer.update`` likewise.

A call is recorded only when its immediate caller is a file under
``OPTAX_GATE_TEAM_ROOT`` (not under a ``site-packages`` folder or the
environment's prefix) and no recorded call is already running on the thread
(Optax calling itself is not the team's call). One event is written per call
(JSON line, see :func:`_call`): ``site`` (``file:line`` relative to the team's
folder), ``api``, ``call`` (``call``, ``init``, ``update``, ``()`` for a
returned function), ``args`` (abstract signatures, positional and keyword
apart), ``warnings`` (category and message of each ``warnings.warn`` during the
call), ``exception`` (type and message), ``in`` (the values of its array
inputs) and ``out`` (the result's PyTree structure and leaves).

Under a JAX transformation the leaves are tracers: the event holds the
abstract leaves (``traced``: true). Values inside a function the team jitted
come from its *shadow* (:class:`_Recorded`): a copy jitted under a JAX user
context of its own, whose Optax calls add a ``jax.debug.callback`` (unordered:
ordered effects cannot be vmapped) writing ``{"of": event seq, "in", "out"}``
each time it runs; the team's own program is compiled without any callback
and its results are recorded where the team gets them (``jax.jit(<name>)``).
Elsewhere (``jax.grad`` or ``lax.scan`` in eager code, ``nnx.jit``) a traced
call keeps its abstract signature only. Nothing the team's code computes is
changed: arguments and results are passed through untouched (checked bit for
bit by ``tests/meta/test_team_run.py``).

Each process writes its own file ``trace-<pid>.jsonl`` into the folder
``OPTAX_GATE_TRACE``, its first line ``{"trace": VERSION, "pid", "start",
"argv"}``; a process that records nothing writes no file.
"""

from __future__ import annotations

import functools
import importlib.abc
import inspect
import json
import os
import sys
import threading
import time
import types
import warnings
from typing import Any

from optax_gate.recorder import ROOT_ENV, TRACE_ENV, VERSION

#: Classes with init/update: methods wrapped on the class itself.
_METHODS = ("__init__", "init", "update", "gradient_transformation")

_state = threading.local()
_real_warn = warnings.warn
_installed = [False]


class _Writer:
    def __init__(self, folder: str) -> None:
        self.folder, self.file, self.seq, self.lock = folder, None, 0, threading.Lock()

    def emit(self, event: dict[str, Any]) -> int:
        with self.lock:
            if self.file is None:
                os.makedirs(self.folder, exist_ok=True)
                self.file = open(os.path.join(self.folder, f"trace-{os.getpid()}.jsonl"), "a", encoding="utf-8")
                self.file.write(json.dumps({"trace": VERSION, "pid": os.getpid(), "start": time.time(),
                                            "argv": sys.argv[:20]}) + "\n")
            self.seq += 1
            event["seq"] = self.seq
            self.file.write(json.dumps(event, default=repr) + "\n")
            self.file.flush()
            return self.seq


_writer: _Writer | None = None
_root = ""


@functools.lru_cache(maxsize=4096)
def _team_file(filename: str) -> str | None:
    """``filename`` relative to the team's folder, or None when it is not the team's."""
    if not filename or filename.startswith("<"):
        return None
    path = os.path.realpath(filename)
    if not path.startswith(_root + os.sep):
        return None
    prefix = os.path.realpath(sys.prefix) + os.sep
    if "site-packages" in path.split(os.sep) or path.startswith(prefix):
        return None
    return os.path.relpath(path, _root).replace(os.sep, "/")


def _depth() -> int:
    return getattr(_state, "depth", 0)


def _warn(message, category=None, stacklevel=1, source=None, *, skip_file_prefixes=()):
    """``warnings.warn`` that also notes the warning on the recorded call under way (same frame attribution)."""
    stack = getattr(_state, "warnings", None)
    if stack:
        name = type(message).__name__ if isinstance(message, Warning) else (category or UserWarning).__name__
        stack[-1].append({"category": name, "message": str(message)[:500]})
    return _real_warn(message, category, stacklevel + 1, source, skip_file_prefixes=skip_file_prefixes)


def _signature(args: tuple, kwargs: dict) -> dict[str, Any]:
    from optax_gate.recorder import values
    return {"positional": [values.signature(a) for a in args], "keyword": {k: values.signature(v) for k, v in kwargs.items()}}


def _values_callback(seq: int, n_in: int, *leaves: Any) -> None:
    from optax_gate.recorder import values
    if _writer is not None:
        stored = [values.leaf_value(x) for x in leaves]
        _writer.emit({"of": seq, "in": stored[:n_in], "out": stored[n_in:]})


def _record(event: dict[str, Any], inputs: Any, out: Any, failed: bool) -> None:
    """Write ``event`` with the values of the call's array inputs (``in``:
    their leaves in the order of ``(args, kwargs)``) and of its result
    (``out``: PyTree structure, leaf paths, leaves). Traced (tracers among
    them): abstract leaves now; in a shadow run (:class:`_Recorded`) the
    values through a host callback each time the program runs, elsewhere
    (``jax.grad`` or ``lax.scan`` in eager code) none (``values``: why)."""
    from optax_gate.recorder import values
    in_leaves = [x for x in values.flatten(inputs)[0] if values._is_array(x)]
    out_leaves, tree, paths = ([], "", []) if failed else values.flatten(out)
    if values.is_traced(in_leaves) or values.is_traced(out_leaves):
        import jax
        arrays = [x for x in out_leaves if values._is_array(x)]
        event["traced"] = True
        if not failed:
            event["out"] = {"tree": tree, "paths": paths, "leaves": [values._abstract_leaf(x) for x in out_leaves]}
        shadow = getattr(_state, "mode", None) == "shadow"
        if not shadow:
            event["values"] = "not recorded: traced outside a jitted function of the team's (jax.grad or lax.scan in eager code)"
        seq = _writer.emit(event)
        if shadow and not failed and (in_leaves or arrays):
            jax.debug.callback(functools.partial(_values_callback, seq, len(in_leaves)), *in_leaves, *arrays)
        return
    event["in"] = [values.leaf_value(x) for x in in_leaves]
    if not failed:
        event["out"] = {"tree": tree, "paths": paths, "leaves": [values.leaf_value(x) for x in out_leaves]}
    _writer.emit(event)


def _call(api: str, kind: str, fn, args: tuple, kwargs: dict, frame, record_args: tuple | None = None):
    """Call ``fn``; record it when ``frame`` (the caller) is the team's."""
    site = _team_file(frame.f_code.co_filename) if frame is not None and _writer is not None else None
    if site is None or _depth() > 0:
        return _wrap_result(api, fn(*args, **kwargs))
    shown = args if record_args is None else record_args
    event: dict[str, Any] = {"api": api, "call": kind, "site": f"{site}:{frame.f_lineno}", "args": _signature(shown, kwargs)}
    _state.depth = _depth() + 1
    stack = getattr(_state, "warnings", None)
    if stack is None:
        stack = _state.warnings = []
    stack.append([])
    out, failed = None, False
    try:
        out = fn(*args, **kwargs)
    except BaseException as exc:
        failed = True
        event["exception"] = {"type": type(exc).__name__, "message": str(exc)[:1000]}
        raise
    finally:
        _state.depth -= 1
        event["warnings"] = stack.pop()
        try:
            _record(event, (shown, kwargs), out, failed)
        except Exception as exc:  # the recording itself failed: say so in the trace, never change the team's result
            event["record_error"] = f"{type(exc).__name__}: {exc}"[:500]
            event.pop("out", None)
            event.pop("in", None)
            _writer.emit(event)
    return _wrap_result(api, out)


def _wrap_function(fn, api: str, kind: str = "call"):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return _call(api, kind, fn, args, kwargs, sys._getframe(1))
    wrapper.__optax_gate_recorded__ = True
    return wrapper


def _wrap_result(api: str, out: Any) -> Any:
    """Wrap the init/update of a GradientTransformation, or a returned plain function."""
    if isinstance(out, tuple) and hasattr(out, "_fields") and {"init", "update"} <= set(out._fields):
        if getattr(out.update, "__optax_gate_recorded__", False):
            return out
        return out._replace(init=_wrap_function(out.init, api, "init"), update=_wrap_function(out.update, api, "update"))
    if isinstance(out, types.FunctionType) and not getattr(out, "__optax_gate_recorded__", False):
        return _wrap_function(out, api, "()")
    return out


def _wrap_method(cls: type, name: str, api: str) -> None:
    original = cls.__dict__.get(name)
    if not isinstance(original, types.FunctionType) or getattr(original, "__optax_gate_recorded__", False):
        return
    kind = "call" if name == "__init__" else name

    @functools.wraps(original)
    def method(self, *args, **kwargs):
        return _call(api, kind, original, (self, *args), kwargs, sys._getframe(1), record_args=args)
    method.__optax_gate_recorded__ = True
    setattr(cls, name, method)


def _public_modules(package: types.ModuleType) -> list[types.ModuleType]:
    """``package`` and its public submodules already imported, ``package`` first."""
    name = package.__name__
    subs = sorted((m for n, m in list(sys.modules.items())
                   if m is not None and n.startswith(name + ".") and not any(p.startswith("_") for p in n.split("."))),
                  key=lambda m: m.__name__)
    return [package, *subs]


def patch_optax(optax: types.ModuleType) -> int:
    """Wrap the public callables of ``optax`` and its public submodules; return how many."""
    wrappers: dict[int, Any] = {}
    for module in _public_modules(optax):
        for name, obj in list(vars(module).items()):
            if name.startswith("_") or isinstance(obj, types.ModuleType):
                continue
            if getattr(obj, "__module__", "") is None or not str(getattr(obj, "__module__", "")).startswith("optax"):
                continue
            if inspect.isclass(obj):
                if not issubclass(obj, tuple) and callable(getattr(obj, "init", None)) and callable(getattr(obj, "update", None)):
                    for meth in _METHODS:
                        _wrap_method(obj, meth, f"{module.__name__}.{name}")
                continue
            if not callable(obj) or getattr(obj, "__optax_gate_recorded__", False):
                continue
            if id(obj) not in wrappers:
                wrappers[id(obj)] = _wrap_function(obj, f"{module.__name__}.{name}")
            setattr(module, name, wrappers[id(obj)])
    return len(wrappers)


def patch_nnx(nnx: types.ModuleType) -> None:
    """Wrap ``flax.nnx.Optimizer.update``: its recorded result is the optimizer's state after the update."""
    cls = getattr(nnx, "Optimizer", None)
    original = cls.__dict__.get("update") if cls is not None else None
    if not isinstance(original, types.FunctionType):
        return

    def observed(self, *args, **kwargs):
        original(self, *args, **kwargs)
        return nnx.state(self)

    @functools.wraps(original)
    def update(self, *args, **kwargs):
        _call("flax.nnx.Optimizer", "update", functools.partial(observed, self), args, kwargs, sys._getframe(1))
    update.__optax_gate_recorded__ = True
    cls.update = update


class _Recorded:
    """A function the team jitted (``jax.jit`` called from its files). A call
    from eager code runs a *shadow* first: the same function jitted again
    without buffer donation, whose Optax calls insert host callbacks
    (``jax.debug.callback``) that record their values; its results are
    dropped, and an exception it raises is left to the real call. Then the
    real program runs, compiled exactly as without the recorder (the wrappers
    of Optax pass through while it is traced), and its results are recorded
    at the call site (``api`` ``jax.jit(<name>)``) and returned untouched.
    Host callbacks change how XLA fuses a program, and with it the last bits
    of some results (seen: a float32 loss 1 ULP apart), so they never enter
    the team's own program: the shadow is traced and compiled under a JAX
    user context of its own (``jax.make_user_context``: JAX's tracing and
    compilation caches key on it), so no traced jaxpr of the shadow (its own,
    a ``lax.scan`` body's, an inner jit's) is reused by the real program
    (seen: without it the real program reused the shadow's jaxpr). A call with tracers (inside another
    transformation) runs the real function only."""

    def __init__(self, real, shadow, name: str) -> None:
        self._real, self._shadow, self._name = real, shadow, name
        functools.update_wrapper(self, real)

    def __getattr__(self, name):
        return getattr(self._real, name)

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        from optax_gate.recorder import values
        frame = sys._getframe(1)
        site = _team_file(frame.f_code.co_filename)
        if (site is None or _depth() > 0 or getattr(_state, "mode", None)
                or values.is_traced(values.flatten((args, kwargs))[0])):
            return self._real(*args, **kwargs)
        import jax
        if _shadow_context[0] is None:  # a JAX without user contexts: the values at the call site only
            return _call(f"jax.jit({self._name})", "call", self._real, args, kwargs, frame)
        _state.mode = "shadow"
        try:
            with _shadow_context[0]("optax-gate-shadow"):
                jax.block_until_ready(self._shadow(*args, **kwargs))
            jax.effects_barrier()
        except Exception:  # the real call raises it for the team
            pass
        finally:
            _state.mode = None
        # the real program: traced inside a recorded call (depth 1), so Optax's wrappers add nothing to it
        return _call(f"jax.jit({self._name})", "call", self._real, args, kwargs, frame)


_shadow_context: list[Any] = [None]


def patch_jax(jax_module: types.ModuleType) -> None:
    """Wrap ``jax.jit``: a function jitted from the team's files becomes a :class:`_Recorded`."""
    real_jit = jax_module.jit
    if getattr(real_jit, "__optax_gate_recorded__", False):
        return
    make = getattr(jax_module, "make_user_context", None)
    _shadow_context[0] = make(default_value=None) if make is not None else None

    @functools.wraps(real_jit)
    def jit(fun=None, *args, **kwargs):
        if fun is None:
            return functools.partial(jit, *args, **kwargs)
        real = real_jit(fun, *args, **kwargs)
        if _team_file(sys._getframe(1).f_code.co_filename) is None:
            return real
        shadow = real_jit(fun, *args, **{k: v for k, v in kwargs.items() if k not in ("donate_argnums", "donate_argnames")})
        return _Recorded(real, shadow, getattr(fun, "__name__", "function"))
    jit.__optax_gate_recorded__ = True
    jax_module.jit = jit


_PATCHES = {"optax": patch_optax, "flax.nnx": patch_nnx, "jax": patch_jax}


class _Finder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: lets the other finders find a target module and
    wraps its loader's ``exec_module`` so that the module is patched once executed."""

    def __init__(self) -> None:
        self.busy: set[str] = set()

    def find_spec(self, name, path, target=None):
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

        def exec_module(module):
            original(module)
            _PATCHES[name](module)
        loader.exec_module = exec_module
        return spec


def install(folder: str | None = None, root: str | None = None) -> None:
    """Switch the recorder on for this process (once): traces go to
    ``folder`` (default ``$OPTAX_GATE_TRACE``), calls from files under ``root``
    (default ``$OPTAX_GATE_TEAM_ROOT``, else the working folder) are recorded.
    A target module already imported is patched at once."""
    global _writer, _root
    if _installed[0]:
        return
    _installed[0] = True
    _writer = _Writer(folder or os.environ[TRACE_ENV])
    _root = os.path.realpath(root or os.environ.get(ROOT_ENV) or os.getcwd())
    warnings.warn = _warn
    sys.meta_path.insert(0, _Finder())
    for name, patch in _PATCHES.items():
        if name in sys.modules:
            patch(sys.modules[name])
