"""The one place the analyses' sections enter a report: each analysis returns its section, and a flow puts it in here."""

from __future__ import annotations

from typing import Any

from optax_gate.gate.base import model
from optax_gate.gate.diffs import unseen
from optax_gate.gate.judge import verdict
from optax_gate.gate.team_code import scope
from optax_gate.gate.team_run import judging
from optax_gate.gate.upstream import upstream_tests


def with_beyond(report: dict[str, Any], beyond: unseen.Beyond) -> dict[str, Any]:
    """``report`` (from ``optax_gate.gate.judge.compare.compare``) with what the contracts cannot see
    (``unseen.beyond``): the ``usage``, ``surface``, ``warnings`` and ``dependencies`` sections, the
    findings with those beyond the contracts, ``beyond_contracts_s``, the report ``schema``
    (``unseen.SCHEMA``), its notes, and the verdict they give (``verdict.of_beyond``: a broken row fails
    the gate). The sides' raw ``warnings`` records leave the report (the section holds their diff).
    Returns ``report``."""
    report["schema"] = unseen.SCHEMA
    report["usage"] = beyond.usage
    report["surface"], report["warnings"], report["dependencies"] = beyond.surface, beyond.warnings, beyond.dependencies
    if beyond.findings is not None:
        report["findings"] = beyond.findings
    report["beyond_contracts_s"] = beyond.seconds
    for side in ("baseline", "candidate"):
        report[side].pop("warnings", None)
    verdict.at_least(report, *verdict.of_beyond(beyond.broken()))
    if beyond.notes:
        report.setdefault("notes", []).extend(beyond.notes)
    return report


def with_scope(report: dict[str, Any], scoped: scope.Scoped | None) -> dict[str, Any]:
    """``report`` with its findings scoped (``scope.scoped``, ``scope.apply_options``; None: the report has
    no findings list, nothing changes): the scoped findings, the ``scope`` section (and with ``--usage`` the
    ``attribution`` section), the notes, and the
    verdict rescoped to the team's findings and its reasons reworded (``verdict.rescoped``); a verdict that is
    not ``fail`` becomes ``not-verified`` for the rows beyond the contracts the gate cannot tell
    (``scoped.unsure``). Returns ``report``."""
    if scoped is None:
        return report
    if scoped.attribution is not None:
        report["attribution"] = scoped.attribution
    report["findings"] = scoped.findings
    report["scope"] = scoped.section
    if scoped.reasons is not None:
        verdict.rescoped(report, scoped.reasons, scoped.falls_to)
    if scoped.notes:
        report.setdefault("notes", []).extend(scoped.notes)
    if scoped.unsure and report.get("verdict") in ("pass", "not-verified"):
        verdict.at_least(report, "not-verified", list(scoped.unsure))
    return report


def with_team_run(report: dict[str, Any], team_run: dict[str, Any], fail_on: str = "broken") -> dict[str, Any]:
    """``report`` with the team's run (``--run``; ``team_run``, from ``optax_gate.gate.team_run.team_run.run``):
    its findings scoped by the run (``judging.apply``, :func:`with_scope`; ``--fail-on`` ``fail_on``),
    its section ``team_run`` with the "Your code" lines, and the verdict the run gives
    (``judging.of_team_run``: a run that broke or diverged fails the gate, one not verified makes it
    not verified). Returns ``report``.

    Raises:
      ValueError: ``fail_on`` is not one of ``scope.FAIL_ON``.
    """
    judged = judging.apply(report, team_run, fail_on)
    with_scope(report, judged.scoped)
    report["team_run"] = judged.section
    verdict.at_least(report, *judging.of_team_run(judged.section), at=0)
    return report


def with_speed(report: dict[str, Any], section: model.Speed | None) -> dict[str, Any]:
    """``report`` with the speed ``section`` (``optax_gate.gate.speed.speed.measure``; None: not measured, nothing added) and the
    verdict it gives (``verdict.of_speed``: a step over the speed budget fails the gate). Returns ``report``."""
    if section is not None:
        report["speed"] = section
        verdict.at_least(report, *verdict.of_speed(section))
    return report


def with_upstream_tests(report: dict[str, Any], section: model.UpstreamTests) -> dict[str, Any]:
    """``report`` with the cross-run ``section`` (``upstream_tests.cross_run``): ``upstream_tests``, its
    findings after the others (all renumbered from 1), and its note (``upstream_tests.note``). The verdict
    and its reasons are not touched: a failing upstream test is evidence to read, not a judged contract.
    Returns ``report``."""
    report["upstream_tests"] = section
    if isinstance(report.get("findings"), list):
        report["findings"] = report["findings"] + section["findings"]
        for number, f in enumerate(report["findings"], 1):  # the section's own findings carry their number too
            f["number"] = number
    report.setdefault("notes", []).append(upstream_tests.note(section))
    return report
