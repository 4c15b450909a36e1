"""A contract's measured numbers read from its failure detail: ULP figures, snapshot drift, non-finite leaves, recorded
messages.

No NumPy here (the gate never imports the libraries under test); the machine
epsilons repeat ``optax_gate.kit.tolerances.EPS`` (a meta test keeps them equal).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from optax_gate.gate.base.corner_words import outcome_words

#: Machine epsilon per dtype name, as ``optax_gate.kit.tolerances.EPS``.
EPS = {"float64": 2.0**-52, "float32": 2.0**-23, "float16": 2.0**-10, "bfloat16": 2.0**-7}
#: Bytes per element of the dtypes a snapshot signature names.
ITEMSIZE = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint64": 8,
    "uint32": 4,
    "uint16": 2,
    "uint8": 1,
    "bool": 1,
    "complex64": 8,
    "complex128": 16,
}
DTYPE = r"(?:bfloat16|float16|float32|float64|u?int(?:8|16|32|64)|bool|complex64|complex128)"
_ULP = re.compile(
    r"(?P<what>[^:]*): element \((?P<index>[^)]*)\) is (?P<actual>.+?), expected (?P<expected>.+?) "
    r"\(error (?P<error>\S+), bound (?P<bound>\S+) = (?P<ulps>\d+) ULP of (?P<dtype>\w+); "
    r"worst error (?P<worst>\S+) ULP\)"
)
NP_SCALAR = re.compile(r"np\.(?:float|int)\d+\(([^()]*)\)")
_SIGNATURE = re.compile(rf"^(?P<dtype>{DTYPE})\[(?P<shape>[^\]]*)\](?:=(?P<value>.*))?$")


def _float(text: str) -> float:
    m = NP_SCALAR.fullmatch(text.strip())
    try:
        return float(m.group(1) if m else text)
    except ValueError:
        return float("nan")


@dataclass(frozen=True)
class Ulp:
    """One ``assert_close`` failure: worst element, its error, the bound."""

    what: str
    index: str
    actual: float
    expected: float
    error: float
    bound: float
    ulps: int
    dtype: str
    worst_ulps: float
    span: tuple[int, int]  # where the message sits in the detail

    @property
    def relative(self) -> float:
        """Error of the element relative to its expected value (or to the
        bound's scale when the expected value is zero)."""
        if self.expected:
            return abs(self.error / self.expected)
        scale = self.bound / (self.ulps * EPS.get(self.dtype, float("nan"))) if self.ulps else 0.0
        return self.error / scale if scale else float("inf")

    @property
    def worst_relative(self) -> float:
        """Worst error of the leaf relative to its largest expected value."""
        return self.worst_ulps * EPS.get(self.dtype, float("nan"))


def parse_ulp(detail: str) -> Ulp | None:
    """The ``kit.tolerances.assert_close`` message in ``detail``, or None."""
    m = _ULP.search(detail or "")
    if not m:
        return None
    return Ulp(
        m["what"].strip(),
        m["index"],
        _float(m["actual"]),
        _float(m["expected"]),
        float(m["error"]),
        float(m["bound"]),
        int(m["ulps"]),
        m["dtype"],
        float(m["worst"]),
        (m.start("what") + len(m["what"]) - len(m["what"].lstrip()), m.end()),
    )


@dataclass(frozen=True)
class Drift:
    """One leaf of a snapshot drift: ``path: old -> new`` (signatures
    ``dtype[shape]`` or ``dtype[shape]=value``; ``absent``)."""

    path: str
    old: str
    new: str

    def _part(self, sig: str, name: str) -> str | None:
        m = _SIGNATURE.match(sig)
        return m[name] if m else None

    @property
    def dtypes(self) -> tuple[str | None, str | None]:
        """The leaf's dtype in the old and the new value (None where a value does not say it)."""
        return self._part(self.old, "dtype"), self._part(self.new, "dtype")

    @property
    def shapes(self) -> tuple[str | None, str | None]:
        """The leaf's shape in the old and the new value (None where a value does not say it)."""
        return self._part(self.old, "shape"), self._part(self.new, "shape")

    @property
    def values(self) -> tuple[str | None, str | None]:
        """The leaf's value in the old and the new recorded outcome (None where one has none)."""
        return self._part(self.old, "value"), self._part(self.new, "value")

    @property
    def cut(self) -> bool:
        """The row's detail was cut short inside this leaf's new value
        (``absent…``, ``optax_gate.gate.run.outcomes.MESSAGE_LIMIT``): it says
        no direction and no outcome."""
        return self.new.endswith("…")

    @property
    def what(self) -> str:
        """What drifted: ``added``, ``removed``, ``dtype``, ``shape`` or ``value``."""
        if self.old == "absent" or self.new == "absent":
            return "added" if self.old == "absent" else "removed"
        if self.dtypes[0] != self.dtypes[1]:
            return "dtype"
        return "shape" if self.shapes[0] != self.shapes[1] else "value"

    @property
    def slot(self) -> str:
        """The state entry the leaf belongs to: the path without its last key
        (``.acc_grads['bias']`` -> ``.acc_grads``)."""
        return re.sub(r"(\['[^']*'\]|\[\d+\]|\.\w+)$", "", self.path) or self.path


def parse_drift(detail: str) -> list[Drift]:
    """The leaves of a ``snapshot drift: path: old -> new; ...`` detail
    (``optax_gate.gate.run.outcomes.snapshot_diff``), or [] for another detail."""
    if not (detail or "").startswith("snapshot drift: "):
        return []
    leaves = []
    for item in detail[len("snapshot drift: ") :].split("; "):
        path, sep, change = item.rpartition(": ")
        old, arrow, new = change.partition(" -> ")
        if sep and arrow:
            leaves.append(Drift(path, old, new))
    return leaves


def state_cost(leaves: list[Drift], name_dtypes: bool = True) -> list[str]:
    """What a dtype change of optimizer state costs, per state entry:
    ``"`.acc_grads` bfloat16 → float32: 2 → 4 bytes per parameter"``; entries
    of scalars (hyperparameters, counters) cost nothing per parameter and come
    last. ``name_dtypes=False`` leaves out the dtypes (said once elsewhere)."""
    slots: dict[str, list[Drift]] = {}
    for leaf in leaves:
        old, new = leaf.dtypes
        if old and new and old != new:
            slots.setdefault(leaf.slot, []).append(leaf)
    per_parameter, scalars = [], []
    for slot, group in slots.items():
        pairs = sorted(
            {(o, n) for o, n in (leaf.dtypes for leaf in group) if o and n}
        )  # drops none: the group holds dtype changes only
        change = " " + ", ".join(f"{o} → {n}" for o, n in pairs) if name_dtypes else ""
        if all(leaf.shapes[0] == "" for leaf in group):
            scalars.append(f"`{slot}`{change} (scalars, no cost per parameter)")
            continue
        before = "/".join(sorted({str(ITEMSIZE.get(o, "?")) for o, _ in pairs}))
        after = "/".join(sorted({str(ITEMSIZE.get(n, "?")) for _, n in pairs}))
        per_parameter.append(f"`{slot}`{change}{':' if name_dtypes else ''} {before} → {after} bytes per parameter")
    return per_parameter + scalars


def drift_kinds(leaves: list[Drift]) -> str:
    """What drifted, most telling first: ``"dtype"``, ``"dtype, shape"``, ``"value"``."""
    found = {leaf.what for leaf in leaves}
    return ", ".join(k for k in ("dtype", "shape", "added", "removed", "value") if k in found)


#: Input classes of the generated non-finite snapshot
#: (``optax_gate.kit.surface.probe.nonfinite``): their recorded value is the list
#: of update leaves (``r0`` … ``r5``, by rank) that come out non-finite, or ``none``.
NONFINITE_CLASSES = ("nan_inf_grads", "nan_param", "zero_hyperparams")


def nonfinite_leaves(value: str) -> str:
    """A recorded non-finite list in words: ``'[''r3'']'`` -> ``r3``; ``none`` -> ``none``."""
    leaves = re.findall(r"r\d+", value or "")
    return " ".join(dict.fromkeys(leaves)) if leaves else (value or "").strip("'\" ") or "none"


def _nonfinite_set(value: str) -> set[str] | None:
    """The leaves of a recorded non-finite list (``r3 r5``, ``none``: empty),
    or None for ``all`` (every output) and for a value that lists none."""
    words = nonfinite_leaves(value)
    if words in ("none", "absent"):
        return set()
    leaves = set(re.findall(r"r\d+", words))
    return leaves or None


def nonfinite_direction(old: str, new: str) -> str:
    """``"fewer"``, ``"more"`` or ``"other"``: how the non-finite outputs of a
    generated record moved from ``old`` (baseline) to ``new`` (candidate).
    ``none``/``absent`` is no output, ``all`` every output; leaf lists compare
    as sets (``r1 r3`` -> ``r3`` is fewer, ``r3`` -> ``r1 r3`` more)."""
    a, b = _nonfinite_set(old), _nonfinite_set(new)
    if a == b:
        return "other"
    if b == set() or (a is None and b is not None):
        return "fewer"
    if a == set() or (b is None and a is not None):
        return "more"
    if a is not None and b is not None:
        return "fewer" if b < a else "more" if a < b else "other"
    return "other"


def nonfinite_words(direction: str) -> str:
    """``"fewer non-finite outputs"`` / ``"more non-finite outputs"`` /
    ``"other outputs come out non-finite"`` (the same number, other leaves)."""
    return {"fewer": "fewer non-finite outputs", "more": "more non-finite outputs"}.get(
        direction, "other outputs come out non-finite"
    )


#: Characters of an exception's message that a corner snapshot records
#: (``optax_gate.kit.corners.outcome.message``'s ``limit``, under keys
#: ``corner.<corner>/error``): a recorded message this long was cut there.
RECORDED_MESSAGE_LIMIT = 50


#: Key prefix of the corner-grid snapshots (``optax_gate.kit.corners``): an API's outcome at one corner input
#: (an empty leaf, a -inf logit in forward mode, a wrapper's bfloat16 state through a scan), not optimizer state.
CORNER_PREFIX = "corner."
#: A key of the hyperparameter range grid's snapshots (``optax_gate.kit.corners.ranges``): one value of one
#: hyperparameter, ``eps=-1e-08``, or its recorded message, ``eps=-1e-08/error``.
RANGE_KEY = re.compile(r"[A-Za-z_]\w*=[^/:\s]+(?:/error)?")


def corner_name(path: str) -> str | None:
    """The corner a snapshot key is of: ``corner.<corner>[/<output>]`` -> ``<corner>[/<output>]``, a range key
    (:data:`RANGE_KEY`) as it is; None for a key of another record."""
    if path.startswith(CORNER_PREFIX):
        return path[len(CORNER_PREFIX) :]
    return path if RANGE_KEY.fullmatch(path) else None


def is_recorded_message(path: str) -> bool:
    """Whether a snapshot key holds a corner's recorded exception message."""
    return path.endswith("/error") and corner_name(path) is not None


def recorded_message(value: Any) -> str:
    """A recorded exception message in double quotes, with "…" where the
    recording cut it (:data:`RECORDED_MESSAGE_LIMIT`): never a bare value
    that ends mid-word ("Error in typ")."""
    text = str(value)
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1]
    return f'"{text}…"' if len(text) >= RECORDED_MESSAGE_LIMIT else f'"{text}"'


def _leaf_words(leaf: Drift) -> str:
    if is_recorded_message(leaf.path) and leaf.what == "value":
        return (
            f"`{leaf.path}` the message {recorded_message(leaf.old)} → {recorded_message(leaf.new)} "
            f"(the first {RECORDED_MESSAGE_LIMIT} characters are recorded)"
        )
    if leaf.path in NONFINITE_CLASSES:
        return (
            f"{nonfinite_words(nonfinite_direction(leaf.old, leaf.new))}: `{leaf.path}`: non-finite update leaves "
            f"{nonfinite_leaves(leaf.old)} in the baseline, {nonfinite_leaves(leaf.new)} now"
        )
    if leaf.what == "value" and corner_name(leaf.path) is not None:  # a corner's record in words, not its shorthand
        return f"`{leaf.path}` {outcome_words(leaf.old)} → {'(cut short)' if leaf.cut else outcome_words(leaf.new)}"
    if leaf.what == "value":
        old, new = leaf.values
        if old is None and new is None:  # a recorded word, not a typed value (``r1,r3`` -> ``none``): say the words
            old, new = leaf.old, leaf.new
        try:
            if new is None or old is None:  # a side without a value: no counter (as int(None) raises)
                raise TypeError("no value to count")
            diff = f"off by {abs(int(new) - int(old))}, budget 0 (a counter, recorded exactly)"
        except (TypeError, ValueError):
            diff = "budget 0 (recorded exactly)"
        return f"`{leaf.path}` {old} → {new}: {diff}"
    if leaf.what in ("added", "removed"):
        value = leaf.new if leaf.what == "added" else leaf.old
        return f"`{leaf.path}` {leaf.what} ({outcome_words(value) if corner_name(leaf.path) is not None else value})"
    return f"`{leaf.path}` {leaf.old} → {leaf.new}"


def drift_words(leaves: list[Drift]) -> str:
    """A snapshot drift in words: what drifted, each leaf, what a dtype change costs."""
    text = f"{drift_kinds(leaves)} drift: " + "; ".join(_leaf_words(leaf) for leaf in leaves)
    costs = state_cost(leaves)
    return text + (" — costs: " + "; ".join(costs) if costs else "")
