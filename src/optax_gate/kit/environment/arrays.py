"""The arrays of a file the team's run wrote in a format only its own environment reads (a Flax msgpack checkpoint).

``python -m optax_gate.kit.environment.arrays FILE`` (run by the gate with the
baseline's interpreter, which has Flax) prints one JSON object on stdout:
``{"arrays": {key: leaf}}``, each leaf as the gate's witness stores an array
(``dtype``, ``shape``, ``stride``, ``n``, ``data``: the little-endian bytes of at
most 4,096 elements, one in ``stride``, base64; ``sha256`` of all its bytes),
keyed by its path in the restored tree (``['params']['Dense_0']['kernel']``);
or ``{"error": "..."}`` when the file cannot be read so. A Flax msgpack file
(``flax.serialization.to_bytes``) is read with ``flax.serialization.msgpack_restore``,
as the team's code reads it back; an Orbax checkpoint (a folder holding
``_METADATA``, as ``orbax.checkpoint`` writes a PyTree item) with
``orbax.checkpoint.PyTreeCheckpointer().restore``, when orbax is installed there.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sys
from typing import Any

#: Most elements of one array kept (the recorder's cap).
CAP = 4096


def leaf(value: Any) -> dict[str, Any] | None:
    """One array as the witness stores it; None for what is not a numeric array or scalar."""
    import numpy as np

    arr = np.asarray(value)
    if arr.dtype.kind not in "fiub" and str(arr.dtype) != "bfloat16":
        return None
    flat = np.ascontiguousarray(arr.reshape(-1))  # the gate's hosts are little-endian (x86-64, arm64)
    stride = max(1, -(-flat.size // CAP))
    sample = flat[::stride][:CAP]
    return {
        "dtype": "bool" if arr.dtype.kind == "b" else str(arr.dtype),
        "shape": list(arr.shape),
        "stride": stride,
        "n": int(sample.size),
        "data": base64.b64encode(sample.tobytes()).decode("ascii"),
        "sha256": hashlib.sha256(flat.tobytes()).hexdigest(),
    }


def _orbax(path: str) -> Any:
    """The PyTree of the Orbax checkpoint item folder ``path``, restored as saved (on this host's devices)."""
    import orbax.checkpoint as ocp

    return ocp.PyTreeCheckpointer().restore(path)


def read(path: str) -> dict[str, Any]:
    """``{"arrays": {key: leaf}}`` of the msgpack file or Orbax checkpoint folder at ``path``, or ``{"error": why}``."""
    try:
        import jax

        if os.path.isdir(path):
            tree = _orbax(path)
        else:
            from flax import serialization

            with open(path, "rb") as handle:
                tree = serialization.msgpack_restore(handle.read())
        pairs = jax.tree_util.tree_flatten_with_path(tree)[0]
        arrays = {jax.tree_util.keystr(p): leaf(v) for p, v in pairs}
        return {"arrays": {k: v for k, v in arrays.items() if v is not None}}
    except Exception as exc:  # not a msgpack checkpoint, or no orbax here: the witness compares it by its bytes
        return {"error": f"{type(exc).__name__}: {exc}"[:300]}


if __name__ == "__main__":
    print(json.dumps(read(sys.argv[1])))
