"""Mutants of optax.sgd / apply_updates: deliberately broken variants that the contracts
of ``tests/contracts/test_sgd.py`` must catch."""

from __future__ import annotations

from typing import Any

from optax_gate.mutants.patches import lenient, nan_to_zero, none_as_zeros, to_f32, wrap_tx
from optax_gate.mutants.registry import family
from optax_gate.mutants.shapes import jit_differs

mutant = family("sgd", "tests/contracts/test_sgd.py")


@mutant("sgd-sign", "updates along the gradient (+lr*g)")
def _(optax: Any) -> Any:
    orig = optax.sgd
    return {"sgd": lambda learning_rate, *a, **k: orig(-learning_rate, *a, **k)}


@mutant("sgd-momentum-ignored", "ignores momentum and nesterov")
def _(optax: Any) -> Any:
    orig = optax.sgd
    return {"sgd": lambda learning_rate, momentum=None, nesterov=False, **k: orig(learning_rate, **k)}


@mutant("sgd-state-float32", "keeps the momentum trace in float32 whatever the params' dtype")
def _(optax: Any) -> Any:
    orig = optax.sgd

    def f(*a: Any, **k: Any) -> Any:
        tx = orig(*a, **k)
        return wrap_tx(tx, init=lambda params: to_f32(tx.init(params)))

    return {"sgd": f}


@mutant("sgd-extra-state", "adds a transformation (and its state) to the chain")
def _(optax: Any) -> Any:
    orig = optax.sgd
    return {"sgd": lambda *a, **k: optax.chain(orig(*a, **k), optax.scale(1.0))}


jit_differs(mutant, "sgd-jit-differs")


@mutant("apply-updates-lenient", "apply_updates pairs leaves by order and resizes: no structure or shape error")
def _(optax: Any) -> Any:
    return {"apply_updates": lenient(optax.apply_updates)}


@mutant("apply-updates-in-place", "apply_updates adds into NumPy params in place")
def _(optax: Any) -> Any:
    import numpy as np

    orig = optax.apply_updates

    def f(params: Any, updates: Any) -> Any:
        import jax

        out = orig(params, updates)
        for p, o in zip(jax.tree.leaves(params), jax.tree.leaves(out), strict=True):
            if isinstance(p, np.ndarray):
                np.copyto(p, np.asarray(o))
        return out

    return {"apply_updates": f}


@mutant("apply-updates-upcast", "apply_updates returns float32 params whatever their dtype")
def _(optax: Any) -> Any:
    orig = optax.apply_updates
    return {"apply_updates": lambda p, u: to_f32(orig(p, u))}


@mutant("sgd-nan-guard", "zeroes non-finite gradients and drops None leaves to zeros")
def _(optax: Any) -> Any:
    orig = optax.sgd

    def f(*a: Any, **k: Any) -> Any:
        tx = orig(*a, **k)
        return wrap_tx(tx, update=lambda g, s, params=None: tx.update(nan_to_zero(none_as_zeros(g)), s, params))

    return {"sgd": f}
