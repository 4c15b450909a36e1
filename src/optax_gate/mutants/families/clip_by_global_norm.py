"""Mutants of optax.clip_by_global_norm: deliberately broken variants that the contracts
of ``tests/contracts/test_clip_by_global_norm.py`` must catch."""

from __future__ import annotations

from typing import Any

from optax_gate.mutants.patches import nan_to_zero, post_process, upcast, wrap_tx
from optax_gate.mutants.registry import family
from optax_gate.mutants.shapes import jit_differs

mutant = family("global-norm", "tests/contracts/test_clip_by_global_norm.py")


@mutant("global-norm-no-clipping", "never clips")
def _(optax: Any) -> Any:
    orig = optax.clip_by_global_norm
    return {"clip_by_global_norm": lambda max_norm: orig(float("inf"))}


@mutant("global-norm-per-leaf", "clips each leaf by its own norm")
def _(optax: Any) -> Any:
    orig = optax.clip_by_global_norm

    def f(max_norm: Any) -> Any:
        tx = orig(max_norm)

        def update(g: Any, s: Any, params: Any = None) -> Any:
            import jax

            return jax.tree.map(lambda x: tx.update({"x": x}, s)[0]["x"], g), s

        return wrap_tx(tx, update=update)

    return {"clip_by_global_norm": f}


@mutant("global-norm-normalises", "scales every update to norm C, up as well as down (0/0 for zeros)")
def _(optax: Any) -> Any:
    import jax

    def f(max_norm: Any) -> Any:
        def update(g: Any, s: Any, params: Any = None) -> Any:
            norm = optax.global_norm(g)
            return jax.tree.map(lambda x: x * (max_norm / norm).astype(x.dtype), g), s

        return optax.GradientTransformation(lambda p: optax.EmptyState(), update)

    return {"clip_by_global_norm": f}


@mutant("global-norm-strict-inputs", "rejects an empty PyTree and zero-size leaves with ValueError")
def _(optax: Any) -> Any:
    orig = optax.clip_by_global_norm

    def f(max_norm: Any) -> Any:
        tx = orig(max_norm)

        def update(g: Any, s: Any, params: Any = None) -> Any:
            import jax

            leaves = jax.tree.leaves(g)
            if not leaves or any(x.size == 0 for x in leaves):
                raise ValueError("nothing to clip")
            return tx.update(g, s, params)

        return wrap_tx(tx, update=update)

    return {"clip_by_global_norm": f}


@mutant("global-norm-nan-guard", "zeroes non-finite values first")
def _(optax: Any) -> Any:
    orig = optax.clip_by_global_norm

    def f(max_norm: Any) -> Any:
        tx = orig(max_norm)
        return wrap_tx(tx, update=lambda g, s, params=None: tx.update(nan_to_zero(g), s, params))

    return {"clip_by_global_norm": f}


@mutant("global-norm-upcast", "returns float32 whatever the dtype")
def _(optax: Any) -> Any:
    return post_process(optax, "clip_by_global_norm", upcast)


@mutant("global-norm-extra-state", "keeps a step counter in its state")
def _(optax: Any) -> Any:
    import jax.numpy as jnp

    orig = optax.clip_by_global_norm

    def f(max_norm: Any) -> Any:
        tx = orig(max_norm)
        return wrap_tx(
            tx,
            init=lambda p: jnp.zeros([], jnp.int32),
            update=lambda g, s, params=None: (tx.update(g, tx.init(g))[0], s + 1),
        )

    return {"clip_by_global_norm": f}


jit_differs(mutant, "global-norm-jit-differs")
