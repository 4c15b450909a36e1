"""Mutants of the example team contract ``test_scale.py``: each must be caught
by at least one of its contracts, and each contract must fail under one of
them (``./noxw -s mutants -- --area team-scale``)."""

from typing import Any

from optax_gate.mutants import family

mutant = family("team-scale", "tests/contracts/team/test_scale.py")


@mutant("team-scale-divides", "divides by the step size instead of multiplying")
def _(optax: Any) -> Any:
    orig = optax.scale
    return {"scale": lambda step_size: orig(1.0 / step_size)}


@mutant("team-scale-upcast", "returns float32 updates whatever the gradient's dtype")
def _(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    orig = optax.scale

    def scale(step_size: Any) -> Any:
        tx = orig(step_size)
        return optax.GradientTransformation(
            tx.init,
            lambda g, s, params=None: (jax.tree.map(lambda x: x.astype(jnp.float32), tx.update(g, s, params)[0]), s),
        )

    return {"scale": scale}


@mutant("team-scale-counts-steps", "keeps a step counter in its state")
def _(optax: Any) -> Any:
    orig = optax.scale

    def scale(step_size: Any) -> Any:
        tx = orig(step_size)
        return optax.GradientTransformation(
            lambda p: optax.ScaleByScheduleState(count=0),
            lambda g, s, params=None: (tx.update(g, optax.EmptyState(), params)[0], s),
        )

    return {"scale": scale}
