"""The recorder's wrappers of Optax's public callables (inside the environment under test): one JSON event per call from
the team's files, with the values of its array inputs and of its result."""

from __future__ import annotations

import functools
import inspect
import sys
import types
from typing import Any

from optax_gate.recorder import isolate, perturb, process

#: Classes with init/update: methods wrapped on the class itself.
_METHODS = ("__init__", "init", "update", "gradient_transformation")


def _signature(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    from optax_gate.recorder import values

    return {
        "positional": [values.signature(a) for a in args],
        "keyword": {k: values.signature(v) for k, v in kwargs.items()},
    }


def _values_callback(seq: int, n_in: int, *leaves: Any, device: Any = None) -> None:
    from optax_gate.recorder import values

    if process.writer is not None and not process.replaying[0]:
        stored = [values.leaf_value(x) for x in leaves]
        process.writer.emit(
            {
                "of": seq,
                "in": stored[:n_in],
                "out": stored[n_in:],
                **({"device": int(device)} if device is not None else {}),
            }
        )


def _device_index() -> Any:
    """Inside ``shard_map`` or ``pmap`` (named axes in JAX's axis environment):
    the traced index of the device running this copy of the program, so that
    each device's host callback can be told apart (they arrive in any order);
    None elsewhere. Private JAX names, looked up with a fallback."""
    try:
        from jax._src import core as jax_core

        names = tuple(jax_core.get_axis_env().axis_names())
        if not names:
            return None
        import jax

        return jax.lax.axis_index(names if len(names) > 1 else names[0])
    except Exception:
        return None


def _record(
    event: dict[str, Any], in_leaves: list[Any], out: Any, failed: bool, stored_in: list[dict[str, Any]] | None = None
) -> None:
    """Write ``event`` with the values of the call's array inputs (``in``:
    their leaves in the order of ``(args, kwargs)``, taken before the call: an
    ``nnx`` module's variables change in place) and of its result
    (``out``: PyTree structure, leaf paths, leaves). Traced (tracers among
    them): abstract leaves now; in a shadow run (``optax_gate.recorder.transforms``) the
    values through a host callback each time the program runs, elsewhere
    (a transformation the recorder does not wrap) none (``values``: why)."""
    from optax_gate.recorder import values

    out_leaves, tree, paths = ([], "", []) if failed else values.flatten(out)
    if values.is_traced(in_leaves) or values.is_traced(out_leaves):
        import jax

        arrays = [x for x in out_leaves if values.is_array(x)]
        event["traced"] = True
        if not failed:
            event["out"] = {"tree": tree, "paths": paths, "leaves": [values.abstract_leaf(x) for x in out_leaves]}
        shadow = getattr(process.thread, "mode", None) == "shadow"
        if not shadow:
            event["values"] = (
                "not recorded: traced inside a transformation the recorder does not wrap (jax.checkpoint in eager code)"
            )
        seq = process.emit(event)
        if shadow and not failed and (in_leaves or arrays):
            device = _device_index()
            if device is None:
                jax.debug.callback(functools.partial(_values_callback, seq, len(in_leaves)), *in_leaves, *arrays)
            else:  # one callback per device: each says which it is
                jax.debug.callback(
                    lambda d, *leaves: _values_callback(seq, len(in_leaves), *leaves, device=d),
                    device,
                    *in_leaves,
                    *arrays,
                )
        return
    event["in"] = stored_in if stored_in is not None else [values.leaf_value(x) for x in in_leaves]
    if not failed:
        event["out"] = {"tree": tree, "paths": paths, "leaves": [values.leaf_value(x) for x in out_leaves]}
    process.emit(event)


def call(
    api: str,
    kind: str,
    fn: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    frame: Any,
    record_args: tuple[Any, ...] | None = None,
    observed: Any = None,
    extra: dict[str, Any] | None = None,
) -> Any:
    """Call ``fn``; record it when ``frame`` (the caller) is the team's
    (``observed(result)`` in place of its result, when given; ``extra``
    fields added to its event)."""
    site = process.team_file(frame.f_code.co_filename) if frame is not None and process.writer is not None else None
    if site is None and frame is not None and process.writer is not None and process.depth() == 0:
        frame, through = _through_library(frame)  # a library that calls Optax for the team (TrainState.apply_gradients)
        if frame is not None:
            site = process.team_file(frame.f_code.co_filename)
            extra = {**(extra or {}), "through": through}
    if site is None or process.depth() > 0:
        if (
            process.depth() == 1 and isolate.within[0] is not None and api.startswith("optax")
        ):  # tx.update inside nnx.Optimizer
            return _wrap_result(api, _within_library(api, kind, fn, args, kwargs))
        return _wrap_result(api, fn(*args, **kwargs))
    if perturb.eager(api, kind):  # in an ensemble member, its array arguments moved 1 ULP at its first call
        args, kwargs = perturb.once(f"{api}.{kind}@{site}:{frame.f_lineno}", args, kwargs)
        if record_args is not None:
            record_args = args[len(args) - len(record_args) :]
    shown = args if record_args is None else record_args
    event: dict[str, Any] = {
        "api": api,
        "call": kind,
        "site": f"{site}:{frame.f_lineno}",
        "args": _signature(shown, kwargs),
        **(extra or {}),
    }
    process.thread.depth = process.depth() + 1
    stack = getattr(process.thread, "warnings", None)
    if stack is None:
        stack = process.thread.warnings = []
    stack.append([])
    out, failed = None, False
    from optax_gate.recorder import values

    in_leaves = [x for x in values.flatten((shown, kwargs))[0] if values.is_array(x)]
    stored_in = None
    traced = values.is_traced(in_leaves)
    if not traced:  # stored before the call: a jitted step may donate (delete) its input buffers
        try:
            stored_in = [values.leaf_value(x) for x in in_leaves]
        except Exception:
            stored_in = None
    noted = None
    if api.startswith(
        "optax"
    ):  # run alone on the baseline's inputs: in the first shadow of a step, or at its first eager call here
        noted, failed_note = isolate.begin(api, kind, event["site"], fn, args, kwargs, traced, event.get("through", ""))
        if failed_note:
            event["isolate_error"] = failed_note
    outer = isolate.within[0]
    if api == "flax.nnx.Optimizer" and isolate.enabled():  # the tx.init / tx.update Flax calls inside: run alone too
        isolate.within[0] = (event["site"], f"flax.nnx.Optimizer.{'__init__' if kind == 'call' else kind}")
    try:
        out = fn(*args, **kwargs)
    except BaseException as exc:
        failed = True
        event["exception"] = {"type": type(exc).__name__, "message": str(exc)[:1000]}
        raise
    finally:
        isolate.within[0] = outer
        process.thread.depth -= 1
        event["warnings"] = stack.pop()
        try:
            _record(event, in_leaves, out if observed is None or failed else observed(out), failed, stored_in)
        except Exception as exc:  # the recording itself failed: say so in the trace, never change the team's result
            event["record_error"] = f"{type(exc).__name__}: {exc}"[:500]
            event.pop("out", None)
            event.pop("in", None)
            process.emit(event)
    isolate.finish(noted, traced)
    return _wrap_result(api, out)


def _within_library(api: str, kind: str, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``fn(*args, **kwargs)``, an Optax call a recorded library call makes (``tx.update`` inside
    ``nnx.Optimizer.update``, on pure arrays), noted to run alone on the baseline's inputs at the team's line
    (``isolate.within``) as the team's own calls are; not recorded."""
    import jax

    from optax_gate.recorder import values

    site, through = isolate.within[0] or ("", "")
    traced = values.is_traced([x for x in jax.tree_util.tree_leaves((args, kwargs)) if values.is_array(x)])
    noted, _ = isolate.begin(api, kind, site, fn, args, kwargs, traced, through)
    process.thread.depth = process.depth() + 1  # the Optax calls inside it are Optax's own: neither recorded nor noted
    try:
        out = fn(*args, **kwargs)
    finally:
        process.thread.depth -= 1
    isolate.finish(noted, traced)
    return out


#: Library frames walked through between an Optax call and the team's line (a library calling Optax for the team).
THROUGH_FRAMES = 8
#: Packages whose frames are never walked through: Optax calling itself is not the team's call, and JAX's own
#: transformations between the team's function and an Optax call are the recorder's transforms' to see.
_NOT_THROUGH = ("optax", "jax", "jaxlib", "optax_gate")


def _through_library(frame: Any) -> tuple[Any, str]:
    """``(the team's frame, "module.function" of the library frame just below it)`` when ``frame`` is a library's
    (``flax.training.train_state``, any package but :data:`_NOT_THROUGH`) called, within :data:`THROUGH_FRAMES`
    library frames, from the team's files; ``(None, "")`` otherwise."""
    below = None
    for _ in range(THROUGH_FRAMES):
        if frame is None:
            return None, ""
        if process.team_file(frame.f_code.co_filename) is not None:
            if below is None:
                return None, ""
            return (
                frame,
                f"{below.f_globals.get('__name__', '?')}.{getattr(below.f_code, 'co_qualname', below.f_code.co_name)}",
            )
        package = str(frame.f_globals.get("__name__", "")).split(".", 1)[0]
        if package in _NOT_THROUGH or package in ("", "__main__") or frame.f_code.co_filename.startswith("<"):
            return None, ""
        below, frame = frame, frame.f_back
    return None, ""


def _wrap_function(fn: Any, api: str, kind: str = "call") -> Any:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return call(api, kind, fn, args, kwargs, sys._getframe(1))

    process.mark(wrapper)
    named: Any = wrapper  # the API it records, read back by nnx.Optimizer's ``via``
    named.__optax_gate_api__ = api
    return named


def _wrap_result(api: str, out: Any) -> Any:
    """Wrap the init/update of a GradientTransformation, or a returned plain function."""
    if isinstance(out, tuple) and hasattr(out, "_fields") and {"init", "update"} <= set(out._fields):
        transformation: Any = out  # a GradientTransformation (a NamedTuple)
        if process.is_recorded(transformation.update):
            return out
        return transformation._replace(
            init=_wrap_function(transformation.init, api, "init"),
            update=_wrap_function(transformation.update, api, "update"),
        )
    if isinstance(out, types.FunctionType) and not process.is_recorded(out):
        return _wrap_function(out, api, "()")
    return out


def _wrap_method(cls: type, name: str, api: str) -> None:
    original = cls.__dict__.get(name)
    if not isinstance(original, types.FunctionType) or process.is_recorded(original):
        return
    kind = "call" if name == "__init__" else name

    @functools.wraps(original)
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return call(api, kind, original, (self, *args), kwargs, sys._getframe(1), record_args=args)

    process.mark(method)
    named: Any = method
    named.__optax_gate_api__ = api  # an instance's bound method reads it too: nnx.Optimizer's ``via``
    setattr(cls, name, method)


def _public_modules(package: types.ModuleType) -> list[types.ModuleType]:
    """``package`` and its public submodules already imported, ``package`` first."""
    name = package.__name__
    subs = sorted(
        (
            m
            for n, m in list(sys.modules.items())
            if m is not None and n.startswith(name + ".") and not any(p.startswith("_") for p in n.split("."))
        ),
        key=lambda m: m.__name__,
    )
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
                if (
                    not issubclass(obj, tuple)
                    and callable(getattr(obj, "init", None))
                    and callable(getattr(obj, "update", None))
                ):
                    for meth in _METHODS:
                        _wrap_method(obj, meth, f"{module.__name__}.{name}")
                continue
            if not callable(obj) or process.is_recorded(obj):
                continue
            if id(obj) not in wrappers:
                wrappers[id(obj)] = _wrap_function(obj, f"{module.__name__}.{name}")
            setattr(module, name, wrappers[id(obj)])
    return len(wrappers)
