"""JSON rendering of a gate report (schema 3, for machines; JSON Schema in
``report.schema.json`` beside this module, checked by tests/meta).

Top-level keys: ``schema`` (3), ``verdict`` (``pass`` | ``fail`` |
``not-verified``), ``reasons``, ``notes``, ``summary`` (count per change),
``findings`` (report.md's findings, same list and order: the differing
contracts grouped by cause, ``{"number", "section": "contracts", "change",
"api", "apis", "cause", "key", "contracts": [ids], "tests": [[test in plain
words, count]], "text"}``, see ``optax_gate.gate.judge.findings``, then each broken
row beyond the contracts, ``section`` ``surface`` / ``dependencies`` /
``warnings``, see ``optax_gate.gate.diffs.unseen.broken_findings``; with
``--usage``, ``your_code``, ``your_code_not_scanned`` and ``your_code_notes``,
see ``optax_gate.gate.team_code.call_sites``; absent in reports written before it existed),
``baseline`` and ``candidate`` (``label``, ``requirements``, ``versions`` with
python, optax, jax, jaxlib, flax, numpy and platform, ``status``, ``reason``,
``duration_s``, ``hypothesis_profile``), and ``contracts``: a list of
``{"id", "api", "guide", "kind", "defect", "baseline", "candidate",
"change", "detail"}`` (``defect``: ``"id: reason"`` of the known upstream
defect the contract pins, else "") where ``baseline``/``candidate`` is an outcome (passed, failed,
error, skipped, xfailed) or null when the contract did not run there.
Schema 2 adds ``usage``, ``surface``, ``warnings``, ``dependencies`` and
``beyond_contracts_s`` (``optax_gate.gate.diffs.unseen``; absent from a report
written after the gate itself crashed) Schema 3 adds the bisection
(``--bisect``, ``optax_gate.gate.bisect.flow``): ``bisect`` on each broken,
changed or fixed contract finding and a top-level ``bisect`` summary; both
absent without one.
"""

from __future__ import annotations

import json
from typing import Any


def render(report: dict[str, Any]) -> str:
    """The report as indented, key-sorted JSON text ending in a newline."""
    return json.dumps(report, indent=2, sort_keys=True) + "\n"
