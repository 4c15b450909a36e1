"""The run's own rounding noise: the spread of every recorded value over an ensemble of perturbed baseline runs
(``docs/team-run.md``, "Rounding or behaviour").

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from optax_gate.gate.team_run.leaves import ENSEMBLE_FACTOR, EPS, TINY, decode, is_exact, leaf_error

#: Perturbed baseline runs of the team's command (see docs/team-run.md for how the number was chosen).
MEMBERS = 3
#: A candidate's error within this many times the ensemble's spread is rounding (``kit.tolerances.ENSEMBLE_FACTOR``).
FACTOR = ENSEMBLE_FACTOR

Key = tuple[str, str, str, str, int]


def keyed(observations: list[dict[str, Any]]) -> dict[Key, dict[str, Any]]:
    """``{(site, api, call, phase, n): observation}``, ``n`` the 1-based occurrence of that call, as
    ``divergence.compare`` matches them."""
    counts: defaultdict[tuple[str, str, str, str], int] = defaultdict(int)
    out = {}
    for obs in observations:
        group = (obs["site"], obs["api"], obs["call"], obs["phase"])
        counts[group] += 1
        out[(*group, counts[group])] = obs
    return out


#: A leaf's spread: None (no member moved it), ``math.inf`` (an integer, boolean or non-finite element moved: rounding
#: alone moves it), or the largest ``|member - baseline|`` of each stored element over the members.
Spread = list[float] | float | None


def leaf_spread(base: dict[str, Any], member: dict[str, Any]) -> list[float] | float | None:
    """How far one member's leaf lies from the baseline's, element by element (see :data:`Spread`; None when
    bit-identical or not comparable here)."""
    if (
        "dtype" not in base
        or "dtype" not in member
        or base["dtype"] != member["dtype"]
        or base.get("shape") != member.get("shape")
    ):
        return None
    if not base.get("n") or not member.get("n") or base.get("data") == member.get("data"):
        return None
    b, m = decode(base), decode(member)
    if b is None or m is None or len(b) != len(m):
        return None
    if is_exact(base) or any(math.isfinite(x) != math.isfinite(y) for x, y in zip(b, m, strict=False)):
        return math.inf
    return [deviation(x, y) for x, y in zip(b, m, strict=False)]


def deviation(a: float, b: float) -> float:
    """How far ``b`` lies from ``a``: 0 when equal (two NaNs too), ``inf`` when only one is finite."""
    if a == b or (math.isnan(a) and math.isnan(b)):
        return 0.0
    if not (math.isfinite(a) and math.isfinite(b)):
        return math.inf
    return abs(a - b)


def merged(a: list[float] | float | None, b: list[float] | float | None) -> list[float] | float | None:
    """The spread of two members' together: element by element the larger."""
    if a is None or b is None:
        return b if a is None else a
    if isinstance(a, float) or isinstance(b, float):
        return math.inf
    return [max(x, y) for x, y in zip(a, b, strict=False)] if len(a) == len(b) else math.inf


def moved(spread: list[float] | float | None) -> bool:
    """Whether a spread says the ensemble moved the leaf."""
    return spread is not None and (isinstance(spread, float) or any(x > 0 for x in spread))


def beyond(
    base: dict[str, Any], cand: dict[str, Any], spread: list[float] | float | None, ulps: float
) -> tuple[bool, float | None]:
    """Whether ``cand``'s leaf lies beyond the run's rounding noise, and the largest deviation as a multiple of the
    spread among the elements beyond the ULP budget (None: no element the ensemble moved lies beyond it). An element is
    within when ``|c - b|`` is at most
    :data:`FACTOR` times its spread, or within ``ulps`` ULPs of the leaf's largest value (``leaves.leaf_error``'s rule:
    an element the perturbation does not reach keeps the ULP budget); an integer or non-finite element the ensemble
    moves (spread ``inf``) is within."""
    if spread is None or isinstance(spread, float):
        return False if spread is not None else leaf_error(base, cand) > ulps, None
    b, c = decode(base), decode(cand)
    if b is None or c is None or len(b) != len(c) or len(b) != len(spread):
        return leaf_error(base, cand) > ulps, None
    dtype = base.get("dtype", "")
    scale = max((abs(x) for x in b if math.isfinite(x)), default=0.0)
    out, ratio = False, None
    for x, y, s in zip(b, c, spread, strict=False):
        if x == y or (math.isnan(x) and math.isnan(y)):
            continue
        if not (math.isfinite(x) and math.isfinite(y)):
            return True, ratio
        delta = abs(x - y)
        if delta <= ulps * max(EPS[dtype] * max(abs(x), scale), TINY[dtype]):
            continue  # within the ULP budget: the ensemble is not needed to call it rounding
        if s > 0:
            ratio = max(ratio or 0.0, delta / s)
        if delta > FACTOR * s:
            out = True
    return out, ratio


def _leaves_spread(base: list[dict[str, Any]], member: list[dict[str, Any]]) -> list[list[float] | float | None] | None:
    if len(base) != len(member):
        return None
    return [leaf_spread(b, m) for b, m in zip(base, member, strict=False)]


def spreads(baseline: list[dict[str, Any]], members: list[list[dict[str, Any]]]) -> dict[Key, dict[str, list[Any]]]:
    """Per recorded call of the baseline, the spread of each of its input and result leaves over ``members``
    (their observations, ``trace.read``): ``{key: {"in": [...], "out": [...]}}`` (:func:`keyed`'s keys). A call
    a member does not make, or makes with another structure, adds nothing from that member."""
    base = keyed(baseline)
    out: dict[Key, dict[str, list[Any]]] = {}
    for member in members:
        theirs = keyed(member)
        for key, b in base.items():
            m = theirs.get(key)
            if m is None:
                continue
            entry = out.setdefault(
                key,
                {
                    "in": [None] * len(b.get("in") or []),
                    "out": [None] * len(((b.get("out") or {}).get("leaves")) or []),
                },
            )
            for side, bl, ml in (
                ("in", b.get("in") or [], m.get("in") or []),
                ("out", (b.get("out") or {}).get("leaves") or [], (m.get("out") or {}).get("leaves") or []),
            ):
                if side == "out" and ((b.get("out") or {}).get("tree") != (m.get("out") or {}).get("tree")):
                    continue
                found = _leaves_spread(bl, ml)
                if found is not None and len(found) == len(entry[side]):
                    entry[side] = [merged(x, y) for x, y in zip(entry[side], found, strict=False)]
    return out


def reached(entry: dict[str, list[Any]] | None) -> bool:
    """Whether the ensemble moved any leaf of a call (then its values are judged against the spread wherever it is)."""
    return entry is not None and any(moved(s) for side in ("in", "out") for s in entry[side])


def summary(table: dict[Key, dict[str, list[Any]]], members: int) -> dict[str, Any]:
    """What the report says of the ensemble: ``{"members", "factor", "calls": calls recorded, "reached": calls whose
    values the perturbation moved}``."""
    return {
        "members": members,
        "factor": FACTOR,
        "calls": len(table),
        "reached": sum(1 for e in table.values() if reached(e)),
    }


def noise_ratio(
    base: dict[str, Any], cand: dict[str, Any], entry: dict[str, list[Any]] | None, ulps: int
) -> float | None:
    """How far a call's result lies from the baseline's, as a multiple of the ensemble's spread: the largest
    ``|Δ| / spread`` over the result elements the ensemble moved that lie beyond the ``ulps`` budget (None: none)."""
    if not entry:
        return None
    bl, cl = (base.get("out") or {}).get("leaves") or [], (cand.get("out") or {}).get("leaves") or []
    ratios = [
        r
        for b, c, s in zip(bl, cl, entry.get("out") or [], strict=False)
        if isinstance(s, list) and b.get("dtype") == c.get("dtype") and b.get("shape") == c.get("shape")
        for r in [beyond(b, c, s, ulps)[1]]
        if r is not None
    ]
    return max(ratios, default=None)
