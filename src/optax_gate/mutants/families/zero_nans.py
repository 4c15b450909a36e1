"""Mutants of optax.zero_nans: deliberately broken variants that the contracts
of ``tests/contracts/test_zero_nans.py`` must catch."""

from __future__ import annotations

from typing import Any

from optax_gate.mutants.patches import nan_to_zero, post_process, upcast, wrap_tx
from optax_gate.mutants.registry import family

mutant = family("zero-nans", "tests/contracts/test_zero_nans.py")


@mutant("zero-nans-identity", "replaces nothing (NaNs pass through)")
def _(optax: Any) -> Any:
    orig = optax.zero_nans

    def f() -> Any:
        tx = orig()
        return wrap_tx(tx, update=lambda g, s, params=None: (g, tx.update(g, s)[1]))

    return {"zero_nans": f}


@mutant("zero-nans-infs-too", "also zeroes +inf and -inf (a finiteness guard)")
def _(optax: Any) -> Any:
    return post_process(optax, "zero_nans", lambda u, g: nan_to_zero(g))


@mutant("zero-nans-flag-never", "never sets found_nan")
def _(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    orig = optax.zero_nans

    def f() -> Any:
        tx = orig()

        def update(g: Any, s: Any, params: Any = None) -> Any:
            u, s = tx.update(g, s)
            return u, s._replace(found_nan=jax.tree.map(lambda x: jnp.zeros_like(x), s.found_nan))

        return wrap_tx(tx, update=update)

    return {"zero_nans": f}


@mutant("zero-nans-flag-per-element", "keeps one flag per element instead of one per leaf")
def _(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    orig = optax.zero_nans

    def f() -> Any:
        tx = orig()

        def init(p: Any) -> Any:
            return tx.init(p)._replace(found_nan=jax.tree.map(lambda x: jnp.zeros(jnp.shape(x), bool), p))

        def update(g: Any, s: Any, params: Any = None) -> Any:
            return tx.update(g, s)[0], s._replace(found_nan=jax.tree.map(jnp.isnan, g))

        return wrap_tx(tx, init=init, update=update)

    return {"zero_nans": f}


@mutant("zero-nans-checks-state", "requires the state to match the updates (pytree structure error)")
def _(optax: Any) -> Any:
    import jax

    orig = optax.zero_nans

    def f() -> Any:
        tx = orig()

        def update(g: Any, s: Any, params: Any = None) -> Any:
            jax.tree.map(lambda a, b: None, g, s.found_nan)
            return tx.update(g, s)

        return wrap_tx(tx, update=update)

    return {"zero_nans": f}


@mutant("zero-nans-upcast", "returns float32 whatever the dtype")
def _(optax: Any) -> Any:
    return post_process(optax, "zero_nans", upcast)


@mutant("zero-nans-jit-differs", "perturbs the result by 1e-3 only under jax.jit")
def _(optax: Any) -> Any:
    from optax_gate.mutants.patches import perturbed_under_jit

    return post_process(optax, "zero_nans", perturbed_under_jit)
