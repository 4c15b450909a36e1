"""One contract's row of a report (``report.json``'s ``contracts[]``), as the comparison writes it."""

from __future__ import annotations

from typing import Any


def contract_row(
    cid: str,
    detail: str,
    change: str = "broken",
    api: str = "optax.sgd",
    kind: str = "acceptance",
    defect: str = "",
    baseline: str | None = "passed",
    candidate: str | None = "failed",
) -> Any:
    """A contract row: its id, API, guide ``g``, kind, known defect, outcome on each side, change and detail."""
    return {
        "id": cid,
        "api": api,
        "guide": "g",
        "kind": kind,
        "defect": defect,
        "baseline": baseline,
        "candidate": candidate,
        "change": change,
        "detail": detail,
    }
