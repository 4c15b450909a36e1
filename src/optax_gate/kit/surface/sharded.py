"""Every transformation of the surface table on params sharded over an explicit mesh, its state created eagerly
and under ``jax.jit`` (issue 40 item 2; needs the environment's optax and JAX, and eight devices, when
called).

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import collections
import functools
from typing import Any

#: The mesh: axis sizes and names (8 devices, ``optax_gate.kit.training.multidevice.DEVICES``).
MESH_SHAPE = (2, 4)
MESH_AXES = ("data", "model")
#: A sharded dimension's letter in a record: the initial of its mesh axis.
AXIS_LETTERS = {axis[0]: axis for axis in MESH_AXES}
#: Params leaf -> shape (named as ``surface_build.SHAPES``' leaves of those
#: ranks, so an entry's ``skip_leaves`` applies; each sharded dimension is a
#: multiple of its mesh axis).
SHAPES: dict[str, tuple[int, ...]] = {"r0": (), "r1": (4,), "r2": (8, 4)}
#: Params leaf -> its ``PartitionSpec``'s axes (``None``: unsharded dimension).
SPECS: dict[str, tuple[str | None, ...]] = {"r0": (), "r1": ("model",), "r2": ("data", "model")}
#: How ``init`` and ``update`` are called.
MODES = ("eager", "jit")


@functools.cache
def mesh() -> Any:
    """The explicit 2 x 4 mesh (see the module docstring).

    Raises:
      ValueError: fewer than eight devices (JAX's message).
    """
    import jax
    from jax.sharding import AxisType

    return jax.make_mesh(MESH_SHAPE, MESH_AXES, axis_types=(AxisType.Explicit,) * len(MESH_AXES))


def tree(seed: int, sharded: bool, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """The params (or, seed 1, the gradients) PyTree: on :func:`mesh` with
    :data:`SPECS` when ``sharded``, else on the default device."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import NamedSharding, PartitionSpec

    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in SHAPES.items():
        x = jnp.asarray(rng.uniform(-1.0, 1.0, size=shape), jnp.float32)
        if name in skip:
            continue
        out[name] = jax.device_put(x, NamedSharding(mesh(), PartitionSpec(*SPECS[name]))) if sharded else x
    return out


def describe(x: Any) -> str:
    """One array's sharding in a word (see the module docstring)."""
    from jax.sharding import NamedSharding

    sharding = getattr(x, "sharding", None)
    if isinstance(sharding, NamedSharding):
        dims = ["_" if a is None else a[0] if isinstance(a, str) else "+".join(x[0] for x in a) for a in sharding.spec]
        return "".join(dims) if any(d != "_" for d in dims) else "rep"
    if sharding is not None and len(sharding.device_set) == 1:
        return "1dev"
    return type(sharding).__name__ if sharding is not None else type(x).__name__


def _step(entry: Any, mode: str, sharded: bool) -> tuple[Any, Any]:
    import jax

    from optax_gate.kit.surface import probe as surface_probe

    skip = tuple(entry.skip_leaves)
    p, g = tree(0, sharded, skip), tree(1, sharded, skip)
    tx = surface_probe.build(entry)
    grads, extra = surface_probe.step_grads(entry, p, g), surface_probe.extra_args(entry, p)
    init = jax.jit(tx.init) if mode == "jit" else tx.init
    update = (
        (lambda u, s, q: tx.update(u, s, q, **extra))
        if mode == "eager"
        else jax.jit(lambda u, s, q: tx.update(u, s, q, **extra))
    )
    return update(grads, init(p), p)


def outcome(path: str, mode: str, errors: dict[str, str], key: str) -> str:
    """One step of ``path``'s transformation on the sharded params in ``mode``
    (see the module docstring for the line); the exception's message goes to
    ``errors[key]``. Never raises for the library's errors."""
    import jax

    from optax_gate.kit.corners.outcome import message
    from optax_gate.kit.surface import table as surface_table
    from optax_gate.kit.surface import wrapped as surface_wrapped

    entry = surface_table.TRANSFORMATIONS[path]
    try:
        with jax.set_mesh(mesh()):
            updates, state = _step(entry, mode, sharded=True)
            layout = ",".join(describe(updates[k]) for k in sorted(updates))
            counts = collections.Counter(describe(x) for x in jax.tree.leaves(state))
    except Exception as exc:  # the outcome is the exception's type
        errors[key] = message(exc)
        return f"raises {type(exc).__name__}"
    state_text = ",".join(f"{k}x{n}" for k, n in sorted(counts.items())) or "none"
    try:
        one, _ = _step(entry, mode, sharded=False)
        same = surface_wrapped.compare(one, updates)
    except Exception as exc:  # a step that runs only sharded: said, not compared
        same = f"1dev raises {type(exc).__name__}"
    return f"ok u {layout or 'none'} s {state_text} {same}"


def record(path: str) -> dict[str, str]:
    """``{"corner.sharded_<mode>": outcome, ...}`` for every mode of
    :data:`MODES` (and ``"corner.sharded_<mode>/error"`` for a message)."""
    out: dict[str, str] = {}
    for mode in MODES:
        errors: dict[str, str] = {}
        key = f"corner.sharded_{mode}"
        out.update(fit(key, outcome(path, mode, errors, f"{key}/error")))
        out.update(errors)
    return out


#: A snapshot line's budget: YAML folds a longer one, and a drift's text would end at the fold.
LINE = 79


def fit(key: str, line: str) -> dict[str, str]:
    """``{key: line}``, or, where ``key: line`` would pass :data:`LINE`
    characters, the comparison (the words after the state's counts) under
    ``<key>/one_device`` of its own."""
    if len(key) + 2 + len(line) <= LINE or not line.startswith("ok u "):
        return {key: line}
    head, _, compared = line.partition(" s ")
    counts, _, compared = compared.partition(" ")
    return {key: f"{head} s {counts}", f"{key}/one_device": compared}


def paths() -> list[str]:
    """The table entries recorded: every contracted transformation."""
    from optax_gate.kit.surface import table as surface_table

    return [p for p, e in surface_table.TRANSFORMATIONS.items() if not e.left_out]
