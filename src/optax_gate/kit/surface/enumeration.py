"""Enumerate the public callables of the configured surface (needs the environment's optax: it imports the
modules it lists).

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import typing
from typing import Any

#: Public sub-modules not enumerated, with the reason.
SKIPPED_MODULES = {"optax.optax_test": "Optax's own test helpers, not an API of the library"}

KINDS = ("transformation", "schedule", "loss", "tree", "other")


def modules() -> list[str]:
    """``optax`` and its public sub-modules (sorted), less :data:`SKIPPED_MODULES`."""
    import optax

    names = [f"optax.{m.name}" for m in pkgutil.iter_modules(optax.__path__) if not m.name.startswith("_")]
    return ["optax", *sorted(n for n in names if n not in SKIPPED_MODULES)]


def _is_callable_api(obj: Any) -> bool:
    if inspect.ismodule(obj) or inspect.isclass(obj) or not callable(obj):
        return False
    origin = getattr(obj, "__module__", "") or ""
    return origin not in ("typing", "collections.abc") and not isinstance(obj, typing.TypeVar)


def public_callables() -> dict[str, Any]:
    """``{"optax.adam": <function>, "optax.contrib.muon": ..., ...}``: every
    public callable of every enumerated module, by dotted path.

    Raises:
      ImportError: when a public sub-module does not import.
    """
    out: dict[str, Any] = {}
    for name in modules():
        module = importlib.import_module(name)
        for attr in sorted(a for a in dir(module) if not a.startswith("_")):
            obj = getattr(module, attr)
            if _is_callable_api(obj):
                out[f"{name}.{attr}"] = obj
    return out


def classify(path: str, obj: Any) -> str:
    """The kind (:data:`KINDS`) of one public callable, read off its return
    annotation and module; never raises."""
    ret = str(getattr(obj, "__annotations__", {}).get("return", ""))
    module = path.rpartition(".")[0]
    if "GradientTransformation" in ret and not ret.startswith("collections.abc.Callable"):
        return "transformation"
    if ret.startswith("collections.abc.Callable[[typing.Union[jax.Array"):
        return "schedule"
    if module == "optax.losses":
        return "loss"
    if module in ("optax.tree", "optax.tree_utils"):
        return "tree"
    return "other"
