"""Hypothesis strategies for PyTrees of float64 NumPy leaves.

Every property test draws its inputs from here, so that the shape of generated
PyTrees (nesting, leaf count, shapes, value range) is defined once. Leaves are
float64 NumPy arrays; a test casts them to the dtype under test with
``jnp.asarray(leaf, dtype)`` and feeds the *cast* values to the float64
reference, so the reference sees exactly what Optax sees.

Example::

    @given(tree=pytrees())
    def test_something(tree):
        leaves = jax.tree.leaves(tree)      # 1 to 6 float64 arrays
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

#: Values are finite and bounded so that float32 sums of squares neither
#: overflow nor lose all precision: |x| <= 1e3 and x == 0 or |x| >= 1e-3.
MAX_ABS = 1e3
MIN_ABS = 1e-3
MAX_LEAVES = 6
_KEYS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=6)


def finite_values() -> st.SearchStrategy[float]:
    """Finite floats in ``[-MAX_ABS, -MIN_ABS] U {0} U [MIN_ABS, MAX_ABS]``."""
    mag = st.floats(MIN_ABS, MAX_ABS, allow_nan=False, allow_infinity=False)
    return st.one_of(st.just(0.0), mag, mag.map(lambda x: -x))


def arrays(shape: tuple[int, ...]) -> st.SearchStrategy[np.ndarray]:
    """float64 arrays of ``shape`` with :func:`finite_values` elements."""
    return hnp.arrays(np.float64, shape, elements=finite_values())


def shapes(min_dims: int = 0, max_dims: int = 3, max_side: int = 4) -> st.SearchStrategy[tuple[int, ...]]:
    """Array shapes with 0 to 3 axes of size 1 to ``max_side`` (asymmetric allowed)."""
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=1, max_side=max_side)


def _nest(leaves: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Nested dicts, lists and tuples whose leaves come from ``leaves``."""
    return st.recursive(
        leaves,
        lambda children: st.one_of(
            st.dictionaries(_KEYS, children, min_size=1, max_size=3),
            st.lists(children, min_size=1, max_size=3),
            st.lists(children, min_size=1, max_size=3).map(tuple),
        ),
        max_leaves=MAX_LEAVES,
    )


def _leaf_count_ok(tree: Any) -> bool:
    import jax  # local: keeps the module importable for tools that only list strategies

    return 1 <= len(jax.tree.leaves(tree)) <= MAX_LEAVES


def pytrees(leaf_shapes: st.SearchStrategy[tuple[int, ...]] | None = None) -> st.SearchStrategy[Any]:
    """PyTrees of 1 to 6 float64 leaves of mixed shapes, nested in dicts, lists and tuples."""
    leaf_shapes = shapes() if leaf_shapes is None else leaf_shapes
    return _nest(leaf_shapes.flatmap(arrays)).filter(_leaf_count_ok)


def pytree_pairs() -> st.SearchStrategy[tuple[Any, Any]]:
    """Two PyTrees of the same structure and leaf shapes (e.g. params and grads)."""
    return pytrees().flatmap(lambda tree: st.tuples(st.just(tree), like(tree)))


def like(tree: Any) -> st.SearchStrategy[Any]:
    """A PyTree of the same structure and leaf shapes as ``tree``, new values."""
    import jax

    leaves, treedef = jax.tree.flatten(tree)
    return st.tuples(*[arrays(x.shape) for x in leaves]).map(lambda new: jax.tree.unflatten(treedef, list(new)))


def batched_pytrees(max_batch: int = 5) -> st.SearchStrategy[Any]:
    """PyTrees whose every leaf has the same batch size ``B`` (1..max_batch) on axis 0."""
    return st.integers(1, max_batch).flatmap(lambda b: pytrees(shapes(0, 2).map(lambda s: (b, *s))))
