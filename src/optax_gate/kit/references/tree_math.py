"""Float64 (complex128) NumPy references of Optax's tree utilities, written from each utility's docstring.

A PyTree is given as the flat list of its leaves (``jax.tree.leaves`` order),
each converted to float64, or complex128 for a complex leaf, by the caller.
Sources (optax 0.2.6 ``optax/tree_utils/_tree_math.py`` docstrings, and
``optax/_src/linear_algebra.py`` for ``global_norm``): "the sum of all the
elements", "the max/min of all the elements", "the vector norm of the given
ord" (None and 2: the Euclidean norm; 1: the sum of absolute values; inf: the
largest absolute value; ``squared``: the norm squared), "the inner product
between two pytrees" (``jnp.vdot``: the first argument conjugated), "total
size", and the leaf-wise ``x + y``, ``x - y``, ``x * y``, ``x / y``,
``scalar * x``, ``x + scalar * y``, clip and where.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

Leaves = Sequence[np.ndarray]


def _all(leaves: Leaves) -> np.ndarray:
    """Every element of every leaf, flattened into one array."""
    return np.concatenate([np.ravel(x) for x in leaves]) if leaves else np.zeros(0)


def tree_sum(leaves: Leaves) -> np.ndarray:
    """The sum of all elements (0 for a PyTree with no element); shape ()."""
    return np.asarray(np.sum(_all(leaves)))


def tree_max(leaves: Leaves) -> np.ndarray:
    """The largest element; shape (). Raises ValueError when there is no element."""
    return np.asarray(np.max(_all(leaves)))


def tree_min(leaves: Leaves) -> np.ndarray:
    """The smallest element; shape (). Raises ValueError when there is no element."""
    return np.asarray(np.min(_all(leaves)))


def tree_norm(leaves: Leaves, ord: int | float | str | None = None, squared: bool = False) -> np.ndarray:
    """The vector norm of all elements seen as one vector; shape ().

    ``ord`` None or 2: ``sqrt(sum |x|^2)``; 1: ``sum |x|``; ``inf`` (or
    ``"inf"``): ``max |x|``; ``squared``: that norm squared. ``|x|`` is the
    modulus of a complex element.

    Raises:
      ValueError: an ``ord`` other than None, 1, 2 or inf.
    """
    a = np.abs(_all(leaves))
    if ord is None or ord == 2:
        sq = np.sum(a * a)
        return np.asarray(sq if squared else np.sqrt(sq))
    if ord == 1:
        value = np.sum(a)
    elif ord in (np.inf, "inf", "infinity"):
        value = np.max(a)
    else:
        raise ValueError(f"unsupported ord {ord!r}")
    return np.asarray(value * value if squared else value)


def global_norm(leaves: Leaves) -> np.ndarray:
    """``sqrt(sum |x|^2)`` over all elements; shape ()."""
    return tree_norm(leaves)


def tree_vdot(xs: Leaves, ys: Leaves) -> np.ndarray:
    """``sum conj(x) * y`` over all elements of two PyTrees of one structure; shape ()."""
    return np.asarray(np.sum(np.conj(_all(xs)) * _all(ys)))


def tree_size(leaves: Leaves) -> int:
    """The number of elements of all leaves."""
    return int(sum(np.size(x) for x in leaves))


def tree_add(xs: Leaves, ys: Leaves) -> list[np.ndarray]:
    """``x + y`` leaf by leaf."""
    return [x + y for x, y in zip(xs, ys, strict=True)]


def tree_sub(xs: Leaves, ys: Leaves) -> list[np.ndarray]:
    """``x - y`` leaf by leaf."""
    return [x - y for x, y in zip(xs, ys, strict=True)]


def tree_mul(xs: Leaves, ys: Leaves) -> list[np.ndarray]:
    """``x * y`` leaf by leaf."""
    return [x * y for x, y in zip(xs, ys, strict=True)]


def tree_div(xs: Leaves, ys: Leaves) -> list[np.ndarray]:
    """``x / y`` leaf by leaf, IEEE 754's ``inf`` and ``nan`` where ``y`` is 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return [x / y for x, y in zip(xs, ys, strict=True)]


def tree_scale(scalar: float, xs: Leaves) -> list[np.ndarray]:
    """``scalar * x`` leaf by leaf."""
    return [scalar * x for x in xs]


def tree_add_scale(xs: Leaves, scalar: float, ys: Leaves) -> list[np.ndarray]:
    """``x + scalar * y`` leaf by leaf."""
    return [x + scalar * y for x, y in zip(xs, ys, strict=True)]


def tree_clip(xs: Leaves, lo: float, hi: float) -> list[np.ndarray]:
    """Each leaf clipped into ``[lo, hi]``."""
    return [np.clip(x, lo, hi) for x in xs]


def tree_where(condition: bool, xs: Leaves, ys: Leaves) -> list[np.ndarray]:
    """``x`` where ``condition`` holds, else ``y``, leaf by leaf."""
    return [np.where(condition, x, y) for x, y in zip(xs, ys, strict=True)]
