"""How the recorder stores a call's arguments and results (inside the
environment under test; numpy and jax are imported here).

A value leaf (a ``jax.Array``, a NumPy array or scalar) is stored as
``{"dtype", "shape", "n", "stride", "data", "sha256"}``: ``data`` is the
base64 of the little-endian bytes of the flattened leaf's elements ``0,
stride, 2*stride, ...`` (``n`` of them, at most :data:`CAP_ELEMENTS`, so a
leaf of any size stores at most 4096 elements: 16 KiB of float32), and
``sha256`` the digest of all its bytes (a change outside the stored elements
is still seen, though not measured in ULPs). When a trace has already stored
:data:`BUDGET_BYTES` of element bytes, later leaves keep only their dtype,
shape and digest (``n`` = 0), so a big model cannot write gigabytes.
Python scalars are stored as ``{"py": type name, "value": repr}``.

An argument's abstract signature (:func:`signature`) holds no values of
arrays: their dtype, shape and weak type; the PyTree structure of containers;
the literal value of Python scalars, strings and None (the hyperparameters).
"""

from __future__ import annotations

import base64
import hashlib
import sys
import threading
from typing import Any

import numpy as np

#: Most elements stored per leaf (evenly strided over the flattened leaf).
CAP_ELEMENTS = 4096
#: Most element bytes stored per trace; beyond it, leaves keep dtype, shape and digest only.
BUDGET_BYTES = 64 * 2**20
#: Most leaves described one by one in an argument's signature (the rest only counted and digested).
CAP_LEAVES = 256

_lock = threading.Lock()
_spent = [0]


def _is_array(x: Any) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype")


def leaf_value(x: Any) -> dict[str, Any]:
    """One concrete leaf as stored (see the module docstring); never a tracer."""
    if not (_is_array(x) or isinstance(x, np.generic)):
        return _abstract_leaf(x)
    arr = np.asarray(x)
    flat = arr.reshape(-1)
    if sys.byteorder != "little" and arr.dtype.byteorder not in ("|", "<"):
        flat = flat.byteswap()
    full = flat.tobytes()
    stride = max(1, -(-flat.size // CAP_ELEMENTS))
    sample = flat[::stride][:CAP_ELEMENTS]
    data = sample.tobytes()
    with _lock:
        keep = _spent[0] + len(data) <= BUDGET_BYTES
        if keep:
            _spent[0] += len(data)
    return {"dtype": str(arr.dtype), "shape": list(arr.shape), "stride": stride, "n": int(sample.size) if keep else 0,
            "data": base64.b64encode(data).decode("ascii") if keep else "", "sha256": hashlib.sha256(full).hexdigest()}


def _abstract_leaf(x: Any) -> Any:
    if _is_array(x):
        aval = getattr(x, "aval", None)
        out = {"dtype": str(x.dtype), "shape": list(x.shape)}
        if aval is not None and getattr(aval, "weak_type", False):
            out["weak_type"] = True
        return out
    if isinstance(x, (bool, int, float, complex, str)) or x is None:
        return {"py": type(x).__name__, "value": repr(x)}
    if callable(x):
        return {"callable": getattr(x, "__qualname__", type(x).__name__)}
    return {"type": type(x).__name__}


def signature(value: Any) -> dict[str, Any]:
    """The abstract signature of one argument: ``{"tree": PyTree structure,
    "leaves": [abstract leaf, ...], "n_leaves"}``; arrays as dtype and shape,
    Python scalars with their value (a hyperparameter), callables by name."""
    import jax

    leaves, treedef = jax.tree_util.tree_flatten(value, is_leaf=lambda x: x is None)
    tree = str(treedef)
    out: dict[str, Any] = {"n_leaves": len(leaves),
                           "leaves": [_abstract_leaf(x) for x in leaves[:CAP_LEAVES]]}
    out["tree"] = tree if len(tree) <= 2000 else tree[:2000] + f"… sha256 {hashlib.sha256(tree.encode()).hexdigest()}"
    return out


def flatten(value: Any) -> tuple[list[Any], str, list[str]]:
    """``(leaves, PyTree structure, leaf paths)`` of a call's result; None is a leaf."""
    import jax

    pairs, treedef = jax.tree_util.tree_flatten_with_path(value, is_leaf=lambda x: x is None)
    return [x for _, x in pairs], str(treedef), [jax.tree_util.keystr(p) for p, _ in pairs]


def is_traced(leaves: list[Any]) -> bool:
    import jax

    return any(isinstance(x, jax.core.Tracer) for x in leaves)
