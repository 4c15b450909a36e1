"""Mutants of optax.masked: deliberately broken variants that the contracts
of ``tests/contracts/test_masked.py`` must catch."""

from __future__ import annotations

from typing import Any

from optax_gate.mutants.patches import post_process, upcast, wrap_tx
from optax_gate.mutants.registry import family
from optax_gate.mutants.shapes import jit_differs

mutant = family("masked", "tests/contracts/test_masked.py")


@mutant("masked-out-zeroed", "zeroes the updates of masked-out leaves (freezes them)")
def _(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    orig = optax.masked

    def f(inner: Any, mask: Any) -> Any:
        tx = orig(inner, mask)

        def update(g: Any, s: Any, params: Any = None) -> Any:
            u, s = tx.update(g, s, params)
            m = mask(g) if callable(mask) else mask
            flags = jax.tree.broadcast(m, g) if not isinstance(m, bool) else jax.tree.map(lambda _: m, g)
            return jax.tree.map(lambda x, keep: x if keep else jnp.zeros_like(x), u, flags), s

        return wrap_tx(tx, update=update)

    return {"masked": f}


@mutant("masked-ignores-mask", "applies the inner transformation to every leaf")
def _(optax: Any) -> Any:
    orig = optax.masked
    return {"masked": lambda inner, mask: orig(inner, True)}


@mutant("masked-lenient-mask", "treats leaves missing from the mask as masked out")
def _(optax: Any) -> Any:

    orig = optax.masked

    def f(inner: Any, mask: Any) -> Any:
        if isinstance(mask, dict):

            def fill(p: Any) -> Any:
                return {k: mask.get(k, False) for k in p} if isinstance(p, dict) else mask

            return orig(inner, fill)
        return orig(inner, mask)

    return {"masked": f}


@mutant("masked-upcast", "returns float32 updates whatever the dtype")
def _(optax: Any) -> Any:
    return post_process(optax, "masked", upcast)


jit_differs(mutant, "masked-jit-differs")
