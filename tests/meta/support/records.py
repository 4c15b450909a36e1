"""A run record of the gate (the form run.json holds), built from contract outcomes."""

from __future__ import annotations

from typing import Any


def record(status: Any = "ran", reason: Any = "", **outcomes: Any) -> Any:
    """A run record whose contracts are ``id=outcome`` (kind from the id prefix)."""
    contracts = {
        cid: {"api": "optax.sgd", "guide": "g", "kind": cid.split("_")[0], "outcome": o, "detail": f"{o} detail"}
        for cid, o in outcomes.items()
    }
    return {"label": "x", "status": status, "reason": reason, "versions": {}, "contracts": contracts}
