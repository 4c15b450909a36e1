"""Traced runs of the fake team's calls into optax."""

from __future__ import annotations

from typing import Any

from tests.meta.support.records import record


def traced_runs() -> Any:
    """Three broken contracts: one API the team never uses, two it calls."""
    base = record(golden_a="passed", golden_b="passed", golden_c="passed")
    cand = record(golden_a="failed", golden_b="failed", golden_c="failed")
    for run in (base, cand):
        run["contracts"]["golden_a"]["api"] = "optax.adamw"
        run["contracts"]["golden_b"]["api"] = "optax.clip"
        run["contracts"]["golden_c"]["api"] = "jax.jit+optax.swap"
    # three causes, so that findings.group (one finding per cause, across APIs) keeps three findings
    for cid, why in (
        ("golden_a", "KeyError: mu"),
        ("golden_b", "TypeError: max_delta"),
        ("golden_c", "ValueError: donated"),
    ):
        cand["contracts"][cid]["detail"] = why
    return base, cand
