"""A seeded 1-ULP perturbation of the team's floating-point state at the start of its run (inside the environment
under test): one member of the ensemble that measures the run's own rounding noise.

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import os
import zlib
from typing import Any

#: Environment variable holding the seed of this run's perturbation; unset: nothing is perturbed.
PERTURB_ENV = "OPTAX_GATE_PERTURB"
#: Eager Optax calls whose first call from a site is perturbed (a run with no transformed step: its params).
EAGER = ("apply_updates", "incremental_update", "flax.nnx.Optimizer.update")

_done: set[str] = set()
_UNSIGNED = {2: "uint16", 4: "uint32", 8: "uint64"}


def seed() -> int | None:
    """This run's seed, or None when no perturbation is asked for."""
    value = os.environ.get(PERTURB_ENV, "").strip()
    return int(value) if value.lstrip("-").isdigit() else None


def first(key: str) -> bool:
    """Whether ``key`` (a transformed function, or an eager API at a site) is met for the first time in a perturbed
    run."""
    if seed() is None or key in _done:
        return False
    _done.add(key)
    return True


def once(key: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``(args, kwargs)`` perturbed (:func:`arguments`) when ``key`` (a transformed function, or an eager API at a
    site) is met for the first time in a perturbed run; as they are otherwise."""
    return arguments(args, kwargs, key) if first(key) else (args, kwargs)


def eager(api: str, kind: str) -> bool:
    """Whether an eager Optax call (``api``, ``kind`` as the recorder names them) is one of :data:`EAGER`."""
    return api.rsplit(".", 1)[-1] in EAGER or f"{api}.{kind}" in EAGER


def leaf(x: Any, rng: Any) -> Any:
    """``x`` with each non-zero finite element one ULP up or down (``rng``'s signs); ``x`` itself when not a float
    array."""
    import numpy as np

    dtype = getattr(x, "dtype", None)
    if dtype is None or not hasattr(x, "shape") or "key<" in str(dtype):
        return x
    try:
        import jax.numpy as jnp

        floating = jnp.issubdtype(dtype, jnp.floating)
    except Exception:
        floating = np.issubdtype(dtype, np.floating)
    if not floating or np.dtype(dtype).itemsize not in _UNSIGNED:
        return x
    host = np.array(x)
    bits = host.view(_UNSIGNED[host.dtype.itemsize])
    finite = np.isfinite(host.astype(np.float64)) & (host.astype(np.float64) != 0)
    step = np.where(rng.integers(0, 2, size=host.shape) == 1, 1, -1).astype(np.int64)
    moved = np.where(finite, (bits.astype(np.int64) + step).astype(bits.dtype), bits).view(host.dtype)
    if isinstance(x, (np.ndarray, np.generic)):
        return moved.reshape(host.shape)
    import jax

    sharding = getattr(x, "sharding", None)
    return jax.device_put(moved, sharding) if sharding is not None else jax.numpy.asarray(moved)


def arguments(args: tuple[Any, ...], kwargs: dict[str, Any], key: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``(args, kwargs)`` with their float leaves perturbed (:func:`leaf`, seeded by the run's seed and ``key``) and the
    ``flax.nnx`` graph nodes among them perturbed in place; as they are when this run perturbs nothing."""
    import jax
    import numpy as np

    given = seed()
    if given is None:
        return args, kwargs
    rng = np.random.default_rng([given, zlib.crc32(key.encode())])
    from optax_gate.recorder import values

    nodes = values.graph_nodes(args, kwargs)
    if nodes:
        from flax import nnx

        for node in nodes:
            nnx.update(node, jax.tree_util.tree_map(lambda x: leaf(x, rng), nnx.state(node)))
    kind = values.graph_node_type()

    def move(x: Any) -> Any:
        return x if kind is not None and isinstance(x, kind) else leaf(x, rng)

    is_node = (lambda x: isinstance(x, kind)) if kind is not None else None
    moved: tuple[tuple[Any, ...], dict[str, Any]] = jax.tree_util.tree_map(move, (args, kwargs), is_leaf=is_node)
    return moved
