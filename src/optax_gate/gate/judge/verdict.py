"""The report's verdict and its reasons: the one module that sets them (``tests/meta/project/test_stages.py`` checks).

A verdict is ``pass``, ``fail`` or ``not-verified``, in that order of weight. The contracts give the
first one (:func:`of_contracts`). A later analysis may only make it heavier (:func:`at_least`: a broken
row beyond the contracts, a speed budget exceeded, the team's run, a gate error). The one exception is
the scope of the findings: with ``--usage`` or ``--run``, broken contracts that the team's code does not
reach stop counting, so the verdict may become lighter there (:func:`rescoped`).
"""

from __future__ import annotations

import math
from typing import Literal

from optax_gate.gate.base import model
from optax_gate.gate.base.literals import one_of
from optax_gate.gate.base.plain_text import and_join

#: A report's verdict (``model.Report``'s ``verdict``).
Verdict = Literal["pass", "fail", "not-verified"]

#: The verdicts, lightest first.
ORDER: tuple[Verdict, ...] = ("pass", "fail", "not-verified")


def as_verdict(name: str) -> Verdict:
    """``name`` as a verdict.

    Raises:
      ValueError: ``name`` is not one of :data:`ORDER`.
    """
    return one_of(name, ORDER, "verdict")


def of_contracts(not_verified: list[str], broken: int) -> tuple[Verdict, list[str]]:
    """The verdict of the contracts alone, and its reasons.

    ``not_verified``: why the contracts cannot judge the upgrade (a side that did not run, zero contracts,
    contracts gone); any makes the verdict ``not-verified``. Otherwise ``broken`` (the number of broken
    contracts) decides between ``fail`` and ``pass``."""
    if not_verified:
        return "not-verified", list(not_verified)
    if broken:
        return "fail", [f"{broken} contract(s) broken"]
    return "pass", []


#: What a section's rows are called in a sentence (``1 dependency row``): rows, not findings (several rows
#: of one kind are one finding).
_SECTION_WORDS = {"surface": "API surface", "dependencies": "dependency", "warnings": "warning"}


def broken_words(broken: dict[str, int]) -> str:
    """``{"surface": 2, "dependencies": 1}`` -> ``2 API surface rows and 1 dependency row``
    (sections with none left out)."""
    parts = [f"{n} {_SECTION_WORDS[name]} row{'' if n == 1 else 's'}" for name, n in broken.items() if n]
    return and_join(parts)


def of_beyond(broken: dict[str, int]) -> tuple[Verdict, list[str]]:
    """The verdict of the sections beyond the contracts (``optax_gate.gate.diffs.unseen``), from their counts of
    ``broken`` rows by section (``surface``, ``dependencies``, ``warnings``): ``fail`` when any is broken."""
    if not sum(broken.values()):
        return "pass", []
    return "fail", [f"beyond the contracts: {broken_words(broken)} broken"]


def of_speed(section: model.Speed) -> tuple[Verdict, list[str]]:
    """The verdict of the speed readings alone (``optax_gate.gate.speed.readings.measure``), and its reason:
    ``fail`` when a training step is ``broken`` (slower than ``--speed-budget``; only that option makes a
    reading broken), else ``pass`` with no reason (a ``changed`` reading is said, not judged)."""
    broken = [r for r in section["readings"] if r["change"] == "broken"]
    if not broken:
        return "pass", []
    return "fail", [
        f"{len(broken)} training step(s) slower than the speed budget x{section.get('budget') or 0:g}: "
        + ", ".join(f"{r['setup']} x{r.get('ratio', math.nan):.2f}" for r in broken)
    ]


def at_least(
    report: model.Report, verdict: str, reasons: list[str] | str | None = None, at: int | None = None
) -> model.Report:
    """A copy of ``report`` whose verdict is ``verdict`` unless it is already as heavy, with ``reasons`` added (one or
    several; appended, or inserted before position ``at``). The reasons are added either way: a reason
    for a failure also stands beside a ``not-verified`` verdict. ``report`` is not changed.

    Raises:
      ValueError: ``verdict`` is not one of :data:`ORDER`.
    """
    given = as_verdict(verdict)
    out = report.copy()
    if ORDER.index(out.get("verdict", "pass")) < ORDER.index(given):
        out["verdict"] = given
    said = [reasons] if isinstance(reasons, str) else list(reasons or [])
    if said:
        listed = list(out.get("reasons") or [])
        position = len(listed) if at is None else at
        listed[position:position] = said
        out["reasons"] = listed
    return out


def rescoped(report: model.Report, reasons: list[str], falls_to: str | None = None) -> model.Report:
    """A copy of ``report`` with the verdict after the findings were scoped to the team's code: ``reasons`` replace the
    report's. ``falls_to`` (``pass``, or ``not-verified`` when some findings may reach the team's code) is the
    verdict when no broken contract is left where the team's code goes and nothing else fails the gate;
    None leaves the verdict as it is. ``report`` is not changed.

    Raises:
      ValueError: ``falls_to`` is not one of :data:`ORDER`.
    """
    out = report.copy()
    if falls_to is not None:
        out["verdict"] = as_verdict(falls_to)
    out["reasons"] = list(reasons)
    return out
