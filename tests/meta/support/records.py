"""A run record of the gate (the form run.json holds), built from contract outcomes."""

from __future__ import annotations


def record(status="ran", reason="", **outcomes):
    """A run record whose contracts are ``id=outcome`` (kind from the id prefix)."""
    contracts = {
        cid: {"api": "optax.sgd", "guide": "g", "kind": cid.split("_")[0], "outcome": o, "detail": f"{o} detail"}
        for cid, o in outcomes.items()
    }
    return {"label": "x", "status": status, "reason": reason, "versions": {}, "contracts": contracts}
