"""Mutants of the training recipes (adamw + warmup-cosine + clip_by_global_norm,
MultiSteps around it, inject_hyperparams(adam)): deliberately broken variants
that the contracts of ``tests/contracts/test_training_recipes.py`` must catch."""

from __future__ import annotations

from typing import Any

from optax_gate.mutants.patches import to_f32, wrap_tx
from optax_gate.mutants.registry import family
from optax_gate.mutants.shapes import jit_differs

mutant = family("training-recipes", "tests/contracts/test_training_recipes.py")


def _adamw(optax: Any, *, bias_correction: Any = True, decay_after_lr: Any = False, eps_inside: Any = False) -> Any:
    """adamw written again from optax's own parts with one behaviour changed."""
    import jax
    import jax.numpy as jnp

    def factory(
        learning_rate: Any,
        b1: Any = 0.9,
        b2: Any = 0.999,
        eps: Any = 1e-8,
        eps_root: Any = 0.0,
        mu_dtype: Any = None,
        weight_decay: Any = 1e-4,
        mask: Any = None,
        **kw: Any,
    ) -> Any:
        def init(params: Any) -> Any:
            return optax.ScaleByAdamState(
                jnp.zeros([], jnp.int32), optax.tree.zeros_like(params, dtype=mu_dtype), optax.tree.zeros_like(params)
            )

        def update(g: Any, s: Any, params: Any = None) -> Any:
            mu = jax.tree.map(lambda x, m: (1 - b1) * x + b1 * m, g, s.mu)
            nu = jax.tree.map(lambda x, v: (1 - b2) * x * x + b2 * v, g, s.nu)
            count = s.count + 1
            c1 = (1 - b1**count) if bias_correction else 1.0
            c2 = (1 - b2**count) if bias_correction else 1.0
            if eps_inside:
                d = jax.tree.map(
                    lambda m, v: (m / jnp.asarray(c1, m.dtype)) / jnp.sqrt(v / jnp.asarray(c2, v.dtype) + eps), mu, nu
                )
            else:
                d = jax.tree.map(
                    lambda m, v: (m / jnp.asarray(c1, m.dtype)) / (jnp.sqrt(v / jnp.asarray(c2, v.dtype)) + eps), mu, nu
                )
            return d, optax.ScaleByAdamState(count, optax.tree.cast(mu, mu_dtype), nu)

        if decay_after_lr:
            decay = optax.GradientTransformation(
                lambda p: optax.EmptyState(),
                lambda u, s, p=None: (jax.tree.map(lambda x, y: x - weight_decay * y, u, p), s),
            )
            return optax.chain(
                optax.GradientTransformation(init, update), optax.scale_by_learning_rate(learning_rate), decay
            )
        return optax.chain(
            optax.GradientTransformation(init, update),
            optax.add_decayed_weights(weight_decay, mask),
            optax.scale_by_learning_rate(learning_rate),
        )

    return factory


@mutant("recipe-no-bias-correction", "adamw without Adam's bias correction")
def _(optax: Any) -> Any:
    return {"adamw": _adamw(optax, bias_correction=False)}


@mutant("recipe-decay-not-times-lr", "adamw subtracts wd * p after the learning rate (decay not scaled by lr)")
def _(optax: Any) -> Any:
    return {"adamw": _adamw(optax, decay_after_lr=True)}


@mutant("recipe-eps-inside-root", "adamw puts eps inside the square root (float16 zero gradient no longer 0/0)")
def _(optax: Any) -> Any:
    return {"adamw": _adamw(optax, eps_inside=True)}


@mutant("recipe-warmup-off-by-one", "warmup_cosine_decay_schedule evaluated one step ahead")
def _(optax: Any) -> Any:
    orig = optax.warmup_cosine_decay_schedule

    def f(*a: Any, **k: Any) -> Any:
        s = orig(*a, **k)
        return lambda count: s(count + 1)

    return {"warmup_cosine_decay_schedule": f}


@mutant("recipe-no-clipping", "clip_by_global_norm never clips")
def _(optax: Any) -> Any:
    orig = optax.clip_by_global_norm
    return {"clip_by_global_norm": lambda max_norm: orig(float("inf"))}


@mutant("recipe-clip-zero-safe", "clip_by_global_norm returns zeros instead of 0/0 for an all-zero gradient")
def _(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    orig = optax.clip_by_global_norm

    def f(max_norm: Any) -> Any:
        tx = orig(max_norm)

        def update(g: Any, s: Any, params: Any = None) -> Any:
            u, s = tx.update(g, s)
            return jax.tree.map(lambda x: jnp.nan_to_num(x, nan=0.0), u), s

        return wrap_tx(tx, update=update)

    return {"clip_by_global_norm": f}


@mutant("recipe-none-as-zero", "adamw treats a None gradient leaf as zeros (keeps the moments, returns zero updates)")
def _(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    orig = optax.adamw

    def f(*a: Any, **k: Any) -> Any:
        tx = orig(*a, **k)

        def update(g: Any, s: Any, params: Any = None) -> Any:
            g = jax.tree.map(lambda x, p: jnp.zeros_like(p) if x is None else x, g, params, is_leaf=lambda x: x is None)
            return tx.update(g, s, params)

        return wrap_tx(tx, update=update)

    return {"adamw": f}


@mutant("recipe-state-float32", "adamw keeps its moments in float32 whatever the params' dtype")
def _(optax: Any) -> Any:
    orig = optax.adamw

    def f(*a: Any, **k: Any) -> Any:
        tx = orig(*a, **k)

        def init(p: Any) -> Any:
            s = tx.init(p)
            return (s[0]._replace(mu=to_f32(s[0].mu), nu=to_f32(s[0].nu)), *tuple(s[1:]))

        return wrap_tx(tx, init=init)

    return {"adamw": f}


@mutant("recipe-multisteps-every-call", "MultiSteps ignores every_k_schedule and emits on every call")
def _(optax: Any) -> Any:
    # Summing instead of averaging would not do: clipping to a fixed norm and
    # Adam's normalisation make the recipe blind to the gradient's scale.
    orig = optax.MultiSteps
    return {"MultiSteps": lambda opt, every_k_schedule, *a, **k: orig(opt, 1, *a, **k)}


@mutant(
    "recipe-carry-drifts",
    "adamw's update returns its count as float32 (init: int32): the state's dtypes change per step",
)
def _(optax: Any) -> Any:
    import jax.numpy as jnp

    orig = optax.adamw

    def f(*a: Any, **k: Any) -> Any:
        tx = orig(*a, **k)

        def update(g: Any, s: Any, params: Any = None) -> Any:
            u, s = tx.update(g, s, params)
            return u, (s[0]._replace(count=s[0].count.astype(jnp.float32)), *tuple(s[1:]))

        return wrap_tx(tx, update=update)

    return {"adamw": f}


@mutant("recipe-lenient-structure", "adamw re-pairs gradients with the params' structure: no structure error")
def _(optax: Any) -> Any:
    import jax

    orig = optax.adamw

    def f(*a: Any, **k: Any) -> Any:
        tx = orig(*a, **k)

        def update(g: Any, s: Any, params: Any = None) -> Any:
            if params is not None and jax.tree.structure(g) != jax.tree.structure(params):
                g = jax.tree.unflatten(jax.tree.structure(params), jax.tree.leaves(g))
            return tx.update(g, s, params)

        return wrap_tx(tx, update=update)

    return {"adamw": f}


@mutant("recipe-inject-drifts", "inject_hyperparams perturbs the learning rate by 1e-3 relative")
def _(optax: Any) -> Any:
    orig = optax.inject_hyperparams

    def f(factory: Any, *a: Any, **k: Any) -> Any:
        inner = orig(factory, *a, **k)

        def build(*args: Any, **kwargs: Any) -> Any:
            if "learning_rate" in kwargs and not callable(kwargs["learning_rate"]):
                kwargs["learning_rate"] = kwargs["learning_rate"] * 1.001
            return inner(*args, **kwargs)

        return build

    return {"inject_hyperparams": f}


@mutant(
    "recipe-inject-float32-hyperparams",
    "inject_hyperparams keeps hyperparameters in float32 (bfloat16 b2 no longer 1.0)",
)
def _(optax: Any) -> Any:
    import jax.numpy as jnp

    orig = optax.inject_hyperparams
    return {"inject_hyperparams": lambda factory, *a, **k: orig(factory, *a, **{**k, "hyperparam_dtype": jnp.float32})}


@mutant("recipe-apply-updates-skips-none", "apply_updates keeps a param whose update is None")
def _(optax: Any) -> Any:
    import jax

    orig = optax.apply_updates

    def f(params: Any, updates: Any) -> Any:
        updates = jax.tree.map(lambda u, p: 0 * p if u is None else u, updates, params, is_leaf=lambda x: x is None)
        return orig(params, updates)

    return {"apply_updates": f}


jit_differs(mutant, "recipe-jit-differs")
