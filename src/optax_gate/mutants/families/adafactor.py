"""Mutants of optax.adafactor: deliberately broken variants that the contracts
of ``tests/contracts/test_adafactor.py`` must catch."""

from __future__ import annotations

from typing import Any

from optax_gate.mutants.patches import nan_to_zero, state_cast, to_f32, wrap_tx
from optax_gate.mutants.registry import family
from optax_gate.mutants.shapes import jit_differs

mutant = family("adafactor", "tests/contracts/test_adafactor.py")


@mutant("adafactor-never-factored", "keeps a full second moment for every leaf (factored=False)")
def _(optax: Any) -> Any:
    orig = optax.adafactor
    return {"adafactor": lambda *a, factored=True, **k: orig(*a, factored=False, **k)}


@mutant("adafactor-min-dim-ignored", "ignores min_dim_size_to_factor (always the default 128)")
def _(optax: Any) -> Any:
    orig = optax.adafactor
    return {"adafactor": lambda *a, min_dim_size_to_factor=128, **k: orig(*a, **k)}


@mutant("adafactor-decay-constant", "uses the constant decay 0.999 instead of 1 - t**-0.8 (wrong formula constant)")
def _(optax: Any) -> Any:
    def f(
        learning_rate: Any = None,
        min_dim_size_to_factor: Any = 128,
        decay_rate: Any = 0.8,
        decay_offset: Any = 0,
        multiply_by_parameter_scale: Any = True,
        clipping_threshold: Any = 1.0,
        eps: Any = 1e-30,
        factored: Any = True,
        **unused: Any,
    ) -> Any:
        from optax._src import factorized

        parts = [
            factorized.scale_by_factored_rms(
                factored, decay_rate, decay_offset, min_dim_size_to_factor, eps, decay_rate_fn=lambda i, e: 0.999
            )
        ]
        parts += [optax.clip_by_block_rms(clipping_threshold)] if clipping_threshold is not None else []
        parts += [optax.scale_by_learning_rate(learning_rate, flip_sign=False)] if learning_rate is not None else []
        parts += [optax.scale_by_param_block_rms()] if multiply_by_parameter_scale else []
        return optax.chain(*parts, optax.scale(-1))

    return {"adafactor": f}


@mutant("adafactor-no-param-scale", "absolute steps: ignores multiply_by_parameter_scale")
def _(optax: Any) -> Any:
    orig = optax.adafactor
    return {
        "adafactor": lambda *a, multiply_by_parameter_scale=True, **k: orig(*a, multiply_by_parameter_scale=False, **k)
    }


@mutant("adafactor-state-float32", "keeps the statistics in float32 whatever the params' dtype")
def _(optax: Any) -> Any:
    return state_cast(optax, "adafactor", to_f32)


@mutant("adafactor-params-optional", "treats missing params as ones (drops the check) and NaNs as zeros")
def _(optax: Any) -> Any:
    orig = optax.adafactor

    def f(*a: Any, **k: Any) -> Any:
        tx = orig(*a, **k)

        def update(g: Any, s: Any, params: Any = None) -> Any:
            import jax
            import jax.numpy as jnp

            u, s = tx.update(g, s, jax.tree.map(jnp.ones_like, g) if params is None else params)
            return nan_to_zero(u), s

        return wrap_tx(tx, update=update)

    return {"adafactor": f}


jit_differs(mutant, "adafactor-jit-differs")
