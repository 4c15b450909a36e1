"""Mutants of optimizer states under sharding: deliberately broken variants
that the contracts of ``tests/contracts/multidevice/test_sharded_state.py``
must catch (the state resharded or moved to one device, the updates gathered
onto every device, values perturbed, a state silently moved to the params'
devices)."""

from __future__ import annotations

from typing import Any

from optax_gate.mutants.patches import traced, tree_map, wrap_tx
from optax_gate.mutants.registry import family

mutant = family("sharding", "tests/contracts/multidevice/test_sharded_state.py")

#: The optax factories the contracts' set-ups are built from (masked decay and
#: clipping wrap ``optax.sgd`` in ``optax.chain``; MultiSteps wraps ``optax.sgd``).
FACTORIES = ("sgd", "adamw")


def _each_factory(optax: Any, wrap: Any) -> Any:
    """Replace each factory of ``FACTORIES`` by one whose transformation is ``wrap(tx)``."""

    def make(orig: Any) -> Any:
        return lambda *a, **k: wrap(orig(*a, **k))

    return {name: make(getattr(optax, name)) for name in FACTORIES}


def _mesh() -> Any:
    import jax
    import numpy as np

    return jax.sharding.Mesh(np.array(jax.devices()[:8]).reshape(2, 4), ("data", "model"))


@mutant("sharding-init-one-device", "init puts every state leaf on device 0")
def _(optax: Any) -> Any:
    import jax

    return _each_factory(optax, lambda tx: wrap_tx(tx, init=lambda p: jax.device_put(tx.init(p), jax.devices()[0])))


@mutant(
    "sharding-init-replicated", "init replicates every state leaf over the mesh instead of sharding it like its param"
)
def _(optax: Any) -> Any:
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    def init(tx: Any, p: Any) -> Any:
        return tree_map(lambda x: jax.device_put(x, NamedSharding(_mesh(), PartitionSpec())), tx.init(p))

    return _each_factory(optax, lambda tx: wrap_tx(tx, init=lambda p: init(tx, p)))


@mutant("sharding-update-gathers", "the update gathers its updates onto every device (a resharding collective)")
def _(optax: Any) -> Any:
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    def wrap(tx: Any) -> Any:
        def update(g: Any, s: Any, p: Any = None) -> Any:
            u, s = tx.update(g, s, p)
            return tree_map(
                lambda x: jax.lax.with_sharding_constraint(x, NamedSharding(_mesh(), PartitionSpec())), u
            ), s

        return wrap_tx(tx, update=update)

    return _each_factory(optax, wrap)


@mutant("sharding-values-perturbed", "updates scaled by 1.001")
def _(optax: Any) -> Any:
    def wrap(tx: Any) -> Any:
        def update(g: Any, s: Any, p: Any = None) -> Any:
            u, s = tx.update(g, s, p)
            return tree_map(lambda x: x * 1.001, u), s

        return wrap_tx(tx, update=update)

    return _each_factory(optax, wrap)


@mutant("sharding-state-follows-params", "eager update moves a state on other devices onto the gradients' devices")
def _(optax: Any) -> Any:
    import jax

    def wrap(tx: Any) -> Any:
        def update(g: Any, s: Any, p: Any = None) -> Any:
            if not traced(g):
                by_shape = {x.shape: x.sharding for x in jax.tree.leaves(g)}
                s = tree_map(lambda x: jax.device_put(x, by_shape[x.shape]) if x.shape in by_shape else x, s)
            return tx.update(g, s, p)

        return wrap_tx(tx, update=update)

    return _each_factory(optax, wrap)
