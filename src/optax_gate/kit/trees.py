"""Small PyTree helpers shared by the contracts (need JAX)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


def to_jax(tree: Any, dtype: Any = jnp.float32) -> Any:
    """Every array leaf of ``tree`` as a ``jax.Array`` of ``dtype``; None leaves stay None."""
    return jax.tree.map(lambda x: jnp.asarray(x, dtype=dtype), tree)


def leaves64(tree: Any) -> list[np.ndarray]:
    """The leaves of ``tree`` (None leaves dropped) as float64 NumPy arrays, in
    ``jax.tree.leaves`` order; the input of ``optax_gate.kit.references.core``."""
    return [np.asarray(x, dtype=np.float64) for x in jax.tree.leaves(tree)]


def signature(tree: Any) -> dict[str, Any]:
    """Structure of a PyTree for a ``snapshot`` contract.

    Returns:
      ``{"structure": str(treedef), "leaves": {path: "dtype[shape]"}}``; an
      integer scalar leaf (a step counter) also records its value, as
      ``"int32[]=3"``, because counters are part of an optimizer state's
      contract.
    """
    leaves = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
        arr = jnp.asarray(leaf)
        text = f"{arr.dtype.name}[{','.join(map(str, arr.shape))}]"
        if arr.shape == () and jnp.issubdtype(arr.dtype, jnp.integer):
            text += f"={int(arr)}"
        leaves[jax.tree_util.keystr(path)] = text
    return {"structure": str(jax.tree.structure(tree)), "leaves": leaves}


def seeded_layer(steps: int, seed: int = 0, scale: float = 1.0) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A small layer's params ``{"kernel": (3, 2), "bias": (2,)}`` and ``steps``
    gradient PyTrees of that structure, float64 NumPy values drawn from
    ``numpy.random.default_rng(seed)`` in a fixed order (params first, then
    the gradients step by step), so every run and every environment sees the
    same numbers."""
    rng = np.random.default_rng(seed)
    params = {"kernel": rng.normal(size=(3, 2)), "bias": rng.normal(size=(2,))}
    grads = [{"kernel": scale * rng.normal(size=(3, 2)), "bias": scale * rng.normal(size=(2,))} for _ in range(steps)]
    return params, grads


def assert_dtype(tree: Any, dtype: Any, what: str = "tree", ignore_integers: bool = False) -> None:
    """Assert every array leaf of ``tree`` has ``dtype``.

    Args:
      ignore_integers: skip integer leaves (step counters of a state).

    Raises:
      AssertionError: listing each leaf path with its actual dtype, e.g.
        ``"updates at step 1: expected bfloat16, got ['bias']: float32"``.
    """
    want = jnp.dtype(dtype)
    wrong = [
        f"{jax.tree_util.keystr(path) or 'the array'}: {jnp.asarray(leaf).dtype.name}"
        for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]
        if jnp.asarray(leaf).dtype != want
        and not (ignore_integers and jnp.issubdtype(jnp.asarray(leaf).dtype, jnp.integer))
    ]
    if wrong:
        raise AssertionError(f"{what}: expected {want.name}, got " + ", ".join(wrong))
