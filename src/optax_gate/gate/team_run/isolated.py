"""The Optax calls of each step's first call run alone on the baseline's own inputs, on both sides
(``optax_gate.recorder.isolate``), compared: a call that computes otherwise there is a cause, whatever rounding moved
before it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from optax_gate.gate.team_run import divergence, trace


def read(folder: Path) -> dict[str, dict[str, Any]]:
    """The ``isolated`` events of the trace files in ``folder``, keyed by their call's key (the first of each)."""
    out: dict[str, dict[str, Any]] = {}
    for event in trace.tagged_events(folder, "isolated"):
        if "key" in event:
            out.setdefault(str(event["key"]), event)
    return out


def _observation(event: dict[str, Any]) -> dict[str, Any]:
    """An isolated call as ``divergence.differences`` reads an observation: its result, its exception by type alone
    (a message may name a tracer or an address), no inputs (they are the baseline's on both sides)."""
    raised = event.get("exception")
    return {
        "site": event.get("site", ""),
        "api": event.get("isolated", ""),
        "call": event.get("call", ""),
        "phase": "isolated",
        "args": None,
        "warnings": [],
        "exception": {"type": raised.get("type"), "message": ""} if raised else None,
        "in": [],
        "out": event.get("out"),
        **({"through": event["through"]} if event.get("through") else {}),
    }


def compare(baseline: dict[str, dict[str, Any]], candidate: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Compare the calls both sides ran alone on the baseline's inputs, by the ULP budget of one call.

    Returns:
      ``{"calls": how many were compared, "same": how many of them computed the same (bit for bit or within the
      budget), "differ": [{"site", "api", "call", "kinds", "texts", "max_ulps"}] in the baseline's order,
      "skipped": {why: how many calls were not run alone}}``.
    """
    out: dict[str, Any] = {"calls": 0, "same": 0, "differ": [], "skipped": {}}
    skipped: Counter[str] = Counter()
    for key, b in baseline.items():
        c = candidate.get(key)
        why = (
            b.get("skipped")
            or (c or {}).get("skipped")
            or ("" if c is not None else "the candidate's run did not make it")
        )
        if why:
            skipped[str(why)] += 1
            continue
        ob, oc = _observation(b), _observation(c or {})
        if ob["api"] != oc["api"] or ob["call"] != oc["call"]:
            skipped["the candidate's step calls other Optax APIs in its place"] += 1
            continue
        out["calls"] += 1
        diff = divergence.differences(ob, oc, 1)
        if diff is None:
            out["same"] += 1
            continue
        out["differ"].append(
            {
                "site": ob["site"],
                "api": ob["api"],
                "call": divergence.describe(ob),
                "kinds": diff["kinds"],
                "texts": [
                    f"run alone on the baseline's own inputs, it computes something else: {t}" for t in diff["texts"]
                ],
                "max_ulps": diff["max_ulps"],
            }
        )
    out["skipped"] = dict(skipped.most_common())
    return out


def causes(found: dict[str, Any], diff: dict[str, Any]) -> dict[str, Any]:
    """``divergence.compare``'s result ``diff`` with each call that computes otherwise alone (``found``:
    :func:`compare`'s) made a cause of the run (its inputs the baseline's: nothing before it can have made the
    difference), unless the run already has a cause of that call at that line."""
    said = {(row["site"], row["call"]): row["texts"] for row in found.get("differ") or []}
    have = {(c["site"], c["call"]) for c in diff.get("causes") or []}
    out = dict(diff)
    for key in (
        "causes",
        "divergences",
    ):  # a cause the run already names: what it computes alone is said at its first row
        rows, done = [], set()
        for c in diff.get(key) or []:
            texts = said.get((c["site"], c["call"]), []) if (c["site"], c["call"]) not in done else []
            done.add((c["site"], c["call"]))
            rows.append({**c, "texts": [*c["texts"], *texts]} if texts else c)
        out[key] = rows
    first = diff.get("first")
    if first and (first["site"], first["call"]) in said:
        out["first"] = {**first, "texts": [*first["texts"], *said[(first["site"], first["call"])]]}
    new = [
        {
            "site": row["site"],
            "api": row["api"],
            "call": row["call"],
            "phase": "isolated",
            "occurrence": 1,
            "budget_ulps": divergence.budget(1),
            "kinds": row["kinds"],
            "texts": row["texts"],
            "max_ulps": row["max_ulps"],
            "role": "cause",
            "side": "both",
        }
        for row in found.get("differ") or []
        if (row["site"], row["call"]) not in have
    ]
    if not new:
        return out
    out["causes"] = [*out["causes"], *new]
    out["divergences"] = [*out["divergences"], *new]
    out["differing"] = int(diff.get("differing") or 0) + len(new)
    out["sites"] = list(dict.fromkeys([*(diff.get("sites") or []), *(r["site"] for r in new)]))
    out["first"] = diff.get("first") or new[0]
    return out
