"""Evict from JAX's caches every trace of a function JAX did not define, keeping JAX's own compiled primitives.

The reach recorder (``reach``) calls :func:`evict_foreign` between two APIs of one contract module, so that no
API's tests take a trace an earlier API's tests made: a cached trace skips the Optax code it ran, and that
code would be missing from the later API's record. Clearing every JAX cache (``jax.clear_caches``) does the
same at three times the cost of the run, because every eager primitive is compiled again; this keeps the
entries keyed by JAX's own functions and by jaxprs and modules (data made from a trace, reached only through a
trace of the same function), and evicts the rest.

It reads JAX internals (``jax._src.util`` caches, ``jax._src.pjit``'s C++ caches), so it is used only with the
JAX versions it was checked against (:data:`CHECKED_JAX`: per-API records equal to those made with every cache
cleared, over every contract module); with any other JAX the recorder keeps one record per module.
"""

from __future__ import annotations

import functools
import os
import weakref
from typing import Any

#: JAX versions whose caches this evicts completely: with each, the per-API records of the whole contract suite
#: hold everything those made with ``jax.clear_caches()`` at every switch hold (docs/caches-and-devices.md;
#: ``tests/meta/gate/test_reach_plugin.py`` keeps the rule on a jitted Optax function two APIs share).
CHECKED_JAX = ("0.11.2", "0.12.0.1")


def supported() -> str:
    """ "" when :func:`evict_foreign` can run in this process, else why not (a JAX version not checked, or
    the internals it reads are missing)."""
    import jax

    if jax.__version__ not in CHECKED_JAX:
        return f"jax {jax.__version__} is not among the versions whose caches were checked ({', '.join(CHECKED_JAX)})"
    try:
        _internals()
    except (ImportError, AttributeError) as exc:
        return f"jax {jax.__version__}'s caches are not where they were checked ({exc})"
    return ""


def _internals() -> tuple[Any, Any, Any]:
    from jax._src import pjit, util
    from jax._src.lib import _jax

    for name in ("_cpp_pjit_cache_fun_only", "_cpp_pjit_cache_explicit_attributes"):
        getattr(pjit, name).clear  # noqa: B018 (the attribute must exist)
    _jax.PjitFunctionCache.clear_all  # noqa: B018
    return util, pjit, _jax


@functools.cache
def _jax_folders() -> tuple[str, ...]:
    import jax
    import jaxlib

    return tuple(os.path.dirname(os.path.realpath(str(m.__file__))) + os.sep for m in (jax, jaxlib))


@functools.cache
def _jax_file(filename: str) -> bool:
    return os.path.realpath(filename).startswith(_jax_folders())


def _defined_by_jax(obj: Any) -> bool:
    """Whether ``obj`` is a function (or partial, or bound method) whose code is JAX's, or a jaxpr or module."""
    if isinstance(obj, functools.partial):
        return _defined_by_jax(obj.func) and all(_defined_by_jax(a) for a in obj.args if callable(a))
    wrapped = getattr(obj, "__wrapped__", None)  # a jitted or decorated function: whose its code is
    if wrapped is not None and wrapped is not obj:
        return _defined_by_jax(wrapped)
    function = getattr(obj, "__func__", obj)
    code = getattr(function, "__code__", None)
    if code is not None:
        return _jax_file(code.co_filename)
    if callable(obj):  # a C++ function, a callable object: whose it is cannot be told from its code
        return (getattr(type(obj), "__module__", "") or "").startswith(("jax.", "jaxlib."))
    return (type(obj).__module__ or "").startswith(("jax.", "jaxlib.")) and type(obj).__name__ in DATA


def _foreign_inside(key: Any) -> bool:
    """Whether a cache key ``(context, args, kwargs)`` holds a function JAX did not define as an argument, a
    keyword argument's value, or an element of a tuple or list among them (the trace context is config values).

    Deeper values are avals, shardings and a primitive's parameters: a function held there (a custom
    derivative's rule) came with a jaxpr traced in this API, so the key is new to it."""
    parts = key[1:] if isinstance(key, tuple) and len(key) == 3 else (key,)
    for part in parts:
        values = part.values() if isinstance(part, dict) else part if isinstance(part, (tuple, list)) else (part,)
        for value in values:
            inner = value.values() if isinstance(value, dict) else value if isinstance(value, (tuple, list)) else ()
            for item in (value, *inner):
                if _foreign_function(item):
                    return True
    return False


def _foreign_function(value: Any) -> bool:
    if isinstance(value, (str, bytes, int, float, bool, type(None), type)):
        return False
    if type(value).__name__ == "WrappedFun":
        return not _defined_by_jax(getattr(value, "f", None))
    return callable(value) and not _defined_by_jax(value)


#: JAX types a cache may key on that hold a finished trace (no code runs to make them on a hit).
DATA = frozenset({"Jaxpr", "ClosedJaxpr", "Module"})


#: per cache: its misses when last read. A cache whose misses did not move since has no new key, so it is not
#: read again.
_READ: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()


def _misses(cache: Any) -> int | None:
    try:
        return int(cache.cache_info().misses)
    except (AttributeError, TypeError, ValueError):
        return None


def evict_foreign() -> int:
    """Evict every cached trace keyed by an object :func:`_defined_by_jax` does not accept; the number evicted.

    Weak-reference caches lose those entries; a cache keyed by values is cleared whole when a foreign
    function is among one of its keys' arguments (:func:`_foreign_inside`); caches that cannot be read entry by entry
    (``lu.cache``, a cache keyed by several weak references) are cleared whole; the C++ dispatch caches of
    ``jax.jit`` are cleared (they refill from the Python caches kept, without tracing or compiling again).
    A cache is read again only when it missed since it was last read (a miss is the only way a key enters).

    Raises:
      AttributeError, ImportError: :func:`supported` would have said so.
    """
    util, pjit, _jax = _internals()
    evicted = 0
    for cache in list(util._caches.keys()):
        kind = type(cache).__name__
        misses = _misses(cache)
        last = _READ.get(cache)
        if misses is not None and last == misses:
            continue
        if kind == "StrongLRUCache":  # keyed by values, now and then by a function among the arguments
            if any(_foreign_inside(key) for key in cache.cache_keys()):
                cache.cache_clear()
                evicted += 1
        elif kind == "WeakrefLRUCache":
            for key in cache.cache_keys():
                ref = key[0] if isinstance(key, tuple) and key else key
                obj = ref() if isinstance(ref, weakref.ref) else ref
                if obj is None or _defined_by_jax(obj):
                    continue
                cache.evict_weakref(obj)
                evicted += 1
        else:
            cache.cache_clear()
            evicted += 1
        if misses is not None:
            _READ[cache] = _misses(cache) or 0
    pjit._cpp_pjit_cache_fun_only.clear()
    pjit._cpp_pjit_cache_explicit_attributes.clear()
    _jax.PjitFunctionCache.clear_all()
    return evicted
