"""How the recorder stores a call's arguments and results (inside the environment under test; numpy and jax are
imported here).

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import base64
import dataclasses
import functools
import hashlib
import re
import sys
import threading
import types
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


def is_array(x: Any) -> bool:
    """Whether ``x`` is an array leaf (has a shape and a dtype: a ``jax.Array``, a NumPy array, a tracer)."""
    return hasattr(x, "shape") and hasattr(x, "dtype")


def leaf_value(x: Any, cap: int = CAP_ELEMENTS, spend: bool = True) -> dict[str, Any]:
    """One concrete leaf as stored (see the module docstring); never a
    tracer. ``cap``: most elements stored; ``spend``: count them against the
    trace's :data:`BUDGET_BYTES` (a replay's small samples do not)."""
    if not (is_array(x) or isinstance(x, np.generic)):
        return abstract_leaf(x)
    label = None
    if "key<" in str(x.dtype):  # a typed PRNG key (``jax.random.key``, ``nnx.Rngs``): its key data, under its own dtype
        import jax

        label, x = str(x.dtype), jax.random.key_data(x)
    arr = np.asarray(x)
    flat = arr.reshape(-1)
    if sys.byteorder != "little" and arr.dtype.byteorder not in ("|", "<"):
        flat = flat.byteswap()
    full = flat.tobytes()
    stride = max(1, -(-flat.size // cap))
    sample = flat[::stride][:cap]
    data = sample.tobytes()
    with _lock:
        keep = not spend or _spent[0] + len(data) <= BUDGET_BYTES
        if keep and spend:
            _spent[0] += len(data)
    return {
        "dtype": label or str(arr.dtype),
        "shape": list(arr.shape) if label is None else list(x.shape[:-1]),
        "stride": stride,
        "n": int(sample.size) if keep else 0,
        "data": base64.b64encode(data).decode("ascii") if keep else "",
        "sha256": hashlib.sha256(full).hexdigest(),
    }


def abstract_leaf(x: Any) -> dict[str, Any]:
    """One leaf without its values: an array's dtype, shape and weak type; a
    Python scalar, string or None with its literal value; a callable by its
    qualified name; anything else by its type's name."""
    if is_array(x):
        aval = getattr(x, "aval", None)
        out: dict[str, Any] = {"dtype": str(x.dtype), "shape": list(x.shape)}
        if aval is not None and getattr(aval, "weak_type", False):
            out["weak_type"] = True
        return out
    if isinstance(x, (bool, int, float, complex, str)) or x is None:
        return {"py": type(x).__name__, "value": repr(x)}
    if callable(x):
        return {"callable": getattr(x, "__qualname__", type(x).__name__)}
    return {"type": type(x).__name__}


#: How deep :func:`plain` follows a static field's attributes (a GraphDef's nodes, their metadata).
PLAIN_DEPTH = 12
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+|0x[0-9a-fA-F]{6,}")


def _qualified(x: Any) -> str:
    return f"{getattr(x, '__module__', None) or ''}.{getattr(x, '__qualname__', None) or getattr(x, '__name__', '?')}"


def plain(x: Any, depth: int = 0) -> str:
    """A static value as text that two processes of one program write alike:
    plain data by value (numbers, strings, bytes, None; tuples, lists and
    dicts of them, dict keys and set members sorted), a class, function or
    method by its qualified name, a PyTree structure by :func:`structure`, a
    dataclass or an object by its type's qualified name and its fields (at
    most :data:`PLAIN_DEPTH` deep), anything else by its type and its
    ``repr`` with memory addresses (``at 0x7f…``) taken out."""
    if x is None or isinstance(x, (bool, int, float, complex, str, bytes)):
        return repr(x)
    if depth > PLAIN_DEPTH:
        return type(x).__qualname__
    if isinstance(x, type):
        return _qualified(x)
    if isinstance(
        x,
        (
            types.FunctionType,
            types.BuiltinFunctionType,
            types.MethodType,
            types.MethodWrapperType,
            types.WrapperDescriptorType,
            functools.partial,
        ),
    ):
        # a function by its qualified name alone: where JAX or Flax defines it (``jax._src.lax.lax``) may move
        # between the two versions without the team's program changing
        return getattr(x, "__qualname__", None) or f"partial({plain(getattr(x, 'func', None), depth + 1)})"
    if str(getattr(type(x), "__module__", "")).split(".", 1)[0] == "optax":
        return library_object(x, depth)
    if isinstance(x, (list, tuple)):
        inner = ", ".join(plain(v, depth + 1) for v in x)
        fields = getattr(x, "_fields", None)
        return (
            f"{type(x).__qualname__}({inner})"
            if fields is not None
            else (f"[{inner}]" if isinstance(x, list) else f"({inner})")
        )
    if isinstance(x, (set, frozenset)):
        return "{" + ", ".join(sorted(plain(v, depth + 1) for v in x)) + "}"
    if isinstance(x, dict) or (hasattr(x, "items") and hasattr(x, "keys") and callable(x.items)):
        try:
            items = sorted((plain(k, depth + 1), plain(v, depth + 1)) for k, v in x.items())
        except Exception:  # a mapping that cannot be iterated: its type
            return _qualified(type(x))
        return f"{type(x).__qualname__}{{" + ", ".join(f"{k}: {v}" for k, v in items) + "}"
    treedef = _treedef_type()
    if treedef is not None and isinstance(x, treedef):
        return structure(x)
    if is_array(x):
        return f"array {x.dtype}{list(x.shape)}"
    if dataclasses.is_dataclass(x):
        fields = ", ".join(f"{f.name}={plain(getattr(x, f.name, None), depth + 1)}" for f in dataclasses.fields(x))
        return f"{_qualified(type(x))}({fields})"
    if type(x).__name__ in ("dtype", "DType") or type(x).__module__.startswith("numpy"):
        return f"{_qualified(type(x))}({_ADDRESS.sub('', str(x))})"
    slots = [s for cls in type(x).__mro__ for s in getattr(cls, "__slots__", ()) if isinstance(s, str)]
    attrs = dict(vars(x)) if hasattr(x, "__dict__") else {}
    attrs.update({s: getattr(x, s) for s in slots if hasattr(x, s) and s not in ("__weakref__", "__dict__")})
    if attrs:
        return (
            f"{_qualified(type(x))}(" + ", ".join(f"{k}={plain(v, depth + 1)}" for k, v in sorted(attrs.items())) + ")"
        )
    return f"{_qualified(type(x))}({_ADDRESS.sub('', repr(x))[:200]})"


def library_object(x: Any, depth: int = 0) -> str:
    """An Optax object carried as static data (a ``GradientTransformation``, a ``MultiSteps`` instance in an
    ``nnx.Optimizer``'s graph) by its type's name and its public configuration only: its public attributes that
    are plain data, not its functions nor its private fields, which change between releases without the team's
    program changing (``MultiSteps`` inside ``nnx.Optimizer`` is no "PyTree structure differs")."""
    attrs = dict(vars(x)) if hasattr(x, "__dict__") else {}
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        attrs = dict(zip(x._fields, x, strict=False))
    shown = {k: v for k, v in attrs.items() if not k.startswith("_") and not callable(v)}
    return f"{type(x).__qualname__}(" + ", ".join(f"{k}={plain(v, depth + 1)}" for k, v in sorted(shown.items())) + ")"


def _treedef_type() -> type | None:
    jax = sys.modules.get("jax")
    return getattr(getattr(jax, "tree_util", None), "PyTreeDef", None) if jax is not None else None


_structures: dict[Any, str] = {}


def structure(treedef: Any) -> str:
    """:func:`_structure`, kept per PyTree structure (an ``nnx.jit`` step's
    GraphDef is written once, not at every step)."""
    try:
        known = _structures.get(treedef)
    except TypeError:  # auxiliary data that cannot be hashed
        return _structure(treedef)
    if known is None:
        known = _structure(treedef)
        if len(_structures) < 1024:
            _structures[treedef] = known
    return known


def _structure(treedef: Any) -> str:
    """A PyTree structure as text that two processes of one program write
    alike (see the module docstring): ``*`` for a leaf, ``None``, else the
    node's type (qualified name), its auxiliary data by :func:`plain` (a
    dict's keys, a dataclass's static fields, an ``nnx`` GraphDef) and its
    children."""
    if treedef.num_nodes == 1 and treedef.num_leaves == 1:
        return "*"
    try:
        kind, aux = treedef.node_data()
    except Exception:  # a JAX without node_data: its text, addresses taken out
        return _ADDRESS.sub("", str(treedef))
    if kind is type(None):
        return "None"
    children = ", ".join(structure(c) for c in treedef.children())
    data = "" if aux is None else f"[{plain(aux)}]"
    return f"{_qualified(kind)}{data}({children})"


def signature(value: Any) -> dict[str, Any]:
    """The abstract signature of one argument: ``{"tree": PyTree structure,
    "leaves": [abstract leaf, ...], "n_leaves"}``; arrays as dtype and shape,
    Python scalars with their value (a hyperparameter), callables by name."""
    import jax

    leaves, treedef = jax.tree_util.tree_flatten(value, is_leaf=lambda x: x is None)
    tree = structure(treedef)
    out: dict[str, Any] = {"n_leaves": len(leaves), "leaves": [abstract_leaf(x) for x in leaves[:CAP_LEAVES]]}
    out["tree"] = _short_structure(tree)
    return out


def flatten(value: Any) -> tuple[list[Any], str, list[str]]:
    """``(leaves, PyTree structure, leaf paths)`` of a call's result; None is a leaf."""
    import jax

    pairs, treedef = jax.tree_util.tree_flatten_with_path(value, is_leaf=lambda x: x is None)
    return [x for _, x in pairs], _short_structure(structure(treedef)), [jax.tree_util.keystr(p) for p, _ in pairs]


def _short_structure(tree: str) -> str:
    return tree if len(tree) <= 2000 else tree[:2000] + f"… sha256 {hashlib.sha256(tree.encode()).hexdigest()}"


def is_traced(leaves: list[Any]) -> bool:
    """Whether any of ``leaves`` is a JAX tracer (a value under ``jit`` or a transformation)."""
    import jax

    return any(isinstance(x, jax.core.Tracer) for x in leaves)


def graph_node_type() -> type | None:
    """The base class of ``flax.nnx``'s graph nodes (``nnx.Pytree``, ``nnx.Object`` before flax 0.12); None without
    nnx."""
    nnx = sys.modules.get("flax.nnx")
    return getattr(nnx, "Pytree", None) or getattr(nnx, "Object", None)


def graph_nodes(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    """The ``flax.nnx`` graph nodes (modules, optimizers) among a call's arguments, each once."""
    kind = graph_node_type()
    if kind is None:
        return []
    nodes: dict[int, Any] = {}
    for x in (*args, *kwargs.values()):
        items = x if isinstance(x, (tuple, list)) else x.values() if isinstance(x, dict) else (x,)
        for node in items:
            if isinstance(node, kind):
                nodes.setdefault(id(node), node)
    return list(nodes.values())
