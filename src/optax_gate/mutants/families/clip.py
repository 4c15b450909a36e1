"""Mutants of optax.clip: deliberately broken variants that the contracts of
``tests/contracts/test_clip.py`` must catch."""

from __future__ import annotations

from typing import Any

from optax_gate.mutants.patches import nan_to_zero, post_process, upcast, wrap_tx
from optax_gate.mutants.registry import family
from optax_gate.mutants.shapes import jit_differs

mutant = family("clip-elementwise", "tests/contracts/test_clip.py")


def _stateless(optax: Any, fn: Any) -> Any:
    def factory(max_delta: Any) -> Any:
        return optax.GradientTransformation(
            lambda p: optax.EmptyState(), lambda g, s, params=None: (fn(g, max_delta), s)
        )

    return {"clip": factory}


@mutant("elementwise-clip-upper-only", "clips only from above (no lower bound)")
def _(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    return _stateless(optax, lambda g, d: jax.tree.map(lambda x: jnp.minimum(x, d), g))


@mutant("elementwise-clip-by-leaf-norm", "scales each leaf to norm max_delta instead of clipping elements")
def _(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    def f(g: Any, d: Any) -> Any:
        def leaf(x: Any) -> Any:
            n = jnp.sqrt(jnp.sum(x.astype(jnp.float32) ** 2))
            return jnp.where(n > d, x * (d / jnp.maximum(n, 1e-30)).astype(x.dtype), x)

        return jax.tree.map(leaf, g)

    return _stateless(optax, f)


@mutant("elementwise-clip-abs-bound", "uses |max_delta|: a negative bound clips like a positive one")
def _(optax: Any) -> Any:
    orig = optax.clip
    return {"clip": lambda max_delta: orig(abs(max_delta) if isinstance(max_delta, float) else max_delta)}


@mutant("elementwise-clip-nan-to-zero", "zeroes NaN before clipping")
def _(optax: Any) -> Any:
    return post_process(optax, "clip", lambda u, g: nan_to_zero(u))


@mutant("elementwise-clip-bound-dtype", "casts the updates to the bound's dtype")
def _(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    orig = optax.clip

    def f(max_delta: Any) -> Any:
        tx = orig(max_delta)
        dt = jnp.asarray(max_delta).dtype
        return wrap_tx(
            tx, update=lambda g, s, params=None: (jax.tree.map(lambda x: x.astype(dt), tx.update(g, s)[0]), s)
        )

    return {"clip": f}


@mutant("elementwise-clip-upcast", "returns float32 whatever the dtype")
def _(optax: Any) -> Any:
    return post_process(optax, "clip", upcast)


@mutant("elementwise-clip-extra-state", "keeps a step counter in its state")
def _(optax: Any) -> Any:
    import jax.numpy as jnp

    orig = optax.clip

    def f(max_delta: Any) -> Any:
        tx = orig(max_delta)
        return wrap_tx(
            tx,
            init=lambda p: jnp.zeros([], jnp.int32),
            update=lambda g, s, params=None: (tx.update(g, optax.EmptyState())[0], s + 1),
        )

    return {"clip": f}


jit_differs(mutant, "elementwise-clip-jit-differs")
