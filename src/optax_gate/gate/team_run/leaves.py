"""A recorded leaf decoded from the trace, and two leaves compared: the error in ULPs of the dtype, the change said in
words."""

from __future__ import annotations

import base64
import math
import struct
from typing import Any

#: ``optax_gate.kit.tolerances.ELEMENTWISE``.
ELEMENTWISE = 4


#: ``optax_gate.kit.tolerances.ENSEMBLE_FACTOR``.
ENSEMBLE_FACTOR = 8


#: ``optax_gate.kit.tolerances.EPS``.
EPS = {"float64": 2.0**-52, "float32": 2.0**-23, "float16": 2.0**-10, "bfloat16": 2.0**-7}


#: ``optax_gate.kit.tolerances.TINY``.
TINY = {"float64": 2.0**-1022, "float32": 2.0**-126, "float16": 2.0**-24, "bfloat16": 2.0**-126}


#: The struct format of each dtype read here (little-endian).
FORMATS = {
    "float64": "d",
    "float32": "f",
    "float16": "e",
    "int64": "q",
    "int32": "i",
    "int16": "h",
    "int8": "b",
    "uint64": "Q",
    "uint32": "I",
    "uint16": "H",
    "uint8": "B",
    "bool": "?",
}


_SIZES = {"d": 8, "q": 8, "Q": 8, "f": 4, "i": 4, "I": 4, "e": 2, "h": 2, "H": 2, "b": 1, "B": 1, "?": 1}


def decode(leaf: dict[str, Any]) -> list[float] | list[int] | None:
    """The stored elements of one leaf as Python numbers (bfloat16 widened
    exactly to float); None for a dtype this module cannot read (compared by
    its bytes instead)."""
    raw = base64.b64decode(leaf.get("data") or "")
    dtype = leaf.get("dtype", "")
    if dtype == "bfloat16":
        return [struct.unpack("<f", b"\x00\x00" + raw[i : i + 2])[0] for i in range(0, len(raw), 2)]
    fmt = FORMATS.get(dtype)
    if fmt is None:
        return None
    return list(struct.unpack(f"<{len(raw) // _SIZES[fmt]}{fmt}", raw))


def leaf_error(base: dict[str, Any], cand: dict[str, Any]) -> float:
    """Largest error of ``cand``'s stored elements against ``base``'s, in
    ULPs of the dtype (see the module docstring); 0 when equal, ``inf`` for a
    NaN or infinity on one side only, or any difference of integers, booleans
    or unreadable dtypes. Both leaves must have the same dtype and shape."""
    if base.get("data") == cand.get("data"):
        return 0.0
    b, c = decode(base), decode(cand)
    dtype = base.get("dtype", "")
    if b is None or c is None or len(b) != len(c) or dtype not in EPS:
        return math.inf
    finite = [abs(x) for x in b if math.isfinite(x)]
    scale = max(finite, default=0.0)
    worst = 0.0
    for x, y in zip(b, c, strict=False):
        if x == y or (math.isnan(x) and math.isnan(y)):
            continue
        if not (math.isfinite(x) and math.isfinite(y)):
            return math.inf
        worst = max(worst, abs(x - y) / max(EPS[dtype] * max(abs(x), scale), TINY[dtype]))
    return worst


def _number(x: float | int) -> str:
    if isinstance(x, float) and math.isnan(x):
        return "NaN"
    return f"{x:.9g}" if isinstance(x, float) else str(x)


def value_change(base: dict[str, Any], cand: dict[str, Any]) -> str:
    """What a person reads of how one leaf's stored values moved (its dtype
    may differ): a NaN or infinity that became finite, or back (``NaN →
    0.01``, the element's index for an array); a scalar's value before and
    after (``1.354 → 1.244``); else the largest absolute difference and the
    relative one beside it (``largest |Δ| 3.1e-09, relative 2.4e-07``). ""
    when the stored values are equal or cannot be read."""
    b, c = decode(base), decode(cand)
    if not b or not c or len(b) != len(c) or b == c:
        return ""
    scalar = len(b) == 1 and not base.get("shape")
    for i, (x, y) in enumerate(zip(b, c, strict=False)):
        fx, fy = math.isfinite(x), math.isfinite(y)
        if fx != fy:
            where = "" if scalar else f" at element {i * int(base.get('stride') or 1)}"
            return f"{_number(x)} → {_number(y)}{where}" + ("" if fy else " (no longer finite)")
    if scalar:
        return f"{_number(b[0])} → {_number(c[0])}"
    pairs = [(abs(x - y), x, y) for x, y in zip(b, c, strict=False) if math.isfinite(x) and math.isfinite(y) and x != y]
    if not pairs:
        return ""
    delta, x, y = max(pairs)
    scale = max((abs(v) for v in b if math.isfinite(v)), default=0.0)
    relative = f", relative {delta / scale:.2g} of the leaf's largest value" if scale else ""
    return f"largest |Δ| {delta:.2g} ({_number(x)} → {_number(y)}){relative}"


def is_exact(leaf: dict[str, Any]) -> bool:
    """Whether a leaf's values are compared exactly (integers, booleans, keys: any difference is one)."""
    return leaf.get("dtype", "") not in EPS


#: ULP counts past this are no rounding (a leaf all zeros on one side is measured against the dtype's
#: smallest normal, 1.28e+36 ULP, which reads as no number); they are said as "more than" it.
ULP_SAID = 1e12


def said_ulps(x: float) -> str:
    """An error in ULPs as the report says it (``inf``; past :data:`ULP_SAID`, "more than" it)."""
    return "inf" if math.isinf(x) else f"more than {ULP_SAID:.0e}" if x > ULP_SAID else f"{x:.3g}"


def short_leaf(leaf: dict[str, Any]) -> str:
    """A recorded leaf in a few words: its Python value, or its dtype and shape."""
    if "py" in leaf:
        return f"{leaf['value']}"
    if "dtype" in leaf:
        return f"{leaf['dtype']}{list(leaf.get('shape') or [])}"
    return str(leaf.get("callable") or leaf.get("type") or leaf)


def bit_error(base: dict[str, Any], cand: dict[str, Any]) -> float | None:
    """How far two matched observations' results are from bit-identical:
    None when they are (every leaf's digest equal), else the largest error in
    ULPs over the leaves both store (0.0 when only a digest tells them apart).
    A structure, dtype or shape change is :func:`differences`' to say: None."""
    bo, co = base.get("out"), cand.get("out")
    if not bo or not co or bo.get("tree") != co.get("tree"):
        return None
    bl, cl = bo.get("leaves") or [], co.get("leaves") or []
    if len(bl) != len(cl):
        return None
    worst, differs = 0.0, False
    for b, c in zip(bl, cl, strict=False):
        if "dtype" not in b or "dtype" not in c or b["dtype"] != c["dtype"] or b.get("shape") != c.get("shape"):
            continue
        differs = differs or b.get("sha256") != c.get("sha256")
        if b.get("n") and c.get("n"):
            error = leaf_error(b, c)
            worst, differs = max(worst, error), differs or error > 0
    return worst if differs else None
