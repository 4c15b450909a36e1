"""Mutants of the generated loss edge-input snapshots
(``tests/contracts/test_surface_loss_edges.py``): every swept loss turning a
``-inf`` logit into NaN, returning NaN for all-zero targets, reducing an
empty batch to a NaN mean, or refusing every edge input. Each one patches the losses' canonical paths and
returns {}.
"""

from __future__ import annotations

import functools
from typing import Any

from optax_gate.mutants.families.surface_sweep import callables, replace_paths
from optax_gate.mutants.registry import family

mutant = family("surface_loss_edges", "tests/contracts/test_surface_loss_edges.py")


def _losses() -> list[str]:
    return [p for p in callables("loss") if "make_" not in p]


def wrap_loss(change: Any) -> Any:
    """Every swept loss called through ``change(orig, path, args, kwargs)``."""

    def make(orig: Any, path: Any) -> Any:
        @functools.wraps(orig)
        def loss(*args: Any, **kwargs: Any) -> Any:
            return change(orig, path, list(args), kwargs)

        return loss

    return replace_paths(_losses(), make)


@mutant("surface-loss-edges-neg-inf-nan", "a -inf entry of a loss's first argument becomes NaN before the loss")
def neg_inf_nan(optax: Any) -> Any:
    import jax.numpy as jnp

    def change(orig: Any, path: Any, args: Any, kwargs: Any) -> Any:
        args[0] = jnp.where(jnp.isneginf(args[0]), jnp.nan, args[0])
        return orig(*args, **kwargs)

    return wrap_loss(change)


@mutant("surface-loss-edges-zero-targets-nan", "a loss divides by its targets' sum: NaN for all-zero targets")
def zero_targets_nan(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    from optax_gate.kit.surface.calls import TARGET_ARG

    def change(orig: Any, path: Any, args: Any, kwargs: Any) -> Any:
        out = orig(*args, **kwargs)
        targets = jnp.asarray(args[TARGET_ARG.get(path, 1)])
        if targets.size and not bool(jnp.any(targets != 0)):
            return jax.tree.map(lambda x: x * jnp.nan, out)
        return out

    return wrap_loss(change)


@mutant("surface-loss-edges-empty-mean", "a loss reduces an empty batch to its mean (a NaN scalar)")
def empty_mean(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    def change(orig: Any, path: Any, args: Any, kwargs: Any) -> Any:
        out = orig(*args, **kwargs)
        if jnp.shape(args[0])[:1] == (0,):
            return jax.tree.map(jnp.mean, out)
        return out

    return wrap_loss(change)


@mutant(
    "surface-loss-edges-validates",
    "a loss refuses edge inputs (FloatingPointError for a non-finite entry, an empty batch or all-zero "
    "targets), as an added input check would",
)
def validates(optax: Any) -> Any:
    import jax.numpy as jnp

    from optax_gate.kit.surface.calls import TARGET_ARG

    def change(orig: Any, path: Any, args: Any, kwargs: Any) -> Any:
        first, targets = jnp.asarray(args[0]), jnp.asarray(args[TARGET_ARG.get(path, 1)])
        if not first.size or not bool(jnp.all(jnp.isfinite(first))) or not bool(jnp.any(targets != 0)):
            raise FloatingPointError(f"{path}: edge input refused")
        return orig(*args, **kwargs)

    return wrap_loss(change)
