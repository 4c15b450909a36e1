"""Mutants of optax.lion: deliberately broken variants that the contracts of
``tests/contracts/test_lion.py`` must catch."""

from __future__ import annotations

from typing import Any

from optax_gate.mutants.patches import first_state_f32, state_cast, wrap_tx
from optax_gate.mutants.registry import family
from optax_gate.mutants.shapes import jit_differs

mutant = family("lion", "tests/contracts/test_lion.py")


@mutant("lion-b1-b2-swapped", "interpolates with b2 and tracks the momentum with b1 (wrong formula constants)")
def _(optax: Any) -> Any:
    orig = optax.lion
    return {"lion": lambda learning_rate, b1=0.9, b2=0.99, *a, **k: orig(learning_rate, b2, b1, *a, **k)}


@mutant("lion-no-sign", "drops the sign: the update is the interpolated momentum itself")
def _(optax: Any) -> Any:
    def f(
        learning_rate: Any,
        b1: Any = 0.9,
        b2: Any = 0.99,
        mu_dtype: Any = None,
        weight_decay: Any = 1e-3,
        mask: Any = None,
    ) -> Any:
        sign = optax.scale_by_lion(b1, b2, mu_dtype)

        def update(g: Any, s: Any, params: Any = None) -> Any:
            import jax

            _, new = sign.update(g, s, params)
            return jax.tree.map(lambda gi, m: (1 - b1) * gi + b1 * m, g, s.mu), new

        return optax.chain(
            wrap_tx(sign, update=update),
            optax.add_decayed_weights(weight_decay, mask),
            optax.scale_by_learning_rate(learning_rate),
        )

    return {"lion": f}


@mutant("lion-decay-unscaled", "weight decay not multiplied by the learning rate")
def _(optax: Any) -> Any:
    def f(
        learning_rate: Any,
        b1: Any = 0.9,
        b2: Any = 0.99,
        mu_dtype: Any = None,
        weight_decay: Any = 1e-3,
        mask: Any = None,
    ) -> Any:
        return optax.chain(
            optax.scale_by_lion(b1, b2, mu_dtype),
            optax.scale_by_learning_rate(learning_rate),
            optax.add_decayed_weights(-weight_decay, mask),
        )

    return {"lion": f}


@mutant("lion-state-float32", "keeps mu in float32 whatever the params' dtype or mu_dtype")
def _(optax: Any) -> Any:
    return state_cast(optax, "lion", first_state_f32("mu"))


@mutant("lion-params-optional", "treats missing params as zeros (drops the check) and ignores the mask")
def _(optax: Any) -> Any:
    orig = optax.lion

    def f(*a: Any, mask: Any = None, **k: Any) -> Any:
        tx = orig(*a, **k)

        def update(g: Any, s: Any, params: Any = None) -> Any:
            import jax
            import jax.numpy as jnp

            return tx.update(g, s, jax.tree.map(jnp.zeros_like, g) if params is None else params)

        return wrap_tx(tx, update=update)

    return {"lion": f}


jit_differs(mutant, "lion-jit-differs")


@mutant("lion-count-stuck", "the step count of the state never advances")
def _(optax: Any) -> Any:
    orig = optax.lion

    def f(*a: Any, **k: Any) -> Any:
        tx = orig(*a, **k)

        def update(g: Any, s: Any, params: Any = None) -> Any:
            u, new = tx.update(g, s, params)
            return u, (new[0]._replace(count=s[0].count), *tuple(new[1:]))

        return wrap_tx(tx, update=update)

    return {"lion": f}
