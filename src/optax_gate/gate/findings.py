"""Findings: the differing contracts of a gate report grouped by API and cause,
for a person who reads the first lines only; and the plain-words rendering of
a contract's failure detail.

A *finding* is the set of contracts of one API, with one change (``broken``,
``changed``, ``fixed``, ``new``, ``gone``), whose failure details share one
cause. The cause is read from the detail's pattern:

=================  ============================================================  =======================
cause              detail it recognises                                          grouped by
=================  ============================================================  =======================
``defect``         a pinned upstream defect that no longer reproduces            defect id
``numeric``        ``kit.tolerances.assert_close``'s message: ``element (i) is   dtype of the result
                   a, expected e (error E, bound B = N ULP of DTYPE; worst
                   error W ULP)``
``dtype``          ``expected DTYPE, got ...: DTYPE``                            dtypes got instead
``nonfinite``      snapshot drift of the generated non-finite record only        the input classes
                   (``nan_param: '[''r3'']' -> none``)
``state-dtype``    snapshot drift whose leaves changed dtype                     the (old, new) dtype
                   (``.acc_grads['bias']: bfloat16[2] -> float32[2]``)           pairs
``state-shape``    snapshot drift whose leaves changed shape                     the leaf paths
``state-value``    snapshot drift of values only (``count: int32[]=0 ->          the leaf paths
                   int32[]=1``)
``message``        anything else                                                 the message with numbers,
                                                                                 quoted values and step or
                                                                                 leaf indices replaced by ``#``
``new-uncontracted``  ``new, not contracted``: a public name no surface table knows  the API
``new``/``gone``   ran in only one environment                                   (one cause; every API
                                                                                 together when the candidate
                                                                                 did not run at all)
=================  ============================================================  =======================

Parametrize ids never enter a key (they are in the contract id, not the
detail), so ``test_x[float16]`` and ``test_x[bfloat16]`` failing the same way
are one finding. Findings are ordered broken, changed, fixed, new, gone, then
by the number of contracts (most first), then API. Each is one line:
``"`optax.MultiSteps`: <cause> (4 contracts broken: <tests>)"``.

Plain words (:func:`plain_detail`): an ULP figure gets the error, the relative
error and the tolerance it was measured against; a dtype change of optimizer
state gets its cost in bytes per parameter; a pinned defect that stopped
reproducing says so instead of its ``passed -> failed`` outcomes.

No NumPy here (the gate never imports the libraries under test); the machine
epsilons repeat ``optax_gate.kit.tolerances.EPS`` (a meta test keeps them equal).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

ORDER = ("broken", "changed", "fixed", "new", "gone")
#: Machine epsilon per dtype name, as ``optax_gate.kit.tolerances.EPS``.
EPS = {"float64": 2.0**-52, "float32": 2.0**-23, "float16": 2.0**-10, "bfloat16": 2.0**-7}
#: Bytes per element of the dtypes a snapshot signature names.
ITEMSIZE = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "int16": 2,
            "int8": 1, "uint64": 8, "uint32": 4, "uint16": 2, "uint8": 1, "bool": 1, "complex64": 8, "complex128": 16}
DEFECT_PREFIX = "known upstream defect no longer reproduces"
_DTYPE = r"(?:bfloat16|float16|float32|float64|u?int(?:8|16|32|64)|bool|complex64|complex128)"
_ULP = re.compile(
    r"(?P<what>[^:]*): element \((?P<index>[^)]*)\) is (?P<actual>.+?), expected (?P<expected>.+?) "
    r"\(error (?P<error>\S+), bound (?P<bound>\S+) = (?P<ulps>\d+) ULP of (?P<dtype>\w+); "
    r"worst error (?P<worst>\S+) ULP\)")
_NP_SCALAR = re.compile(r"np\.(?:float|int)\d+\(([^()]*)\)")
_WANT_GOT = re.compile(rf"(?P<what>[^:]*): expected (?P<want>{_DTYPE}), got (?P<got>.*)")
_SIGNATURE = re.compile(rf"^(?P<dtype>{_DTYPE})\[(?P<shape>[^\]]*)\](?:=(?P<value>.*))?$")


def number(x: float) -> str:
    """``x`` with two significant digits, exponent without padding: ``3.8e-9``."""
    text = f"{x:.2g}"
    return re.sub(r"e([+-])0*(\d)", lambda m: "e" + ("-" if m.group(1) == "-" else "") + m.group(2), text)


def _float(text: str) -> float:
    m = _NP_SCALAR.fullmatch(text.strip())
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
    return Ulp(m["what"].strip(), m["index"], _float(m["actual"]), _float(m["expected"]), float(m["error"]),
               float(m["bound"]), int(m["ulps"]), m["dtype"], float(m["worst"]),
               (m.start("what") + len(m["what"]) - len(m["what"].lstrip()), m.end()))


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
        return self._part(self.old, "dtype"), self._part(self.new, "dtype")

    @property
    def shapes(self) -> tuple[str | None, str | None]:
        return self._part(self.old, "shape"), self._part(self.new, "shape")

    @property
    def slot(self) -> str:
        """The state entry the leaf belongs to: the path without its last key
        (``.acc_grads['bias']`` -> ``.acc_grads``)."""
        return re.sub(r"(\['[^']*'\]|\[\d+\]|\.\w+)$", "", self.path) or self.path


def parse_drift(detail: str) -> list[Drift]:
    """The leaves of a ``snapshot drift: path: old -> new; ...`` detail
    (``optax_gate.gate.outcomes.snapshot_diff``), or [] for another detail."""
    if not (detail or "").startswith("snapshot drift: "):
        return []
    leaves = []
    for item in detail[len("snapshot drift: "):].split("; "):
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
        pairs = sorted({leaf.dtypes for leaf in group})
        change = " " + ", ".join(f"{o} → {n}" for o, n in pairs) if name_dtypes else ""
        if all(leaf.shapes[0] == "" for leaf in group):
            scalars.append(f"`{slot}`{change} (scalars, no cost per parameter)")
            continue
        before = "/".join(sorted({str(ITEMSIZE.get(o, "?")) for o, _ in pairs}))
        after = "/".join(sorted({str(ITEMSIZE.get(n, "?")) for _, n in pairs}))
        per_parameter.append(f"`{slot}`{change}{':' if name_dtypes else ''} {before} → {after} bytes per parameter")
    return per_parameter + scalars


def _normalise(text: str) -> str:
    """A detail's pattern: numbers, quoted values, NumPy scalars and indices -> ``#``."""
    text = _NP_SCALAR.sub("#", text or "")
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "#", text)
    text = re.sub(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?", "#", text)
    return re.sub(r"#(?:[\s,#]*#)*", "#", text)


def _shorten(text: str, limit: int = 140) -> str:
    """``text`` on one line, at most ``limit`` characters: cut at a word's end
    (mid-word only when the last space is far back), with an ellipsis."""
    text = " ".join((text or "").split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit * 2 // 3 else cut).rstrip(" ,;:") + "…"


#: Input classes of the generated non-finite snapshot
#: (``optax_gate.kit.surface_probe.nonfinite``): a drift of these keys is about
#: which updates come out non-finite, not about the optimizer state.
NONFINITE_CLASSES = ("nan_inf_grads", "nan_param", "zero_hyperparams")
#: The skip reason of ``test_surface_sweep.py::test_known`` for a public name
#: the surface tables do not know (outside the baseline).
NOT_CONTRACTED = "new, not contracted"


def _defect_parts(row: dict[str, Any]) -> tuple[str, str, str]:
    """(id, reason, what happens now) of a fixed row pinning a defect."""
    defect = row.get("defect") or ""
    ident, _, reason = defect.partition(": ")
    prefix = f"{DEFECT_PREFIX} ({defect}); now: "
    detail = row.get("detail") or ""
    return ident, reason, detail[len(prefix):] if detail.startswith(prefix) else ""


def is_defect_fixed(row: dict[str, Any]) -> bool:
    """A pinned upstream defect that stopped reproducing (the contract now fails)."""
    return row.get("change") == "fixed" and bool(row.get("defect")) and row.get("candidate") in ("failed", "error")


def _cause(row: dict[str, Any], candidate_ran: bool) -> tuple[tuple, Any]:
    """(grouping key, parsed evidence) of one differing contract."""
    change, detail = row["change"], row.get("detail") or ""
    if change == "new" and NOT_CONTRACTED in detail:  # a public name no surface table knows (test_surface_sweep)
        return ("new-uncontracted", row["api"]), None
    if change in ("new", "gone"):
        return (change, row["api"] if candidate_ran or change == "new" else "*"), None
    if is_defect_fixed(row):
        return ("defect", _defect_parts(row)[0]), _defect_parts(row)
    if change == "fixed":
        return ("was", _normalise(detail)), detail.removeprefix("was: ")
    leaves = parse_drift(detail)
    if leaves and all(leaf.path in NONFINITE_CLASSES for leaf in leaves):
        return ("nonfinite", tuple(sorted(leaf.path for leaf in leaves))), leaves
    if leaves:
        pairs = tuple(sorted({leaf.dtypes for leaf in leaves if None not in leaf.dtypes and leaf.dtypes[0] != leaf.dtypes[1]}))
        if pairs:
            return ("state-dtype", pairs), leaves
        reshaped = tuple(sorted(_normalise(leaf.path) for leaf in leaves if leaf.shapes[0] != leaf.shapes[1]))
        if reshaped:
            return ("state-shape", reshaped), leaves
        return ("state-value", tuple(sorted(_normalise(leaf.path) for leaf in leaves))), leaves
    ulp = parse_ulp(detail)
    if ulp:
        return ("numeric", ulp.dtype), ulp
    m = _WANT_GOT.search(detail)
    if m:
        got = tuple(sorted(set(re.findall(_DTYPE, m["got"])) - {m["want"]}))
        if got:
            return ("dtype", got), m
    return ("message", row.get("baseline"), row.get("candidate"), _normalise(detail)), detail


def _subject(matches: list[re.Match]) -> str:
    """What came out in the wrong dtype, from the details' own words."""
    names = []
    for m in matches:
        root = re.match(r"\s*\['([^']+)'\]", m["got"])
        words = [w for w in re.findall(r"[A-Za-z_]+", m["what"]) if w not in ("AssertionError", "step", "leaf")]
        name = root[1] if root else (words[-1] if words else "")
        if name and name not in names and name + "s" not in names:
            names = [n for n in names if n != name.rstrip("s")] + [name]
    return " and ".join(names) or "results"


def _text(key: tuple, evidence: list[Any], rows: list[dict[str, Any]]) -> str:
    kind = key[0]
    if kind == "gone":
        return "did not run in the candidate"
    if kind == "new":
        return "runs only in the candidate"
    if kind == "new-uncontracted":
        return "new, not contracted: public in the candidate, in no table of the generated surface contracts"
    if kind == "defect":
        ident, reason, _ = evidence[0]
        return f"known upstream defect `{ident}` no longer reproduces ({reason})"
    if kind == "was":
        return f"passes now; failed in the baseline: {_shorten(evidence[0], 90)}"
    if kind == "state-dtype":
        costs = state_cost([leaf for leaves in evidence for leaf in leaves], name_dtypes=len(key[1]) > 1)
        pairs = ", ".join(f"{o} → {n}" for o, n in key[1])
        return f"optimizer state {pairs}: " + "; ".join(dict.fromkeys(costs))
    if kind == "state-shape":
        leaf = next(leaf for leaf in evidence[0] if leaf.shapes[0] != leaf.shapes[1])
        return f"optimizer state changes shape: `{leaf.path}` [{leaf.shapes[0]}] → [{leaf.shapes[1]}]"
    if kind == "nonfinite":
        leaf = evidence[0][0]
        more = f" and {len(evidence[0]) - 1} more input classes" if len(evidence[0]) > 1 else ""
        return f"other updates come out non-finite: `{leaf.path}` {leaf.old} → {leaf.new}{more}"
    if kind == "state-value":
        leaf = evidence[0][0]
        old, new = (leaf.old.partition("=")[2] or leaf.old), (leaf.new.partition("=")[2] or leaf.new)
        more = f" and {len(evidence[0]) - 1} more leaves" if len(evidence[0]) > 1 else ""
        return f"optimizer state holds other values: `{leaf.path}` {old} → {new}{more}"
    if kind == "numeric":
        dtype = key[1]
        worst = max(u.worst_relative for u in evidence)
        lo, hi = min(u.ulps for u in evidence), max(u.ulps for u in evidence)
        allowed = f"{lo}" if lo == hi else f"{lo} to {hi}"
        narrower = [d for d in ("float32", "float16", "bfloat16") if EPS[d] > EPS.get(dtype, 1.0) and worst <= EPS[d]]
        size = f"have {narrower[0]}-sized errors" if narrower else "are off"
        return (f"{dtype} results {size}: off by up to {number(worst)} relative = "
                f"{number(max(u.worst_ulps for u in evidence))} ULP of {dtype}, allowed {allowed} ULP")
    if kind == "dtype":
        wanted = "/".join(dict.fromkeys(m["want"] for m in evidence))
        return f"{_subject(evidence)} come out {'/'.join(key[1])} instead of {wanted}"
    first = evidence[0]
    outcomes = f"{rows[0].get('baseline')} → {rows[0].get('candidate')}"
    return f"{outcomes}: {_shorten(first)}" if first else outcomes


def test_name(contract_id: str) -> tuple[str, str]:
    """(test in plain words, parametrize id) of a pytest node id:
    ``test_multi_steps.py::test_trajectory_over_two_full_cycles[float64-k2]`` ->
    ``("trajectory over two full cycles", "float64-k2")``."""
    func = contract_id.rsplit("::", 1)[-1]
    name, _, params = func.partition("[")
    return name.removeprefix("test_").replace("_", " "), params.rstrip("]")


def group(rows: list[dict[str, Any]], candidate_ran: bool = True) -> list[dict[str, Any]]:
    """The findings of a report's contract rows.

    Args:
      rows: the report's ``contracts`` (``{"id", "api", "change", "detail",
        "defect", "baseline", "candidate", ...}``); unchanged rows are ignored.
      candidate_ran: False when the candidate did not run at all: its ``gone``
        contracts are then one finding for every API, not one per API.

    Returns:
      ``[{"number", "change", "api", "cause", "key", "contracts": [ids],
      "tests": [[plain test name, count]], "text"}]`` in report order (see the
      module docstring), numbered from 1.
    """
    groups: dict[tuple, dict[str, Any]] = {}
    for row in rows:
        if row["change"] not in ORDER:
            continue
        key, evidence = _cause(row, candidate_ran)
        api = "every API" if key[:2] == ("gone", "*") else row["api"]
        g = groups.setdefault((row["change"], api, key), {"rows": [], "evidence": []})
        g["rows"].append(row)
        g["evidence"].append(evidence)
    findings = []
    for (change, api, key), g in sorted(groups.items(), key=lambda kv: (ORDER.index(kv[0][0]), -len(kv[1]["rows"]), kv[0][1])):
        tests: dict[str, int] = {}
        for row in g["rows"]:
            name = test_name(row["id"])[0]
            tests[name] = tests.get(name, 0) + 1
        cause = _text(key, g["evidence"], g["rows"])
        n = len(g["rows"])
        listed = ", ".join(f"{name} ×{k}" if k > 1 else name for name, k in tests.items())
        findings.append({
            "number": len(findings) + 1, "change": change, "api": api, "cause": cause, "key": key[0],
            "contracts": [row["id"] for row in g["rows"]], "tests": [[name, k] for name, k in tests.items()],
            "text": f"`{api}`: {cause} ({n} contract{'s' if n > 1 else ''} {change}: {listed})",
        })
    return findings


def plain_detail(row: dict[str, Any]) -> str:
    """A contract row's detail in plain words (see the module docstring); the
    detail unchanged when no pattern applies."""
    detail = row.get("detail") or ""
    if is_defect_fixed(row):
        ident, reason, now = _defect_parts(row)
        return f"{ident}: {reason}" + (f"; now: {now}" if now else "")
    ulp = parse_ulp(detail)
    if ulp:
        start, end = ulp.span
        head = _NP_SCALAR.sub(r"\1", detail[:start])
        words = (f"{ulp.what}: element ({ulp.index}) is {ulp.actual!r}, expected {ulp.expected!r}: "
                 f"off by {number(ulp.error)} (relative {number(ulp.relative)}; worst {number(ulp.worst_ulps)} ULP of {ulp.dtype}), "
                 f"allowed {ulp.ulps} ULP of {ulp.dtype} = {number(ulp.bound)}")
        return head + words + detail[end:]
    leaves = parse_drift(detail)
    costs = state_cost(leaves) if leaves else []
    if costs:
        return f"{detail} — costs: " + "; ".join(costs)
    return detail


def outcome_words(row: dict[str, Any]) -> str:
    """The ``baseline → candidate`` cell: outcomes, or what they mean for a
    pinned defect that stopped reproducing."""
    if is_defect_fixed(row):
        return "defect no longer reproduces"
    b, c = row.get("baseline"), row.get("candidate")
    return f"{b if b is not None else 'did not run'} → {c if c is not None else 'did not run'}"
