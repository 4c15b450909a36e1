"""Mutants of the tree utilities' values (``tests/contracts/test_tree_utils.py``):
a norm off by a factor, a sum that drops a leaf or adds absolute values, an
inner product that does not conjugate or ignores its second PyTree, a norm
computed in bfloat16 or as L1, NaN for a PyTree with no element, a reduction
with no initial value, leaf-wise operations on the wrong operand or returning a
list, and a count of leaves for a count of elements. Each one replaces the
utility at its path (``surface_sweep.replace_paths``) and returns {}.
"""

from __future__ import annotations

import functools
from typing import Any

from optax_gate.mutants.families.surface_sweep import replace_paths
from optax_gate.mutants.registry import family

mutant = family("tree_utils", "tests/contracts/test_tree_utils.py")


def _replace_all(paths: Any, body: Any) -> Any:
    """Each of ``paths`` replaced by ``body(original, *args, **kwargs)``."""

    def make(orig: Any, _: Any) -> Any:
        @functools.wraps(orig)
        def fn(*args: Any, **kwargs: Any) -> Any:
            return body(orig, *args, **kwargs)

        return fn

    return replace_paths(paths, make)


def _replace(path: Any, body: Any) -> Any:
    """``path`` replaced by ``body(original, *args, **kwargs)``."""
    return _replace_all([path], body)


@mutant("tree-utils-norm-sqrt2", "tree.norm is sqrt(2 * sum |x|^2): the Euclidean norm times 1.414")
def norm_sqrt2(optax: Any) -> Any:
    import jax.numpy as jnp

    def body(orig: Any, tree: Any, ord: Any = None, squared: Any = False) -> Any:
        value = orig(tree, ord=ord, squared=squared)
        return value * (2.0 if squared else jnp.sqrt(2.0)) if ord in (None, 2) else value

    return _replace("optax.tree.norm", body)


@mutant("tree-utils-sum-drops-last-leaf", "tree.sum leaves out the last leaf")
def sum_drops_last(optax: Any) -> Any:
    import jax

    def body(orig: Any, tree: Any) -> Any:
        leaves = jax.tree.leaves(tree)
        return orig(leaves[:-1])

    return _replace("optax.tree.sum", body)


@mutant("tree-utils-vdot-no-conjugate", "tree.vdot multiplies without conjugating its first argument (complex leaves)")
def vdot_no_conjugate(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    def body(orig: Any, x: Any, y: Any) -> Any:
        return orig(jax.tree.map(jnp.conj, x), y)

    return _replace("optax.tree.vdot", body)


@mutant("tree-utils-global-norm-bfloat16", "global_norm squares and sums in bfloat16 whatever the leaves' dtype")
def global_norm_bf16(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    def body(orig: Any, updates: Any) -> Any:
        return orig(jax.tree.map(lambda x: x.astype(jnp.bfloat16) if not jnp.iscomplexobj(x) else x, updates)).astype(
            jnp.float32
        )

    return _replace("optax.global_norm", body)


@mutant("tree-utils-max-of-abs", "tree.max returns the largest absolute value")
def max_of_abs(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    return _replace("optax.tree.max", lambda orig, tree: orig(jax.tree.map(jnp.abs, tree)))


@mutant("tree-utils-add-scale-scales-x", "tree.add_scale computes scalar * x + y")
def add_scale_x(optax: Any) -> Any:
    return _replace("optax.tree.add_scale", lambda orig, x, scalar, y: orig(y, scalar, x))


@mutant("tree-utils-div-swapped", "tree.div computes y / x")
def div_swapped(optax: Any) -> Any:
    return _replace("optax.tree.div", lambda orig, x, y: orig(y, x))


@mutant("tree-utils-clip-upper-only", "tree.clip ignores its lower bound")
def clip_upper_only(optax: Any) -> Any:
    import jax.numpy as jnp

    return _replace("optax.tree.clip", lambda orig, tree, lo, hi: orig(tree, -jnp.inf, hi))


@mutant("tree-utils-size-counts-leaves", "tree.size counts leaves, not elements")
def size_counts_leaves(optax: Any) -> Any:
    import jax

    return _replace("optax.tree.size", lambda orig, tree: len(jax.tree.leaves(tree)))


@mutant(
    "tree-utils-empty-reductions-nan",
    "sum, norm, vdot and global_norm of a PyTree with no element are NaN (divided by the size)",
)
def empty_nan(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    def body(orig: Any, *args: Any, **kwargs: Any) -> Any:
        value = orig(*args, **kwargs)
        empty = sum(x.size for x in jax.tree.leaves(args[0])) == 0
        return jnp.asarray(jnp.nan, jnp.float32) if empty else value

    return _replace_all(["optax.tree.sum", "optax.tree.norm", "optax.tree.vdot", "optax.global_norm"], body)


@mutant("tree-utils-sum-of-abs", "tree.sum adds absolute values")
def sum_of_abs(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    return _replace("optax.tree.sum", lambda orig, tree: orig(jax.tree.map(jnp.abs, tree)))


@mutant(
    "tree-utils-reduce-without-initial",
    "tree.sum and tree.size reduce with no initial value: TypeError on a PyTree with no leaves",
)
def reduce_without_initial(optax: Any) -> Any:
    import functools as ft
    import operator

    import jax
    import jax.numpy as jnp

    replace_paths(
        ["optax.tree.sum"],
        lambda orig, _: lambda tree: ft.reduce(operator.add, [jnp.sum(x) for x in jax.tree.leaves(tree)]),
    )
    return replace_paths(
        ["optax.tree.size"],
        lambda orig, _: lambda tree: ft.reduce(operator.add, [x.size for x in jax.tree.leaves(tree)]),
    )


@mutant("tree-utils-norm-no-abs", "tree.norm with ord=1 and ord=inf leaves out the absolute value")
def norm_no_abs(optax: Any) -> Any:
    def body(orig: Any, tree: Any, ord: Any = None, squared: Any = False) -> Any:
        if ord == 1:
            return optax.tree.sum(tree)
        if ord in ("inf", "infinity") or ord == float("inf"):
            return optax.tree.max(tree)
        return orig(tree, ord=ord, squared=squared)

    return _replace("optax.tree.norm", body)


@mutant("tree-utils-min-of-abs", "tree.min returns the smallest absolute value")
def min_of_abs(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    return _replace("optax.tree.min", lambda orig, tree: orig(jax.tree.map(jnp.abs, tree)))


@mutant("tree-utils-global-norm-l1", "global_norm is the sum of absolute values (the L1 norm)")
def global_norm_l1(optax: Any) -> Any:
    return _replace("optax.global_norm", lambda orig, updates: optax.tree.norm(updates, ord=1))


@mutant("tree-utils-vdot-self", "tree.vdot is the inner product of its first PyTree with itself")
def vdot_self(optax: Any) -> Any:
    return _replace("optax.tree.vdot", lambda orig, x, y: orig(x, x))


@mutant(
    "tree-utils-leafwise-wrong-operation",
    "tree.add subtracts, tree.sub adds, tree.mul squares x, tree.scale ignores the scalar, tree.where ignores "
    "the condition",
)
def leafwise_wrong(optax: Any) -> Any:
    replace_paths(["optax.tree.add"], lambda orig, _: lambda x, y: optax.tree.sub(x, y))
    replace_paths(["optax.tree.sub"], lambda orig, _: lambda x, y: orig(x, optax.tree.scale(-1.0, y)))
    replace_paths(["optax.tree.mul"], lambda orig, _: lambda x, y: orig(x, x))
    replace_paths(["optax.tree.scale"], lambda orig, _: lambda scalar, tree: orig(1.0, tree))
    return replace_paths(["optax.tree.where"], lambda orig, _: lambda condition, x, y: orig(not condition, x, y))


@mutant("tree-utils-leafwise-flattened", "the leaf-wise utilities return the list of result leaves, not the PyTree")
def leafwise_flattened(optax: Any) -> Any:
    import jax

    paths = ["optax.tree." + n for n in ("add", "sub", "mul", "div", "scale", "add_scale", "clip", "where")]
    return _replace_all(paths, lambda orig, *a, **k: jax.tree.leaves(orig(*a, **k)))


@mutant("tree-utils-size-empty-shape-zero", "tree.size counts a 0-d leaf as no element and a size-0 leaf as one")
def size_empty_shape(optax: Any) -> Any:
    import math

    import jax

    return _replace(
        "optax.tree.size",
        lambda orig, tree: sum(
            math.prod(x.shape) if x.ndim and x.size else (1 if x.ndim else 0) for x in jax.tree.leaves(tree)
        ),
    )
