"""Mutants of the transformations' corner grid
(``tests/contracts/test_surface_corners_transformations.py``): every
``*_dtype`` option ignored, a typed (0-d array) hyperparameter that sets the
updates' dtype, boolean options ignored, and NaN updates for a negative
``value``. Each one replaces the factories of the grid
(``corners.transformations.transformation_paths``) and returns {}.
"""

from __future__ import annotations

import functools
from typing import Any

from optax_gate.mutants.families.surface_sweep import replace_paths, replace_updates
from optax_gate.mutants.patches import with_update
from optax_gate.mutants.registry import family

mutant = family("surface_corners_transformations", "tests/contracts/test_surface_corners_transformations.py")


def _paths() -> list[str]:
    from optax_gate.kit.corners.transformations import transformation_paths

    return transformation_paths()


def _dropping(drop: Any) -> Any:
    """Every grid factory called without the keyword arguments ``drop(name, value)`` selects."""

    def make(orig: Any, path: Any) -> Any:
        @functools.wraps(orig)
        def factory(*args: Any, **kwargs: Any) -> Any:
            return orig(*args, **{k: v for k, v in kwargs.items() if not drop(k, v)})

        return factory

    return replace_paths(_paths(), make)


@mutant(
    "surface-corners-transformations-dtype-option-ignored",
    "every *_dtype option (mu_dtype, accumulator_dtype, state_dtype, hyperparam_dtype...) is ignored: the "
    "state follows the params' dtype",
)
def dtype_option_ignored(optax: Any) -> Any:
    return _dropping(lambda name, value: name.endswith("_dtype"))


@mutant(
    "surface-corners-transformations-typed-hyper-dtype",
    "a hyperparameter given as a 0-d array sets the updates' dtype (bfloat16 hyperparameters give bfloat16 "
    "updates for float32 params)",
)
def typed_hyper_dtype(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    def make(orig: Any, path: Any) -> Any:
        @functools.wraps(orig)
        def factory(*args: Any, **kwargs: Any) -> Any:
            tx = orig(*args, **kwargs)
            typed = [
                v.dtype for v in kwargs.values() if isinstance(v, jax.Array) and jnp.issubdtype(v.dtype, jnp.floating)
            ]
            if not typed:
                return tx
            return with_update(optax, tx, lambda u, extra: jax.tree.map(lambda x: x.astype(typed[0]), u))

        return factory

    return replace_paths(_paths(), make)


@mutant(
    "surface-corners-transformations-flag-ignored",
    "boolean options (nesterov, centered, bias_correction...) are ignored: the default code path always",
)
def flag_ignored(optax: Any) -> Any:
    return _dropping(lambda name, value: isinstance(value, bool))


@mutant(
    "surface-corners-transformations-negative-value-nan",
    "a value-driven transformation gives NaN updates for a negative value",
)
def negative_value_nan(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    def make(orig: Any, path: Any) -> Any:
        @functools.wraps(orig)
        def factory(*args: Any, **kwargs: Any) -> Any:
            def change(u: Any, extra: Any) -> Any:
                if "value" in extra and float(extra["value"]) < 0:
                    return jax.tree.map(lambda x: x * jnp.nan, u)
                return u

            return with_update(optax, orig(*args, **kwargs), change)

        return factory

    from optax_gate.kit.surface.table import TRANSFORMATIONS

    return replace_paths([p for p in _paths() if "value" in TRANSFORMATIONS[p].needs], make)


@mutant(
    "surface-corners-transformations-plateau-negative-margin",
    "reduce_on_plateau's improvement margin follows the sign of the best value (open upstream pull request "
    "1767): a flat negative loss now reduces the scale after `patience` steps, as a flat positive one does",
)
def plateau_negative_margin(optax: Any) -> Any:
    import jax.numpy as jnp

    def around(tx: Any) -> Any:
        def update(updates: Any, state: Any, params: Any = None, *, value: Any, **extra: Any) -> Any:
            # judged on value + 1000: the relative margin then tightens the
            # threshold for a negative loss as it does for a positive one
            return tx.update(updates, state, params, value=jnp.asarray(value) + 1000.0, **extra)

        return update

    return replace_updates(optax, ["optax.contrib.reduce_on_plateau"], around)


@mutant(
    "surface-corners-transformations-rank5-raises",
    "every transformation refuses a rank-5 leaf (a 3-D convolution kernel): ValueError, as adaptive_grad_clip "
    "does at 0.2.6",
)
def rank5_raises(optax: Any) -> Any:
    import jax

    def around(tx: Any) -> Any:
        def update(updates: Any, state: Any, params: Any = None, **extra: Any) -> Any:
            if any(getattr(x, "ndim", 0) == 5 for x in jax.tree.leaves(updates)):
                raise ValueError("Expected parameter with shape in (1, 2, 3, 4)")
            return tx.update(updates, state, params, **extra)

        return update

    return replace_updates(optax, _paths(), around)


@mutant(
    "surface-corners-transformations-agc-5d",
    "adaptive_grad_clip takes a rank-5 leaf, its unitwise norm over all axes but the last (as optax 0.2.8's "
    "`clipping: support default unitwise_norm for 5D params`)",
)
def agc_5d(optax: Any) -> Any:
    import jax

    def flat(tree: Any) -> Any:  # a rank-5 leaf as rank 4: its first two axes merged, the unitwise norm's axes the same
        return jax.tree.map(lambda x: x.reshape((-1, *x.shape[2:])) if getattr(x, "ndim", 0) == 5 else x, tree)

    def around(tx: Any) -> Any:
        def update(updates: Any, state: Any, params: Any = None, **extra: Any) -> Any:
            u, s = tx.update(flat(updates), state, flat(params), **extra)
            return jax.tree.map(lambda a, b: a.reshape(b.shape), u, updates), s

        return update

    return replace_updates(optax, ["optax.adaptive_grad_clip"], around)
