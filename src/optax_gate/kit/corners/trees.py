"""The tree utilities' corner grid: the corner PyTrees, the calls, and each call's outcome on a corner."""

from __future__ import annotations

import math
from typing import Any

from optax_gate.kit.corners.outcome import describe, jnp_module

#: Corner PyTrees: name -> (leaves as (dtype, shape), why it is a corner).
TREES: dict[str, tuple[tuple[tuple[str, tuple[int, ...]], ...], str]] = {
    "empty_leaf": (
        (("float32", (2,)), ("float32", (0,))),
        "a size-0 leaf beside a non-empty one (an unused or pruned parameter)",
    ),
    "only_empty": ((("float32", (0,)),), "every leaf empty: a reduction has no element"),
    "no_leaves": ((), "an empty dict: nothing to reduce"),
    "scalar_leaf": ((("float32", ()),), "one 0-d leaf (a scalar parameter)"),
    "ranks_0_5": (tuple(("float32", (2,) * r) for r in range(6)), "one leaf of each rank 0 to 5"),
    "int32": ((("int32", (3,)), ("int32", ())), "integer leaves (a step counter in a state)"),
    "mixed": ((("float32", (2,)), ("int32", (2,)), ("bfloat16", (2,))), "float32, int32 and bfloat16 leaves together"),
    "bfloat16": ((("bfloat16", (3,)), ("bfloat16", (2, 2))), "bfloat16 leaves (mixed-precision params)"),
}

#: Tree utilities and norms: (path, call form, keyword arguments). Call forms:
#: ``tree`` fn(t); ``two`` fn(t, t2) (t2 the same structure, other values);
#: ``scalar_tree`` fn(0.5, t); ``add_scale`` fn(t, 0.5, t2); ``clip`` fn(t,
#: -1.0, 1.0); ``cast`` fn(t, float16); ``where`` fn(True, t, t2). A keyword
#: value ``"inf"`` means ``math.inf`` (kept as text so the table stays data).
TREE_CALLS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("optax.tree.max", "tree", {}),
    ("optax.tree.min", "tree", {}),
    ("optax.tree.sum", "tree", {}),
    ("optax.tree.norm", "tree", {}),
    ("optax.tree.norm", "tree", {"squared": True}),
    ("optax.tree.norm", "tree", {"ord": 1}),
    ("optax.tree.norm", "tree", {"ord": "inf"}),
    ("optax.global_norm", "tree", {}),
    ("optax.tree.size", "tree", {}),
    ("optax.tree.dtype", "tree", {}),
    ("optax.tree.batch_shape", "tree", {}),
    ("optax.tree.vdot", "two", {}),
    ("optax.tree.add", "two", {}),
    ("optax.tree.sub", "two", {}),
    ("optax.tree.mul", "two", {}),
    ("optax.tree.div", "two", {}),
    ("optax.tree.scale", "scalar_tree", {}),
    ("optax.tree.add_scale", "add_scale", {}),
    ("optax.tree.clip", "clip", {}),
    ("optax.tree.cast", "cast", {}),
    ("optax.tree.where", "where", {}),
    ("optax.tree.allclose", "two", {}),
)

#: Tree utilities of the sweep with no corner grid, and why.
TREE_LEFT_OUT: dict[str, str] = {
    "optax.tree.get": "looks a key up by name: the corners are about leaves' shapes and dtypes, not keys",
    "optax.tree.get_all_with_path": "looks keys up by name (as optax.tree.get)",
    "optax.tree.set": "replaces leaves by key (as optax.tree.get)",
    "optax.tree.random_like": "needs a PRNG key; its draws on a new shape are values, not a corner outcome",
    "optax.tree.split_key_like": "splits a PRNG key per leaf: a leaf's shape does not enter",
    "optax.tree.unwrap_random_key_data": "takes PRNG keys, not numeric leaves",
    "optax.tree.cast_like": "casts to another tree's dtypes: covered by optax.tree.cast on the mixed corner",
    "optax.tree.zeros_like": "a leaf-wise jnp.zeros_like: no reduction, no dtype rule of its own (time budget)",
    "optax.tree.ones_like": "a leaf-wise jnp.ones_like (as optax.tree.zeros_like)",
    "optax.tree.full_like": "a leaf-wise jnp.full_like (as optax.tree.zeros_like)",
    "optax.tree.real": "a leaf-wise jnp.real: complex leaves are the x64/dtype contracts' (time budget)",
    "optax.tree.conj": "a leaf-wise jnp.conj (as optax.tree.real)",
    "optax.tree_map_params": "maps over an optimizer state, not a params PyTree (the wrappers family carries states)",
    "optax.bias_correction": "a moment's arithmetic (optimizer internals), through the wrappers family",
    "optax.update_moment": "a moment's arithmetic (optimizer internals), through the wrappers family",
    "optax.update_infinity_moment": "a moment's arithmetic (optimizer internals), through the wrappers family",
    "optax.update_moment_per_elem_norm": "a moment's arithmetic (optimizer internals), through the wrappers family",
}


def tree_case_id(path: str, kwargs: dict[str, Any]) -> str:
    """``optax.tree.norm[ord=1]``: a call of :data:`TREE_CALLS` as one contract id."""
    return path + (f"[{','.join(f'{k}={v}' for k, v in kwargs.items())}]" if kwargs else "")


def tree(name: str, seed: int = 0) -> dict[str, Any]:
    """The corner PyTree ``name`` of :data:`TREES`: leaves ``l0``, ``l1``...
    with seeded values in [-2, 2] (integers for int32), a negative first entry."""
    import numpy as np

    jnp = jnp_module()
    rng = np.random.default_rng(seed)
    out = {}
    for i, (dtype, shape) in enumerate(TREES[name][0]):
        x = rng.uniform(-2.0, 2.0, size=shape)
        if x.size:
            x.flat[0] = -abs(x.flat[0]) - 0.5
        out[f"l{i}"] = jnp.asarray(np.round(x) if dtype == "int32" else x, dtype=dtype)
    return out


def tree_outcome(path: str, form: str, kwargs: dict[str, Any], corner: str) -> str:
    """The outcome of the tree utility ``path`` called in ``form`` on the corner PyTree ``corner``."""
    from optax_gate.kit.surface import build as surface_build

    jnp = jnp_module()
    fn = surface_build.resolve(path)
    kw = {k: (math.inf if v == "inf" else v) for k, v in kwargs.items()}
    t, t2 = tree(corner), tree(corner, seed=1)
    calls = {
        "tree": lambda: fn(t, **kw),
        "two": lambda: fn(t, t2, **kw),
        "scalar_tree": lambda: fn(0.5, t, **kw),
        "add_scale": lambda: fn(t, 0.5, t2, **kw),
        "clip": lambda: fn(t, -1.0, 1.0, **kw),
        "cast": lambda: fn(t, jnp.float16, **kw),
        "where": lambda: fn(True, t, t2, **kw),
    }
    return describe(calls[form])
