"""Mutants of the tree utilities' corner grid
(``tests/contracts/test_surface_corners_trees.py``): an empty leaf that makes
every reduction raise, a refusal of rank-5 leaves, integer leaves taken as
float32, and the empty reductions of optax 0.2.8 (a Python float for a PyTree
with no element). Each one patches the utilities' paths of the grid
(``corners.trees.TREE_CALLS``) and returns {}.
"""

from __future__ import annotations

import functools
from typing import Any

from optax_gate.mutants.families.surface_sweep import replace_paths
from optax_gate.mutants.registry import family

mutant = family("surface_corners_trees", "tests/contracts/test_surface_corners_trees.py")


def _paths() -> list[str]:
    from optax_gate.kit.corners.trees import TREE_CALLS

    return list(dict.fromkeys(p for p, _, _ in TREE_CALLS))


def _before(check: Any) -> Any:
    """Every grid utility calling ``check(trees)`` on its PyTree arguments first."""

    def make(orig: Any, path: Any) -> Any:
        @functools.wraps(orig)
        def fn(*args: Any, **kwargs: Any) -> Any:
            check([a for a in args if isinstance(a, dict)])
            return orig(*args, **kwargs)

        return fn

    return replace_paths(_paths(), make)


@mutant(
    "surface-corners-trees-empty-leaf-raises", "every tree utility raises ValueError on a PyTree with a size-0 leaf"
)
def empty_leaf_raises(optax: Any) -> Any:
    import jax

    def check(trees: Any) -> None:
        if any(leaf.size == 0 for t in trees for leaf in jax.tree.leaves(t)):
            raise ValueError("zero-size leaf")

    return _before(check)


@mutant("surface-corners-trees-rank5-refused", "every tree utility refuses a leaf of rank 5 (NotImplementedError)")
def rank5_refused(optax: Any) -> Any:
    import jax

    def check(trees: Any) -> None:
        if any(leaf.ndim >= 5 for t in trees for leaf in jax.tree.leaves(t)):
            raise NotImplementedError("rank 5")

    return _before(check)


@mutant("surface-corners-trees-int-as-float", "integer leaves are cast to float32 before every tree utility")
def int_as_float(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    def make(orig: Any, path: Any) -> Any:
        @functools.wraps(orig)
        def fn(*args: Any, **kwargs: Any) -> Any:
            cast = [
                jax.tree.map(lambda x: x.astype(jnp.float32) if jnp.issubdtype(x.dtype, jnp.integer) else x, a)
                if isinstance(a, dict)
                else a
                for a in args
            ]
            return orig(*cast, **kwargs)

        return fn

    return replace_paths(_paths(), make)


@mutant(
    "surface-corners-trees-empty-python-float",
    "tree max/min skip empty leaves and start from a Python float "
    "(optax 0.2.8's reduction: no error on an empty leaf, a Python float for a PyTree with no element)",
)
def empty_python_float(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    def reduce(op: Any, start: Any) -> Any:
        def fn(tree: Any) -> Any:
            parts = [op(x) for x in jax.tree.leaves(tree) if x.size]
            out = start
            for p in parts:
                out = jnp.maximum(out, p) if op is jnp.max else jnp.minimum(out, p)
            return out

        return fn

    return replace_paths(
        ["optax.tree.max", "optax.tree.min"],
        lambda orig, path: reduce(jnp.max, -float("inf")) if path.endswith("max") else reduce(jnp.min, float("inf")),
    )
