"""The report's line on generated contracts: the public APIs no hand-written
table knows, contracted from their signatures and docstrings
(``optax_gate.kit.surface.generated``), and those no contract could be
generated for, with the reason (``test_surface_sweep.py::test_known``)."""

from __future__ import annotations

from optax_gate.gate.base import model
from optax_gate.gate.judge.findings import GENERATION_FAILED
from optax_gate.kit.surface.generated import GUIDE

SHOWN = 6


def _names(apis: list[str]) -> str:
    shown = ", ".join(f"`{a}`" for a in apis[:SHOWN])
    return shown + (f" and {len(apis) - SHOWN} more" if len(apis) > SHOWN else "")


def lines(report: model.Report) -> list[str]:
    """One bullet, or none when no contract was generated and none refused."""
    rows = report.get("contracts") or []
    refused: dict[str, str] = {}
    for r in rows:
        detail = str(r.get("detail") or "")
        if GENERATION_FAILED in detail:
            refused.setdefault(r["api"], detail.partition(GENERATION_FAILED)[2].strip().partition(" (")[0])
    generated = [r for r in rows if r.get("guide") == GUIDE and r["api"] not in refused]
    at_baseline = sorted({r["api"] for r in generated if r.get("baseline") is not None})
    only_new = sorted({r["api"] for r in generated if r.get("baseline") is None} - set(at_baseline))
    parts = []
    if at_baseline:
        n = sum(1 for r in generated if r.get("baseline") is not None)
        parts.append(f"{len(at_baseline)} APIs of the baseline, {n} contracts ({_names(at_baseline)})")
    if only_new:
        n = sum(1 for r in generated if r["api"] in only_new)
        # of every contract that runs only in the candidate (the header's "N new"), hand-written ones too
        all_n = sum(1 for r in rows if r.get("baseline") is None and r.get("candidate") is not None)
        of_n = f" of the {all_n} contracts that run only in the candidate" if all_n > n else " contracts run only there"
        parts.append(f"{len(only_new)} APIs new in the candidate, {n}{of_n} ({_names(only_new)})")
    if refused:
        parts.append(
            "not generated: "
            + "; ".join(f"`{a}`: {why}" for a, why in list(refused.items())[:SHOWN])
            + (f"; and {len(refused) - SHOWN} more" if len(refused) > SHOWN else "")
        )
    if not parts:
        return []
    return [
        "- Generated contracts (public APIs no hand-written table knows, contracted from their signatures and "
        "docstrings): " + "; ".join(parts)
    ]
