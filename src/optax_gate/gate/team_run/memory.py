"""The compiled memory of the team's whole steps, baseline against candidate (``optax_gate.recorder.memory``).

A step whose compiled program needs more memory in the candidate (argument, output or temporary bytes beyond
``MEMORY_RTOL`` and ``MEMORY_ATOL``, ``kit/tolerances.py``) can run out of memory where it did not, whatever its
values: that fails the gate, with the bytes and the ratio at the step's line. Less memory is said, and does not
set the verdict.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from optax_gate.gate.team_run import trace

#: The figures compared, in the order they are said.
FIGURES = ("argument_bytes", "output_bytes", "temp_bytes")


def read(folder: Path) -> dict[str, dict[str, Any]]:
    """The ``memory`` events of the trace files in ``folder``, keyed ``api@site`` (the first of each)."""
    out: dict[str, dict[str, Any]] = {}
    for event in trace.tagged_events(folder, "memory"):
        if "site" in event:
            out.setdefault(f"{event['memory']}@{event['site']}", event)
    return out


def compare(baseline: dict[str, dict[str, Any]], candidate: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Each step's figures, baseline against candidate.

    Returns:
      ``{"steps": how many steps both sides measured, "same": how many of them within the tolerance, "grew":
      [row], "shrank": [row], "not_measured": {api@site: why}, "measured": [{"site", "step", "backend",
      "baseline": {figure: bytes}, "candidate": {figure: bytes}}]}``, a row ``{"site", "step", "figure",
      "baseline", "candidate", "ratio"}`` per figure beyond the tolerance, in the baseline's order.
    """
    from optax_gate.kit.tolerances import (
        MEMORY_ATOL,
        MEMORY_RTOL,
    )  # kit.tolerances imports NumPy: not at the gate's import

    out: dict[str, Any] = {"steps": 0, "same": 0, "grew": [], "shrank": [], "not_measured": {}, "measured": []}
    for key, b in baseline.items():
        c = candidate.get(key)
        why = (
            b.get("error")
            or (c or {}).get("error")
            or ("" if c is not None else "the candidate's run did not measure it")
        )
        if why or c is None:
            out["not_measured"][key] = why
            continue
        out["steps"] += 1
        out["measured"].append(
            {
                "site": b["site"],
                "step": b["memory"],
                "backend": str(b.get("backend") or ""),
                **{side: {f: int(e[f]) for f in FIGURES} for side, e in (("baseline", b), ("candidate", c))},
            }
        )
        rows = []
        for figure in FIGURES:
            before, after = int(b[figure]), int(c[figure])
            if abs(after - before) > max(MEMORY_ATOL, MEMORY_RTOL * before):
                ratio = round(after / before, 4) if before else None
                rows.append(
                    {
                        "site": b["site"],
                        "step": b["memory"],
                        "figure": figure,
                        "baseline": before,
                        "candidate": after,
                        "ratio": ratio,
                    }
                )
        out["same"] += not rows
        for row in rows:
            out["grew" if row["candidate"] > row["baseline"] else "shrank"].append(row)
    return out


#: The figures as a sentence names them.
NAMES = {"argument_bytes": "argument bytes", "output_bytes": "output bytes", "temp_bytes": "temporary bytes"}


def words(row: Mapping[str, Any]) -> str:
    """``train.py:42 jax.jit(train_step): temporary bytes 852,032 -> 1,262,232 (x1.48)``."""
    ratio = f"x{row['ratio']:.3g}" if row["ratio"] is not None else "from none"
    return f"{row['site']} {row['step']}: {NAMES[row['figure']]} {row['baseline']:,} -> {row['candidate']:,} ({ratio})"


def figures_words(row: Mapping[str, Any]) -> str:
    """A measured step's baseline figures: ``train.py:42 jax.jit(train_step) needs 11,284 argument, 7,056 output
    and 16,708 temporary bytes``."""
    b = row["baseline"]
    return (
        f"{row['site']} {row['step']} needs {b['argument_bytes']:,} argument, {b['output_bytes']:,} output and "
        f"{b['temp_bytes']:,} temporary bytes"
    )
