"""Mutants of optax.rmsprop: deliberately broken variants that the contracts of
``tests/contracts/test_rmsprop.py`` must catch."""

from __future__ import annotations

from typing import Any

from optax_gate.mutants.patches import lenient, nan_to_zero, state_cast, to_f32, wrap_tx
from optax_gate.mutants.registry import family
from optax_gate.mutants.shapes import jit_differs

mutant = family("rmsprop", "tests/contracts/test_rmsprop.py")


@mutant("rmsprop-eps-placement-flipped", "eps outside the root where it belongs inside, and the converse")
def _(optax: Any) -> Any:
    orig = optax.rmsprop
    return {"rmsprop": lambda *a, eps_in_sqrt=True, **k: orig(*a, eps_in_sqrt=not eps_in_sqrt, **k)}


@mutant("rmsprop-centered-ignored", "ignores centered=True")
def _(optax: Any) -> Any:
    orig = optax.rmsprop
    return {"rmsprop": lambda *a, centered=False, **k: orig(*a, **k)}


@mutant("rmsprop-initial-scale-ignored", "initialises nu at 0 whatever initial_scale is")
def _(optax: Any) -> Any:
    orig = optax.rmsprop
    return {"rmsprop": lambda *a, initial_scale=0.0, **k: orig(*a, **k)}


@mutant("rmsprop-decay-constant", "uses decay 0.95 whatever is given (a wrong formula constant)")
def _(optax: Any) -> Any:
    orig = optax.rmsprop
    return {"rmsprop": lambda learning_rate, decay=0.9, *a, **k: orig(learning_rate, 0.95, *a, **k)}


@mutant("rmsprop-momentum-before-lr", "accumulates the momentum trace before the learning rate")
def _(optax: Any) -> Any:
    orig = optax.rmsprop

    def f(
        learning_rate: Any,
        decay: Any = 0.9,
        eps: Any = 1e-8,
        initial_scale: Any = 0.0,
        eps_in_sqrt: Any = True,
        centered: Any = False,
        momentum: Any = None,
        nesterov: Any = False,
        bias_correction: Any = False,
    ) -> Any:
        if momentum is None:
            return orig(
                learning_rate, decay, eps, initial_scale, eps_in_sqrt, centered, None, nesterov, bias_correction
            )
        scale = (optax.scale_by_stddev if centered else optax.scale_by_rms)(
            decay=decay, eps=eps, initial_scale=initial_scale, eps_in_sqrt=eps_in_sqrt, bias_correction=bias_correction
        )
        return optax.chain(
            scale, optax.trace(decay=momentum, nesterov=nesterov), optax.scale_by_learning_rate(learning_rate)
        )

    return {"rmsprop": f}


@mutant("rmsprop-state-float32", "keeps nu (and mu) in float32 whatever the params' dtype")
def _(optax: Any) -> Any:
    return state_cast(optax, "rmsprop", to_f32)


@mutant("rmsprop-nan-guard", "zeroes non-finite updates and resizes mismatched gradients (no shape error)")
def _(optax: Any) -> Any:
    orig = optax.rmsprop

    def f(*a: Any, **k: Any) -> Any:
        tx = orig(*a, **k)

        def update(g: Any, s: Any, params: Any = None) -> Any:
            import jax

            if jax.tree.leaves(g):
                g = lenient(lambda nu, gg: gg)(s[0].nu, g)
            u, s = tx.update(g, s, params)
            return nan_to_zero(u), s

        return wrap_tx(tx, update=update)

    return {"rmsprop": f}


jit_differs(mutant, "rmsprop-jit-differs")


@mutant("rmsprop-bias-correction-forced", "always bias-corrects the moments (and keeps a count in the state)")
def _(optax: Any) -> Any:
    orig = optax.rmsprop
    return {"rmsprop": lambda *a, bias_correction=False, **k: orig(*a, bias_correction=True, **k)}
