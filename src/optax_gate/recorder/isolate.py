"""Each Optax call of a step's first call, run alone on the baseline's own inputs (inside the environment under
test).

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from typing import Any

#: Folder the baseline's first run writes the calls' inputs into.
OUT_ENV = "OPTAX_GATE_ISOLATE_OUT"
#: Folder the calls' inputs are read from (both sides: the baseline's); unset: nothing is isolated.
IN_ENV = "OPTAX_GATE_ISOLATE_IN"
#: Most bytes of one call's inputs written (a larger call is not isolated).
MAX_BYTES = 64 * 2**20


@dataclasses.dataclass
class Noted:
    """One Optax call to run alone: its key (``<step>#<n>`` or ``<api>.<kind>@<site>``), what it is, the function the
    team's call ran, the flattened ``(args, kwargs)`` and where its array inputs (tracers or arrays) lie among them."""

    key: str
    event: dict[str, Any]
    fn: Any
    flat: list[Any]
    treedef: Any
    dynamic: list[int]


#: The step whose first shadow is under way (its key), the number of Optax calls noted in it, the calls noted.
active: list[str | None] = [None]
_counts: dict[str, int] = {}
pending: list[Noted] = []
#: The shadow's JAX user context (``optax_gate.recorder.transforms`` makes it): a call run alone is compiled in it.
context: list[Any] = [None]
#: ``(the team's line, the library call)`` while a recorded library call that calls Optax runs
#: (``nnx.Optimizer.update``).
within: list[tuple[str, str] | None] = [None]
_eager_seen: set[str] = set()


def enabled() -> bool:
    """Whether this run isolates Optax calls (``OPTAX_GATE_ISOLATE_IN`` is set)."""
    return bool(os.environ.get(IN_ENV))


def _stable_hash(key: str) -> str:
    import hashlib

    return hashlib.sha256(key.encode()).hexdigest()[:16]


def path(folder: str, key: str) -> str:
    """Where the inputs of the call ``key`` are kept in ``folder`` (one ``.npz`` and its ``.json`` of dtypes)."""
    return os.path.join(folder, _stable_hash(key))


def note(
    api: str, kind: str, site: str, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], traced: bool
) -> Noted | None:
    """Note a recorded Optax call to be run alone: a traced one inside the first shadow of a step (its inputs written
    by a host callback in the baseline), or the first eager one of ``api`` and ``kind`` at ``site``. None: not noted."""
    if not enabled():
        return None
    if traced:
        step = active[0]
        if step is None:
            return None
        _counts[step] = _counts.get(step, 0) + 1
        key = f"{step}#{_counts[step]}"
    else:
        key = f"{api}.{kind}@{site}"
        if key in _eager_seen:
            return None
        _eager_seen.add(key)
    import jax

    from optax_gate.recorder import values

    event = {"isolated": api, "call": kind, "site": site, "key": key}
    kind_node = values.graph_node_type()
    is_node = (lambda x: isinstance(x, kind_node)) if kind_node is not None else None
    flat, treedef = jax.tree_util.tree_flatten((args, kwargs), is_leaf=is_node)
    dynamic = [i for i, x in enumerate(flat) if values.is_array(x)]
    if not dynamic:  # nothing computed from arrays (an optimizer or a schedule built from Python numbers)
        return None
    why = ""
    if traced and _named_axes():
        why = "it runs per device inside shard_map or pmap (its collectives need the mesh)"
    elif kind_node is not None and any(isinstance(x, kind_node) for x in flat):
        why = "its arguments hold flax.nnx graph nodes (run in place, not alone)"
    elif any("key<" in str(getattr(flat[i], "dtype", "")) for i in dynamic):
        why = "its arguments hold PRNG keys"
    elif (
        sum(int(getattr(flat[i], "size", 0)) * getattr(getattr(flat[i], "dtype", None), "itemsize", 0) for i in dynamic)
        > MAX_BYTES
    ):
        why = f"its inputs exceed {MAX_BYTES // 2**20} MiB"
    if why:
        event["skipped"] = why
    noted = Noted(key, event, None if why else fn, flat, treedef, dynamic)
    out = os.environ.get(OUT_ENV)
    if out and not why:
        arrays = [flat[i] for i in dynamic]
        if traced:
            jax.debug.callback(functools.partial(save, out, key), *arrays)
        else:
            save(out, key, *arrays)
    if traced:
        pending.append(noted)
    return noted


def begin(
    api: str,
    kind: str,
    site: str,
    fn: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    traced: bool,
    through: str = "",
) -> tuple[Noted | None, str]:
    """:func:`note` for a recorded call about to run, where a call is noted: traced in a shadow, or eager outside one
    (``through``: the library call that made it, said with it). Returns ``(the call noted or None, why noting it
    failed or "")``; never raises (the team's call runs whatever happens here)."""
    from optax_gate.recorder import process

    if getattr(process.thread, "mode", None) != ("shadow" if traced else None):
        return None, ""
    try:
        noted = note(api, kind, site, fn, args, kwargs, traced)
    except Exception as exc:
        return None, f"{type(exc).__name__}: {exc}"[:300]
    if noted is not None and through:
        noted.event["through"] = through
    return noted, ""


def finish(noted: Noted | None, traced: bool) -> None:
    """After an eager call noted by :func:`begin` has run: run it alone (:func:`run`) and write its event. A traced
    call runs alone once its step's shadow has ended (:func:`run_pending`)."""
    from optax_gate.recorder import process

    if noted is None or traced:
        return
    event = run(noted)
    if event is not None and process.writer is not None:
        process.writer.emit(event)


def _named_axes() -> bool:
    """Whether the trace under way has named axes (inside ``shard_map`` or ``pmap``); private JAX names, looked up
    with a fallback (then: assumed, and the call is not run alone)."""
    try:
        from jax._src import core as jax_core

        return bool(tuple(jax_core.get_axis_env().axis_names()))
    except Exception:
        return True


def save(folder: str, key: str, *arrays: Any) -> None:
    """Write a call's array inputs in full (each as its bytes, its dtype and shape beside), once."""
    import numpy as np

    target = path(folder, key)
    if os.path.exists(target + ".json"):
        return  # a callback of a program run more than once (a scan body): its first inputs are the call's
    os.makedirs(folder, exist_ok=True)
    hosts = [np.asarray(a) for a in arrays]
    meta = {"dtypes": [str(h.dtype) for h in hosts], "shapes": [list(h.shape) for h in hosts]}
    raw = {
        f"a{i}": np.ascontiguousarray(h).reshape(-1).view(np.uint8) for i, h in enumerate(hosts)
    }  # any dtype, bfloat16 too
    np.savez(target + ".tmp.npz", **raw)
    os.replace(target + ".tmp.npz", target + ".npz")
    with open(target + ".json.tmp", "w", encoding="utf-8") as handle:
        json.dump(meta, handle)
    os.replace(target + ".json.tmp", target + ".json")


def load(folder: str, key: str) -> list[Any] | None:
    """The arrays saved under ``key`` in ``folder`` (their dtypes and shapes restored); None when they cannot be
    read."""
    import jax.numpy as jnp
    import numpy as np

    target = path(folder, key)
    try:
        with open(target + ".json", encoding="utf-8") as handle:
            meta = json.load(handle)
        with np.load(target + ".npz") as raw:
            return [
                raw[f"a{i}"].view(jnp.dtype(dtype)).reshape(shape)
                for i, (dtype, shape) in enumerate(zip(meta["dtypes"], meta["shapes"], strict=False))
            ]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def run(noted: Noted | None, shadow_context: Any = None) -> dict[str, Any] | None:
    """Run one noted call alone, jitted, on the baseline's inputs (:data:`IN_ENV`); the ``isolated`` event written
    (``out``: its result as the recorder stores a result; ``skipped``: why it did not run). None: nothing to write."""
    if noted is None:
        return None
    event = dict(noted.event)
    if noted.fn is not None:
        event.update(_alone(noted, shadow_context))
    return event


def _alone(noted: Noted, shadow_context: Any) -> dict[str, Any]:
    import contextlib

    import jax

    from optax_gate.recorder import process, values

    inputs = load(os.environ.get(IN_ENV, ""), noted.key)
    if inputs is None:
        return {"skipped": "the baseline wrote no inputs for it"}
    shapes = [
        (tuple(getattr(noted.flat[i], "shape", ())), str(getattr(noted.flat[i], "dtype", ""))) for i in noted.dynamic
    ]
    theirs = [(tuple(x.shape), str(x.dtype)) for x in inputs]
    if shapes != theirs:
        return {
            "skipped": f"its inputs are not the baseline's in dtype or shape ({len(theirs)} baseline arrays, "
            f"{len(shapes)} here)"
        }

    def alone(*arrays: Any) -> Any:
        flat = list(noted.flat)
        for i, x in zip(noted.dynamic, arrays, strict=False):
            flat[i] = x
        args, kwargs = jax.tree_util.tree_unflatten(noted.treedef, flat)
        return noted.fn(*args, **kwargs)

    if shadow_context is None:  # an eager call: compiled apart from the team's programs all the same
        shadow_context = context[0]
    process.thread.depth = process.depth() + 1  # its Optax calls are not recorded again
    try:
        with shadow_context("optax-gate-shadow") if shadow_context is not None else contextlib.nullcontext():
            result = jax.jit(alone)(*inputs)
            jax.block_until_ready(result)
        leaves, tree, paths = values.flatten(result)
        return {"out": {"tree": tree, "paths": paths, "leaves": [values.leaf_value(x) for x in leaves]}}
    except jax.errors.UnexpectedTracerError:
        return {"skipped": "it closes over values traced in the step (built inside it)"}
    except Exception as exc:
        if isinstance(exc, TypeError) and "not a valid JAX type" in str(exc):
            return {"skipped": "its result is not arrays (it builds a transformation or a schedule)"}
        return {"exception": {"type": type(exc).__name__, "message": str(exc)[:500]}}
    finally:
        process.thread.depth -= 1


def run_pending(shadow_context: Any = None) -> None:
    """Run alone each call noted in the step's first shadow (:func:`run`), and write their events."""
    from optax_gate.recorder import process

    noted, pending[:] = list(pending), []
    for one in noted:
        event = run(one, shadow_context)
        if event is not None and process.writer is not None:
            process.writer.emit(event)
