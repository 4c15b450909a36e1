"""Mutants of every transformation under explicit sharding
(``tests/contracts/multidevice/test_surface_sharded.py``): the state moved to
one device by ``init``, the updates gathered (replicated over the mesh), and
the updates perturbed only where the params are sharded (one device gives
the same step unchanged). Each replaces every contracted factory of the
surface table (``surface_sharded.paths``) and returns {}.
"""

from __future__ import annotations

import functools

from optax_gate.mutants.patches import with_update
from optax_gate.mutants.registry import family
from optax_gate.mutants.surface_sweep import _replace

mutant = family("surface_sharded", "tests/contracts/multidevice/test_surface_sharded.py")


def _sharded(tree) -> bool:
    import jax
    from jax.sharding import NamedSharding

    return any(isinstance(getattr(x, "sharding", None), NamedSharding) and len(x.sharding.device_set) > 1
               for x in jax.tree.leaves(tree))


def _around(optax, wrap):
    """Every contracted factory returning ``wrap(tx)``."""
    from optax_gate.kit.surface_sharded import paths

    def make(orig, path):
        @functools.wraps(orig)
        def factory(*args, **kwargs):
            return wrap(orig(*args, **kwargs))
        return factory
    return _replace(paths(), make)


@mutant("surface-sharded-init-one-device", "init puts every state leaf on device 0 (eagerly; a jitted init's "
        "placement is the compiler's)")
def init_one_device(optax):
    import jax

    def wrap(tx):
        def init(params):
            state = tx.init(params)
            return state if any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(state)) else \
                jax.device_put(state, jax.devices()[0])
        return with_update(optax, tx, lambda u, extra: u, init=init)
    return _around(optax, wrap)


@mutant("surface-sharded-updates-gathered", "every update leaf is resharded to replicated (P()): the step gathers "
        "the updates onto every device")
def updates_gathered(optax):
    import jax
    from jax.sharding import PartitionSpec

    def gather(u, extra):
        return jax.tree.map(lambda x: jax.sharding.reshard(x, PartitionSpec()) if _sharded(x) else x, u)
    return _around(optax, lambda tx: with_update(optax, tx, gather))


@mutant("surface-sharded-values-moved", "the updates are scaled by 1.001 where the params are sharded over devices "
        "(the same step on one device is unchanged)")
def values_moved(optax):
    import jax

    def scale(u, extra):
        return jax.tree.map(lambda x: x * 1.001 if _sharded(x) else x, u)
    return _around(optax, lambda tx: with_update(optax, tx, scale))
