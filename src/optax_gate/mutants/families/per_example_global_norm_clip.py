"""Mutants of optax.per_example_global_norm_clip: deliberately broken variants that the contracts
of ``tests/contracts/test_per_example_global_norm_clip.py`` must catch."""

from __future__ import annotations

from typing import Any

from optax_gate.mutants.patches import none_as_zeros, to_f32, traced, tree_map
from optax_gate.mutants.registry import family

mutant = family("clip", "tests/contracts/test_per_example_global_norm_clip.py")


@mutant("clip-mean", "returns the mean over the batch instead of the sum")
def _(optax: Any) -> Any:
    orig = optax.per_example_global_norm_clip

    def f(grads: Any, l2_norm_clip: Any) -> Any:
        import jax

        s, c = orig(grads, l2_norm_clip)
        return tree_map(lambda x: x / jax.tree.leaves(grads)[0].shape[0], s), c

    return {"per_example_global_norm_clip": f}


@mutant("clip-counts-elements", "counts clipped elements instead of examples")
def _(optax: Any) -> Any:
    orig = optax.per_example_global_norm_clip

    def f(grads: Any, l2_norm_clip: Any) -> Any:
        import jax

        s, c = orig(grads, l2_norm_clip)
        per_example = sum(x[0].size for x in jax.tree.leaves(grads))
        return s, c * per_example

    return {"per_example_global_norm_clip": f}


@mutant("clip-no-clipping", "never clips (threshold ignored)")
def _(optax: Any) -> Any:
    orig = optax.per_example_global_norm_clip
    return {"per_example_global_norm_clip": lambda grads, l2_norm_clip: orig(grads, float("inf"))}


@mutant("clip-strict-inputs", "rejects empty input and leaves without a feature axis with ValueError")
def _(optax: Any) -> Any:
    orig = optax.per_example_global_norm_clip

    def f(grads: Any, l2_norm_clip: Any) -> Any:
        import jax

        leaves = jax.tree.leaves(grads)
        if not leaves or any(x.ndim < 2 for x in leaves):
            raise ValueError("each leaf needs a batch axis and a feature axis")
        return orig(grads, l2_norm_clip)

    return {"per_example_global_norm_clip": f}


@mutant("clip-normalises", "scales every example to norm C, up as well as down, and counts them all")
def _(optax: Any) -> Any:
    def f(grads: Any, l2_norm_clip: Any) -> Any:
        import jax
        import jax.numpy as jnp

        norms = jax.vmap(optax.global_norm)(grads)
        factor = l2_norm_clip / norms
        return tree_map(lambda g: jnp.tensordot(factor, g, axes=1).astype(g.dtype), grads), jnp.asarray(
            norms.shape[0], jnp.int32
        )

    return {"per_example_global_norm_clip": f}


@mutant("clip-batch-message", "reports inconsistent batch sizes with another message")
def _(optax: Any) -> Any:
    orig = optax.per_example_global_norm_clip

    def f(grads: Any, l2_norm_clip: Any) -> Any:
        import jax

        if len({x.shape[0] for x in jax.tree.leaves(grads) if x.ndim}) > 1:
            raise ValueError("vmap got inconsistent sizes")
        return orig(grads, l2_norm_clip)

    return {"per_example_global_norm_clip": f}


@mutant("clip-upcast", "returns float32 sums whatever the input dtype")
def _(optax: Any) -> Any:
    orig = optax.per_example_global_norm_clip

    def f(grads: Any, l2_norm_clip: Any) -> Any:
        s, c = orig(grads, l2_norm_clip)
        return to_f32(s), c

    return {"per_example_global_norm_clip": f}


@mutant("clip-jit-differs", "perturbs the sums by 1e-3 only under jax.jit")
def _(optax: Any) -> Any:
    orig = optax.per_example_global_norm_clip

    def f(grads: Any, l2_norm_clip: Any) -> Any:
        s, c = orig(grads, l2_norm_clip)
        return (tree_map(lambda x: x * 1.001, s) if traced(grads) else s), c

    return {"per_example_global_norm_clip": f}


@mutant("clip-none-leaf-zeros", "returns zeros for a None leaf")
def _(optax: Any) -> Any:
    orig = optax.per_example_global_norm_clip

    def f(grads: Any, l2_norm_clip: Any) -> Any:
        s, c = orig(grads, l2_norm_clip)
        return none_as_zeros(s), c

    return {"per_example_global_norm_clip": f}
