"""Mutants of every transformation under explicit sharding
(``tests/contracts/multidevice/test_surface_sharded.py``): the state moved to
one device by ``init``, the updates gathered (replicated over the mesh), the
updates perturbed only where the params are sharded (one device gives the
same step unchanged), and the inputs gathered before the step (a
``ShardingTypeError`` resharded away). Each replaces every contracted factory of the
surface table through ``surface_transformations.every_transformation`` and returns {}.
"""

from __future__ import annotations

from typing import Any

from optax_gate.mutants.families.surface_transformations import every_transformation
from optax_gate.mutants.patches import with_update
from optax_gate.mutants.registry import family

mutant = family("surface_sharded", "tests/contracts/multidevice/test_surface_sharded.py")


def _sharded(tree: Any) -> bool:
    import jax
    from jax.sharding import NamedSharding

    return any(
        isinstance(getattr(x, "sharding", None), NamedSharding) and len(x.sharding.device_set) > 1
        for x in jax.tree.leaves(tree)
    )


@mutant(
    "surface-sharded-init-one-device",
    "init puts every state leaf on device 0 (eagerly; a jitted init's placement is the compiler's)",
)
def init_one_device(optax: Any) -> Any:
    import jax

    def wrap(tx: Any) -> Any:
        def init(params: Any) -> Any:
            state = tx.init(params)
            return (
                state
                if any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(state))
                else jax.device_put(state, jax.devices()[0])
            )

        return with_update(optax, tx, lambda u, extra: u, init=init)

    return every_transformation(wrap)


@mutant(
    "surface-sharded-updates-gathered",
    "every update leaf is resharded to replicated (P()): the step gathers the updates onto every device",
)
def updates_gathered(optax: Any) -> Any:
    import jax
    from jax.sharding import PartitionSpec

    def gather(u: Any, extra: Any) -> Any:
        return jax.tree.map(lambda x: jax.sharding.reshard(x, PartitionSpec()) if _sharded(x) else x, u)

    return every_transformation(lambda tx: with_update(optax, tx, gather))


@mutant(
    "surface-sharded-values-moved",
    "the updates are scaled by 1.001 where the params are sharded over devices (the same step on one device "
    "is unchanged)",
)
def values_moved(optax: Any) -> Any:
    import jax

    def scale(u: Any, extra: Any) -> Any:
        return jax.tree.map(lambda x: x * 1.001 if _sharded(x) else x, u)

    return every_transformation(lambda tx: with_update(optax, tx, scale))


@mutant(
    "surface-sharded-inputs-gathered",
    "every transformation gathers its params, gradients and extra arguments "
    "onto every device (P()) before init and update: what resharding away a ShardingTypeError does; no error, "
    "replicated updates",
)
def inputs_gathered(optax: Any) -> Any:
    import jax
    from jax.sharding import PartitionSpec

    def gather(tree: Any) -> Any:
        return jax.tree.map(lambda x: jax.sharding.reshard(x, PartitionSpec()) if _sharded(x) else x, tree)

    def wrap(tx: Any) -> Any:
        def update(updates: Any, state: Any, params: Any = None, **extra: Any) -> Any:
            extra = {k: v if callable(v) else gather(v) for k, v in extra.items()}
            return tx.update(gather(updates), state, gather(params), **extra)

        return optax.GradientTransformationExtraArgs(lambda params: tx.init(gather(params)), update)

    return every_transformation(wrap)
