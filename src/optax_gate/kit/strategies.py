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


#: Leaf dtypes of :func:`typed_pytrees`: JAX's default float, mixed precision's
#: bfloat16, integer leaves (a step counter in a state) and complex leaves.
#: float16 is left out: the squares of values up to ``MAX_ABS`` overflow it, a
#: range property the dtype grids pin (``test_surface_dtypes.py``).
TYPED_DTYPES = ("float32", "bfloat16", "int32", "complex64")
#: Leaf shapes of :func:`typed_pytrees`: ranks 0 to 5 (the corner PyTrees'
#: ``ranks_0_5``) and an asymmetric matrix. A fixed set, so that JAX compiles
#: each operation once per shape and dtype, not once per drawn example.
TYPED_SHAPES = ((), (2,), (2, 2), (2, 2, 2), (2, 2, 2, 2), (2, 2, 2, 2, 2), (3, 1))
#: Size-0 shapes a leaf may take when empty leaves are allowed (an unused or pruned parameter).
EMPTY_SHAPES = ((0,), (2, 0))


def _numpy_dtype(name: str) -> Any:
    if name == "bfloat16":
        import ml_dtypes  # JAX's own bfloat16 NumPy type

        return ml_dtypes.bfloat16
    return np.dtype(name)


def typed_array(shape: tuple[int, ...], dtype: str) -> st.SearchStrategy[np.ndarray]:
    """A NumPy array of ``shape`` in the dtype named ``dtype`` (of :data:`TYPED_DTYPES`):
    :func:`finite_values` cast (rounded for int32; real and imaginary parts drawn apart for complex64)."""
    if dtype == "complex64":
        return st.tuples(arrays(shape), arrays(shape)).map(lambda ri: (ri[0] + 1j * ri[1]).astype(np.complex64))
    if dtype == "int32":
        return arrays(shape).map(lambda x: np.round(x).astype(np.int32))
    return arrays(shape).map(lambda x: x.astype(_numpy_dtype(dtype)))


def typed_pytrees(dtypes: tuple[str, ...] = TYPED_DTYPES, empty_leaves: bool = True) -> st.SearchStrategy[Any]:
    """PyTrees of 1 to 6 NumPy leaves, each of a dtype drawn from ``dtypes``
    (mixed within one PyTree) and a shape of :data:`TYPED_SHAPES` (ranks 0 to
    5), and, with ``empty_leaves``, size-0 leaves (:data:`EMPTY_SHAPES`)."""
    leaf_shapes = st.sampled_from(TYPED_SHAPES + (EMPTY_SHAPES if empty_leaves else ()))
    leaves = st.tuples(leaf_shapes, st.sampled_from(dtypes)).flatmap(lambda sd: typed_array(*sd))
    return _nest(leaves).filter(_leaf_count_ok)


def typed_like(tree: Any) -> st.SearchStrategy[Any]:
    """A PyTree of the structure, leaf shapes and leaf dtypes of ``tree`` (from :func:`typed_pytrees`), new values."""
    import jax

    leaves, treedef = jax.tree.flatten(tree)
    names = ["bfloat16" if x.dtype == _numpy_dtype("bfloat16") else x.dtype.name for x in leaves]
    return st.tuples(*[typed_array(x.shape, n) for x, n in zip(leaves, names, strict=True)]).map(
        lambda new: jax.tree.unflatten(treedef, list(new))
    )
