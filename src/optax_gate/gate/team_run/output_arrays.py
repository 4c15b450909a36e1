"""The arrays of the files a team's run writes, read as stored leaves: ``.npy`` and ``.npz`` here, other formats
in the team's environment."""

from __future__ import annotations

import ast
import base64
import functools
import hashlib
import json
import struct
import zipfile
from pathlib import Path
from typing import Any

from optax_gate.gate.team_run import leaves

#: Most bytes of one file read to compare it by value (larger files are compared by their SHA-256).
READ_BYTES = 64 * 2**20


#: The ``.npy`` dtype descriptors read here (little-endian or native), by the dtype name a stored leaf carries.
DESCR = {
    "f8": "float64",
    "f4": "float32",
    "f2": "float16",
    "i8": "int64",
    "i4": "int32",
    "i2": "int16",
    "i1": "int8",
    "u8": "uint64",
    "u4": "uint32",
    "u2": "uint16",
    "u1": "uint8",
    "b1": "bool",
}


def read_npy(raw: bytes) -> dict[str, Any] | None:
    """A ``.npy`` file's array as a stored leaf (``divergence``'s format:
    dtype, shape, elements sampled as the recorder samples them, SHA-256);
    None when it is not an array of a dtype read here."""
    if raw[:6] != b"\x93NUMPY":
        return None
    major = raw[6]
    size, start = (struct.unpack("<H", raw[8:10])[0], 10) if major == 1 else (struct.unpack("<I", raw[8:12])[0], 12)
    try:
        header = ast.literal_eval(raw[start : start + size].decode("latin1"))
    except (ValueError, SyntaxError):
        return None
    descr = str(header.get("descr", ""))
    dtype = DESCR.get(descr[1:])
    if dtype is None or descr[0] == ">" or header.get("fortran_order"):
        return None
    data = raw[start + size :]
    width = struct.calcsize(leaves.FORMATS[dtype])
    count = len(data) // width
    stride = max(1, -(-count // 4096))
    sample = b"".join(data[i * width : (i + 1) * width] for i in range(0, count, stride))[: 4096 * width]
    return {
        "dtype": dtype,
        "shape": list(header.get("shape") or ()),
        "stride": stride,
        "n": len(sample) // width,
        "data": base64.b64encode(sample).decode("ascii"),
        "sha256": hashlib.sha256(data).hexdigest(),
    }


def arrays(path: Path) -> dict[str, dict[str, Any] | None] | None:
    """The arrays of a ``.npy`` (key ``""``) or ``.npz`` file, each a stored leaf or None (not readable here)."""
    if path.stat().st_size > READ_BYTES:
        return None
    if path.suffix == ".npy":
        return {"": read_npy(path.read_bytes())}
    try:
        with zipfile.ZipFile(path) as archive:
            return {name.removesuffix(".npy"): read_npy(archive.read(name)) for name in sorted(archive.namelist())}
    except (zipfile.BadZipFile, OSError):
        return None


def json_leaves(value: Any, path: str = "") -> list[tuple[str, Any]]:
    """Every leaf of a JSON value with its path (``['a'][0]``), in key order."""
    if isinstance(value, dict):
        return [leaf for k in sorted(value) for leaf in json_leaves(value[k], f"{path}[{k!r}]")]
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in json_leaves(v, f"{path}[{i}]")]
    return [(path, value)]


def env_arrays(path: Path, python: Path | None) -> dict[str, dict[str, Any] | None] | None:
    """The arrays of a file only the team's environment reads, read there (``optax_gate.kit.environment.arrays``);
    None when it cannot be read so (then it is compared by its bytes). Each file is read once per version of it
    (a process of its own that imports JAX and Flax), however often the witness compares it."""
    stats = [p.stat() for p in sorted(path.rglob("*")) if p.is_file()] if path.is_dir() else [path.stat()]
    size = sum(st.st_size for st in stats)
    if python is None or size > READ_BYTES:
        return None
    found = read_in_environment(
        str(path.resolve()), str(python), max((st.st_mtime_ns for st in stats), default=0), size
    )
    return dict(found) if found is not None else None


@functools.lru_cache(maxsize=256)
def read_in_environment(path: str, python: str, mtime_ns: int, size: int) -> dict[str, dict[str, Any] | None] | None:
    """:func:`env_arrays`' reading, kept per file version (``mtime_ns``, ``size``)."""
    import subprocess

    try:
        proc = subprocess.run(
            [python, "-m", "optax_gate.kit.environment.arrays", path], capture_output=True, text=True, timeout=300
        )
        found = json.loads(proc.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return None
    arrays = found.get("arrays") if isinstance(found, dict) else None
    return dict(arrays) if isinstance(arrays, dict) else None
