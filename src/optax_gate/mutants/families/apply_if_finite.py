"""Mutants of optax.apply_if_finite: deliberately broken variants that the
contracts of ``tests/contracts/test_apply_if_finite.py`` must catch."""

from __future__ import annotations

from typing import Any

from optax_gate.mutants.patches import post_process, upcast
from optax_gate.mutants.registry import family
from optax_gate.mutants.shapes import jit_differs

mutant = family("apply-if-finite", "tests/contracts/test_apply_if_finite.py")


def _reimplemented(
    optax: Any,
    *,
    check: Any = None,
    gives_up: Any = lambda count, n: count > n,
    total_resets: Any = False,
    wrapping: Any = False,
) -> Any:
    """apply_if_finite written again with one behaviour changed."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    def factory(inner: Any, max_consecutive_errors: Any) -> Any:
        def init(params: Any) -> Any:
            return optax.ApplyIfFiniteState(
                jnp.zeros([], jnp.int32), jnp.array(True), jnp.zeros([], jnp.int32), inner.init(params)
            )

        def update(updates: Any, state: Any, params: Any = None) -> Any:
            test = check or jnp.isfinite
            isfinite = jnp.all(jnp.array([jnp.all(test(x)) for x in jax.tree.leaves(updates)]))
            bump = (lambda c: c + 1) if wrapping else optax.safe_increment
            count = jnp.where(isfinite, 0, bump(state.notfinite_count)).astype(jnp.int32)
            u, s = lax.cond(
                jnp.logical_or(isfinite, gives_up(count, max_consecutive_errors)),
                lambda _: inner.update(updates, state.inner_state, params),
                lambda _: (jax.tree.map(jnp.zeros_like, updates), state.inner_state),
                None,
            )
            total = count if total_resets else jnp.where(isfinite, state.total_notfinite, bump(state.total_notfinite))
            return u, optax.ApplyIfFiniteState(count, isfinite, total.astype(jnp.int32), s)

        return optax.GradientTransformation(init, update)

    return {"apply_if_finite": factory}


@mutant("aif-never-skips", "applies every step, finite or not")
def _(optax: Any) -> Any:
    orig = optax.apply_if_finite
    return {"apply_if_finite": lambda inner, max_consecutive_errors: orig(inner, -1)}


@mutant("aif-never-gives-up", "skips non-finite steps forever")
def _(optax: Any) -> Any:
    orig = optax.apply_if_finite
    return {"apply_if_finite": lambda inner, max_consecutive_errors: orig(inner, 2**30)}


@mutant("aif-off-by-one", "gives up after max_consecutive_errors bad steps instead of more than that")
def _(optax: Any) -> Any:
    return _reimplemented(optax, gives_up=lambda count, n: count >= n)


@mutant("aif-nan-only", "checks for NaN only: infinities pass as finite")
def _(optax: Any) -> Any:
    import jax.numpy as jnp

    return _reimplemented(optax, check=lambda x: ~jnp.isnan(x))


@mutant("aif-total-resets", "resets total_notfinite with notfinite_count")
def _(optax: Any) -> Any:
    return _reimplemented(optax, total_resets=True)


@mutant("aif-counter-wraps", "counters overflow to negative at the int32 maximum")
def _(optax: Any) -> Any:
    return _reimplemented(optax, wrapping=True)


@mutant("aif-upcast", "returns float32 updates whatever the dtype")
def _(optax: Any) -> Any:
    return post_process(optax, "apply_if_finite", upcast)


jit_differs(mutant, "aif-jit-differs")


@mutant("aif-lenient", "re-pairs gradients with the params' structure: no structure error")
def _(optax: Any) -> Any:
    import jax

    orig = optax.apply_if_finite

    def f(inner: Any, max_consecutive_errors: Any) -> Any:
        tx = orig(inner, max_consecutive_errors)

        def update(g: Any, s: Any, params: Any = None) -> Any:
            if params is not None and jax.tree.structure(g) != jax.tree.structure(params):
                g = jax.tree.unflatten(jax.tree.structure(params), jax.tree.leaves(g))
            return tx.update(g, s, params)

        return optax.GradientTransformation(tx.init, update)

    return {"apply_if_finite": f}
