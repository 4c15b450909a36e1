"""Mutants of the threshold corners (``tests/contracts/test_surface_corners_thresholds.py``): each API's
comparison with its threshold turned at equality (``<=`` for ``<``, or the reverse), the rest of it as
optax 0.2.6 writes it. Each returns the replaced attribute, or patches its module and returns {}.
"""

from __future__ import annotations

from typing import Any

from optax_gate.mutants.patches import wrap_tx
from optax_gate.mutants.registry import family

mutant = family("surface_corners_thresholds", "tests/contracts/test_surface_corners_thresholds.py")


def _clip_as(optax: Any, leafwise: Any) -> Any:
    """``optax.clip`` whose update maps each leaf ``u`` to ``leafwise(u, max_delta)`` (its init kept)."""
    import jax

    orig = optax.clip

    def clip(max_delta: Any) -> Any:
        def update(updates: Any, state: Any, params: Any = None) -> Any:
            del params
            return jax.tree.map(lambda u: leafwise(u, max_delta), updates), state

        return wrap_tx(orig(max_delta), update=update)

    return {"clip": clip}


@mutant(
    "thresholds-safe-norm-strict",
    "safe_norm takes its floor only below min_norm (norm < min_norm): at equality the gradient is the norm's",
)
def safe_norm_strict(optax: Any) -> Any:
    import jax.numpy as jnp

    def safe_norm(x: Any, min_norm: Any, ord: Any = None, axis: Any = None, keepdims: Any = False) -> Any:
        norm = jnp.linalg.norm(x, ord=ord, axis=axis, keepdims=True)
        x = jnp.where(norm < min_norm, jnp.ones_like(x), x)
        norm = jnp.squeeze(norm, axis=axis) if not keepdims else norm
        return jnp.where(norm < min_norm, min_norm, jnp.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims))

    return {"safe_norm": safe_norm}


@mutant("thresholds-safe-rms-strict", "safe_root_mean_squares takes its floor only below min_rms")
def safe_rms_strict(optax: Any) -> Any:
    import jax.numpy as jnp

    def safe_root_mean_squares(x: Any, min_rms: Any) -> Any:
        rms = jnp.sqrt(jnp.mean(jnp.abs(x) ** 2))
        x = jnp.where(rms < min_rms, jnp.ones_like(x), x)
        return jnp.where(rms < min_rms, min_rms, jnp.sqrt(jnp.mean(jnp.abs(x) ** 2)))

    return {"safe_root_mean_squares": safe_root_mean_squares}


@mutant(
    "thresholds-skip-large-updates-greater",
    "skip_large_updates skips only a squared norm greater than the bound (as its docstring says)",
)
def skip_large_greater(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    def skip_large_updates(updates: Any, gradient_step: Any, params: Any, max_squared_norm: Any) -> Any:
        del gradient_step, params
        norm_sq = jnp.sum(jnp.array([jnp.sum(p**2) for p in jax.tree.leaves(updates)]))
        should_skip = jnp.logical_or(norm_sq > max_squared_norm, jnp.isnan(norm_sq))
        return should_skip, {"should_skip": should_skip, "norm_squared": norm_sq}

    return {"skip_large_updates": skip_large_updates}


@mutant(
    "thresholds-per-example-clip-counts-equal",
    "per_example_global_norm_clip counts an example whose norm equals the clip as clipped",
)
def per_example_counts_equal(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    def per_example_global_norm_clip(grads: Any, l2_norm_clip: Any) -> Any:
        norms = jax.vmap(optax.global_norm)(grads)
        multipliers = jnp.nan_to_num(jnp.minimum(l2_norm_clip / norms, 1.0), nan=1.0)
        return jax.tree.map(lambda g: jnp.tensordot(multipliers, g, axes=1), grads), jnp.sum(multipliers <= 1.0)

    return {"per_example_global_norm_clip": per_example_global_norm_clip}


@mutant(
    "thresholds-hinge-where",
    "hinge_loss as where(margin < 1, 1 - margin, 0): at the kink the gradient is 0, not jnp.maximum's half",
)
def hinge_where(optax: Any) -> Any:
    import jax.numpy as jnp

    def hinge_loss(predictor_outputs: Any, targets: Any) -> Any:
        margin = predictor_outputs * targets
        return jnp.where(margin < 1, 1 - margin, 0.0)

    optax.losses.hinge_loss = hinge_loss
    return {}


@mutant(
    "thresholds-clip-where",
    "clip as where(|u| > max_delta, sign(u) * max_delta, u): at the bound the gradient is 1, not jnp.clip's half",
)
def clip_where(optax: Any) -> Any:
    import jax.numpy as jnp

    return _clip_as(optax, lambda u, d: jnp.where(jnp.abs(u) > d, jnp.sign(u) * d, u))


@mutant(
    "thresholds-safe-norm-mask-disagrees",
    "safe_norm masks x where norm <= min_norm but returns the floor only where norm < min_norm: at equality "
    "the norm of ones",
)
def safe_norm_mask_disagrees(optax: Any) -> Any:
    import jax.numpy as jnp

    def safe_norm(x: Any, min_norm: Any, ord: Any = None, axis: Any = None, keepdims: Any = False) -> Any:
        norm = jnp.linalg.norm(x, ord=ord, axis=axis, keepdims=True)
        x = jnp.where(norm <= min_norm, jnp.ones_like(x), x)
        norm = jnp.squeeze(norm, axis=axis) if not keepdims else norm
        return jnp.where(norm < min_norm, min_norm, jnp.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims))

    return {"safe_norm": safe_norm}


@mutant("thresholds-safe-norm-l1", "safe_norm's default is the L1 norm")
def safe_norm_l1(optax: Any) -> Any:
    orig = optax.safe_norm
    return {
        "safe_norm": lambda x, min_norm, ord=None, axis=None, keepdims=False: orig(
            x, min_norm, 1 if ord is None else ord, axis, keepdims
        )
    }


@mutant(
    "thresholds-safe-rms-root-sum", "safe_root_mean_squares takes the root of the sum of squares, not of their mean"
)
def safe_rms_root_sum(optax: Any) -> Any:
    import jax.numpy as jnp

    return {"safe_root_mean_squares": lambda x, min_rms: jnp.maximum(jnp.sqrt(jnp.sum(jnp.abs(x) ** 2)), min_rms)}


@mutant("thresholds-hinge-margin-two", "hinge_loss with a margin of 2: max(0, 2 - s * t)")
def hinge_margin_two(optax: Any) -> Any:
    import jax.numpy as jnp

    optax.losses.hinge_loss = lambda predictor_outputs, targets: jnp.maximum(0, 2 - predictor_outputs * targets)
    return {}


@mutant("thresholds-clip-drops-negatives", "clip clips to [0, max_delta]: a negative update becomes 0")
def clip_drops_negatives(optax: Any) -> Any:
    import jax.numpy as jnp

    return _clip_as(optax, lambda u, d: jnp.clip(u, 0.0, d))
