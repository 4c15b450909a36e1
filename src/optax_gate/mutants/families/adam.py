"""Mutants of optax.adam: deliberately broken variants that the contracts of
``tests/contracts/test_adam.py`` must catch."""

from __future__ import annotations

from typing import Any

from optax_gate.mutants.patches import first_state_f32, lenient, nan_to_zero, post_process, state_cast, wrap_tx
from optax_gate.mutants.registry import family
from optax_gate.mutants.shapes import jit_differs

mutant = family("adam", "tests/contracts/test_adam.py")


def no_bias_correction(tx: Any) -> Any:
    """Run each update with the count at 10**6, so ``1 - b**t`` is 1; the stored count never advances."""

    def update(g: Any, s: Any, params: Any = None) -> Any:
        u, new = tx.update(g, (s[0]._replace(count=s[0].count * 0 + 10**6), *tuple(s[1:])), params)
        return u, (new[0]._replace(count=s[0].count), *tuple(new[1:]))

    return wrap_tx(tx, update=update)


@mutant("adam-no-bias-correction", "drops the bias correction of both moments; the count never advances")
def _(optax: Any) -> Any:
    orig = optax.adam
    return {"adam": lambda *a, **k: no_bias_correction(orig(*a, **k))}


@mutant("adam-eps-swapped", "puts eps inside the square root and eps_root outside")
def _(optax: Any) -> Any:
    orig = optax.adam

    def f(
        learning_rate: Any, b1: Any = 0.9, b2: Any = 0.999, eps: Any = 1e-8, eps_root: Any = 0.0, *a: Any, **k: Any
    ) -> Any:
        return orig(learning_rate, b1, b2, eps_root, eps, *a, **k)

    return {"adam": f}


@mutant("adam-b2-constant", "uses b2 = 0.99 whatever is given (a wrong formula constant)")
def _(optax: Any) -> Any:
    orig = optax.adam

    def f(learning_rate: Any, b1: Any = 0.9, b2: Any = 0.999, *a: Any, **k: Any) -> Any:
        return orig(learning_rate, b1, 0.99, *a, **k)

    return {"adam": f}


@mutant("adam-nesterov-ignored", "ignores nesterov=True")
def _(optax: Any) -> Any:
    orig = optax.adam
    return {"adam": lambda *a, nesterov=False, **k: orig(*a, **k)}


@mutant("adam-mu-dtype-ignored", "ignores mu_dtype: mu in the params' dtype")
def _(optax: Any) -> Any:
    orig = optax.adam

    def f(
        learning_rate: Any,
        b1: Any = 0.9,
        b2: Any = 0.999,
        eps: Any = 1e-8,
        eps_root: Any = 0.0,
        mu_dtype: Any = None,
        **k: Any,
    ) -> Any:
        return orig(learning_rate, b1, b2, eps, eps_root, None, **k)

    return {"adam": f}


@mutant("adam-state-float32", "keeps the moments in float32 whatever the params' dtype")
def _(optax: Any) -> Any:
    return state_cast(optax, "adam", first_state_f32("mu", "nu"))


@mutant("adam-nan-guard", "zeroes non-finite updates (hides the float16 eps underflow)")
def _(optax: Any) -> Any:
    return post_process(optax, "adam", lambda u, g: nan_to_zero(u))


jit_differs(mutant, "adam-jit-differs")


@mutant("adam-lenient", "pairs gradient and state leaves by order and resizes: no shape or structure error")
def _(optax: Any) -> Any:
    orig = optax.adam

    def f(*a: Any, **k: Any) -> Any:
        tx = orig(*a, **k)

        def update(g: Any, s: Any, params: Any = None) -> Any:
            import jax

            return tx.update(lenient(lambda mu, gg: gg)(s[0].mu, g) if jax.tree.leaves(g) else g, s, params)

        return wrap_tx(tx, update=update)

    return {"adam": f}
