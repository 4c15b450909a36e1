"""Change and verdict logic: baseline run vs candidate run, contract by contract.

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Literal, cast

from optax_gate.gate.base import model, plain_text
from optax_gate.gate.base.run_record import ContractResult, RunRecord
from optax_gate.gate.inputs import team_contracts
from optax_gate.gate.judge import causes, findings
from optax_gate.gate.judge import verdict as verdict_
from optax_gate.gate.run import outcomes

#: A contract's change between the sides (``model.ContractRow``'s ``change``), the most severe first.
Change = Literal["broken", "changed", "fixed", "new", "gone", "unchanged"]
CHANGES: tuple[Change, ...] = ("broken", "changed", "fixed", "new", "gone", "unchanged")
#: the exit status of each verdict: its place in the verdict order (0 pass, 1 fail, 2 not verified)
EXIT_STATUS = {v: status for status, v in enumerate(verdict_.ORDER)}
_PASSING = ("passed",)
_FAILING = ("failed", "error")


def classify(baseline: str | None, candidate: str | None, kind: str, defect: bool = False) -> Change:
    """Change of one contract from its two outcomes (None: did not run);
    ``defect``: the contract pins a known upstream defect."""
    if baseline is None:
        return "new"
    if candidate is None:
        return "gone"
    if baseline == candidate:
        return "unchanged"
    if baseline in _PASSING and candidate in _FAILING:
        if defect:
            return "fixed"
        return "changed" if kind == "snapshot" else "broken"
    if baseline in (*_FAILING, "xfailed") and candidate in _PASSING:
        return "fixed"
    return "changed"


def fails_differently(baseline_detail: str, candidate_detail: str) -> bool:
    """Whether two details of a contract failing in both environments are
    different failures (``outcomes.failure_signature``)."""
    return outcomes.failure_signature(baseline_detail) != outcomes.failure_signature(candidate_detail)


def _configuration(meta: ContractResult) -> dict[str, str]:
    """The keywords a contract's configuration marker fixes (``optax_gate.pytest_plugin``), or {}."""
    try:
        value = json.loads(meta.get("configuration") or "{}")
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def compare(baseline: RunRecord, candidate: RunRecord) -> model.Report:
    """Build the report body (schema 3; the sections beyond the contracts are added by ``optax_gate.gate.diffs.unseen``)
    from two environment runs.

    Args:
      baseline, candidate: the two sides' run records.

    Returns:
      ``{"schema": 3, "verdict", "reasons", "notes", "summary", "findings",
      "baseline", "candidate", "contracts": [...]}``; contracts sorted by
      change severity, then id; ``findings`` groups the differing contracts
      by API and cause, then by upstream cause (``optax_gate.gate.judge.causes.of_report``).
    """
    base_c, cand_c = baseline.contracts, candidate.contracts
    rows: list[model.ContractRow] = []
    for cid in sorted(set(base_c) | set(cand_c)):
        b, c = base_c.get(cid), cand_c.get(cid)
        meta = c or b
        if meta is None:
            raise AssertionError("a contract of one side at least")
        b, c = (
            None if r and r["outcome"] == "skipped" and findings.ABSENT_API in (r.get("detail") or "") else r
            for r in (b, c)
        )  # the API does not exist on that side: new (or gone), not changed
        if b is None and c is None:  # absent on both sides: nothing ran
            continue
        defect = meta.get("defect", "")
        change: Change = classify(b and b["outcome"], c and c["outcome"], meta["kind"], bool(defect))
        # classify says unchanged or fixed only of a contract that ran on both sides (b and c not None)
        other_failure = (
            change == "unchanged"
            and b is not None
            and c is not None
            and b["outcome"] in _FAILING
            and fails_differently(b["detail"], c["detail"])
        )
        if other_failure:
            change = "changed"
        shown = c or b
        if shown is None:
            raise AssertionError("a contract that ran on one side at least")
        if other_failure and b is not None and c is not None:
            detail = f"fails differently: {c['detail']} (baseline: {b['detail']})"
        elif change == "fixed" and defect and c is not None and c["outcome"] in _FAILING:
            detail = f"known upstream defect no longer reproduces ({defect}); now: {c['detail']}"
        elif change == "fixed" and b is not None:
            detail = f"was: {b['detail']}" if b["detail"] else ""
        elif change == "gone":
            detail = "ran in the baseline, did not run in the candidate"
        else:
            detail = shown["detail"]
        row: model.ContractRow = {
            "id": cid,
            "api": meta["api"],
            "guide": meta["guide"],
            "kind": meta["kind"],
            "defect": defect,
            "baseline": b["outcome"] if b else None,
            "candidate": c["outcome"] if c else None,
            "change": change,
            "detail": detail,
        }
        if meta.get("team"):  # gate --contracts: the team folder's label
            row["team"] = meta["team"]
        if other_failure and b is not None:
            row["baseline_detail"] = b["detail"]
        if configuration := _configuration(meta):
            row["configuration"] = configuration
        rows.append(row)
    rows.sort(key=lambda r: (CHANGES.index(r["change"]), r["id"]))
    summary = Counter(r["change"] for r in rows)

    reasons = []
    for name, run in (("baseline", baseline), ("candidate", candidate)):
        if not run.ran:
            reasons.append(f"{name} not verified: {run.reason or 'no reason recorded'}")
    refused = [r.partition("invalid input: ")[2] for r in reasons]
    if len(refused) == 2 and refused[0] and refused[0] == refused[1]:
        reasons = [f"not run: invalid input: {refused[0]}"]  # both sides refused for one reason: said once
    if not reasons:
        if not cand_c:
            reasons.append("candidate not verified: zero contracts ran")
        if summary["gone"]:
            reasons.append(f"candidate not verified: {summary['gone']} contract(s) of the baseline did not run")
        team_failing = team_contracts.failing_at_baseline(base_c)
        if team_failing:
            reasons.append(
                f"baseline not verified: {len(team_failing)} of the team's own contract(s) fail in the baseline, "
                f"so they cannot judge the candidate: {', '.join(team_failing)}"
            )
    failing_base = sum(1 for r in base_c.values() if r["outcome"] in _FAILING)
    notes = [f"{failing_base} contract(s) already fail in the baseline"] if failing_base else []
    if same := candidate.fields.get("same_code"):  # gate.reuse.same_code: outcomes taken, not run
        notes.insert(
            0,
            f"the candidate's contracts did not run: it runs the baseline's code ({same['why']}), "
            "so each of its outcomes is the baseline's (`--no-cache` runs them)",
        )
    elif chosen := candidate.fields.get(
        "selection"
    ):  # gate.reuse.selection: the modules that execute no changed function taken
        notes.insert(0, selection_note(chosen, candidate.fields.get("from_cache")))

    verdict, reasons = verdict_.of_contracts(reasons, summary["broken"])
    return {
        "schema": 3,
        "verdict": verdict,
        "reasons": reasons,
        "notes": notes,
        "summary": {k: summary.get(k, 0) for k in CHANGES},
        "findings": causes.of_report(rows, candidate_ran=candidate.ran),
        "baseline": cast(model.BaselineRecord, _reported(baseline)),
        "candidate": cast(model.CandidateRecord, _reported(candidate)),
        "contracts": rows,
    }


def _reported(record: RunRecord) -> dict[str, Any]:
    """A run record as the report carries it: its JSON less its contracts (the report's rows) and its reach."""
    return {k: v for k, v in record.to_json().items() if k not in ("contracts", "reach")}


def _in_part(apis: dict[str, list[str]]) -> str:
    if not apis:
        return ""
    shown = plain_text.named_list(sorted({a for found in apis.values() for a in found}))
    return (
        f" ({len(apis)} of them only for the contracts of {shown}, the APIs whose contracts execute one of them: "
        "their other contracts' outcomes are the baseline's)"
    )


def selection_note(chosen: model.Selection, from_cache: model.FromCache | None = None) -> str:
    """The report's note on a candidate that ran only the modules reaching a changed function
    (``gate.reuse.selection``),
    or on one that ran every module although a selection was tried (those its own cache held excepted), and why."""
    if chosen.get("everything"):
        if from_cache and from_cache.get("modules"):
            return (
                f"every contract module of the candidate that its own cache lacked ran ({len(chosen['ran'])}; "
                f"{from_cache['modules']} came from the cache): {chosen['everything']}"
            )
        return f"every contract module of the candidate ran: {chosen['everything']}"
    ran, taken = chosen["ran"], chosen["taken"]
    changed = chosen["changed"]
    shown = ", ".join(f"`{c}`" for c in changed[:4]) + (f" and {len(changed) - 4} more" if len(changed) > 4 else "")
    return (
        f"the candidate changed the body of {len(changed)} function(s) ({shown or 'none'}) and nothing else that runs: "
        f"{len(ran)} of {len(ran) + len(taken)} contract modules ran, those that execute one of them at the baseline"
        f"{' or whose record is missing' if set(ran) - set(chosen['reached']) else ''}"
        f"{_in_part(chosen.get('apis') or {})}; the other {len(taken)} execute none of them, "
        "so their outcomes are the baseline's, taken, not run (each named under Versions; `gate "
        "--all-modules` runs them all)"
    )
