"""A run record of the gate (the form run.json holds), built from contract outcomes, and two of them judged."""

from __future__ import annotations

from typing import Any

from optax_gate.gate import assemble
from optax_gate.gate.base import model
from optax_gate.gate.base.run_record import RunRecord
from optax_gate.gate.diffs import unseen
from optax_gate.gate.inputs.options import ScopeOptions
from optax_gate.gate.judge import compare


def record(status: Any = "ran", reason: Any = "", **outcomes: Any) -> Any:
    """A run record whose contracts are ``id=outcome`` (kind from the id prefix)."""
    contracts = {
        cid: {"api": "optax.sgd", "guide": "g", "kind": cid.split("_")[0], "outcome": o, "detail": f"{o} detail"}
        for cid, o in outcomes.items()
    }
    return {"label": "x", "status": status, "reason": reason, "versions": {}, "contracts": contracts}


def judged(base: Any, cand: Any, scope: ScopeOptions | None = None, **beyond: Any) -> model.Report:
    """The report of two run records (their JSON) with the sections beyond the contracts, as the gate assembles it
    (``compare.compare``, then ``unseen.beyond`` with ``scope`` and ``beyond``'s keywords, e.g. ``packages``)."""
    baseline, candidate = RunRecord.from_json(base), RunRecord.from_json(cand)
    report = compare.compare(baseline, candidate)
    return assemble.with_beyond(report, unseen.beyond(report, baseline, candidate, scope, **beyond))
