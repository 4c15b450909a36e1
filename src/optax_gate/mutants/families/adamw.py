"""Mutants of optax.adamw: deliberately broken variants that the contracts of
``tests/contracts/test_adamw.py`` must catch."""

from __future__ import annotations

from typing import Any

from optax_gate.mutants.patches import first_state_f32, nan_to_zero, state_cast, wrap_tx
from optax_gate.mutants.registry import family
from optax_gate.mutants.shapes import jit_differs

mutant = family("adamw", "tests/contracts/test_adamw.py")


def _parts(k: Any) -> Any:
    keys = ("b1", "b2", "eps", "eps_root", "mu_dtype")
    return {x: k.pop(x) for x in keys if x in k}


@mutant("adamw-decay-unscaled", "decay not multiplied by the learning rate (the paper's -lr*step - wd*p)")
def _(optax: Any) -> Any:
    def f(learning_rate: Any, weight_decay: Any = 1e-4, mask: Any = None, nesterov: Any = False, **k: Any) -> Any:
        return optax.chain(
            optax.scale_by_adam(nesterov=nesterov, **_parts(k)),
            optax.scale_by_learning_rate(learning_rate),
            optax.add_decayed_weights(-weight_decay, mask),
        )

    return {"adamw": f}


@mutant("adamw-coupled-l2", "decay added to the gradient before Adam (L2 regularisation, not decoupled)")
def _(optax: Any) -> Any:
    def f(learning_rate: Any, weight_decay: Any = 1e-4, mask: Any = None, nesterov: Any = False, **k: Any) -> Any:
        return optax.chain(
            optax.add_decayed_weights(weight_decay, mask),
            optax.scale_by_adam(nesterov=nesterov, **_parts(k)),
            optax.scale_by_learning_rate(learning_rate),
        )

    return {"adamw": f}


@mutant("adamw-mask-ignored", "decays every leaf whatever the mask")
def _(optax: Any) -> Any:
    orig = optax.adamw
    return {"adamw": lambda *a, mask=None, **k: orig(*a, **k)}


@mutant("adamw-state-float32", "keeps the moments in float32 whatever the params' dtype")
def _(optax: Any) -> Any:
    return state_cast(optax, "adamw", first_state_f32("mu", "nu"))


@mutant("adamw-params-optional", "treats missing params as zeros (drops the check) and NaNs as zeros")
def _(optax: Any) -> Any:
    orig = optax.adamw

    def f(*a: Any, **k: Any) -> Any:
        tx = orig(*a, **k)

        def update(g: Any, s: Any, params: Any = None) -> Any:
            import jax
            import jax.numpy as jnp

            params = jax.tree.map(jnp.zeros_like, g) if params is None else params
            u, s = tx.update(g, s, params)
            return nan_to_zero(u), s

        return wrap_tx(tx, update=update)

    return {"adamw": f}


jit_differs(mutant, "adamw-jit-differs")
