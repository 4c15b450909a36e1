"""The one place the analyses' sections enter a report: each analysis returns its section, and a flow puts it in here,
into a copy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from optax_gate.gate.base import model
from optax_gate.gate.diffs import unseen
from optax_gate.gate.judge import verdict
from optax_gate.gate.team_code import scope
from optax_gate.gate.team_run import judging
from optax_gate.gate.upstream import upstream_tests


def with_beyond(report: model.Report, beyond: unseen.Beyond) -> model.Report:
    """A copy of ``report`` (from ``optax_gate.gate.judge.compare.compare``) with what the contracts cannot see
    (``unseen.beyond``): the ``usage``, ``surface``, ``warnings`` and ``dependencies`` sections, the
    findings with those beyond the contracts, ``beyond_contracts_s``, the report ``schema``
    (``unseen.SCHEMA``), its notes, and the verdict they give (``verdict.of_beyond``: a broken row fails
    the gate). The sides' raw ``warnings`` records leave the copy (the section holds their diff).
    ``report`` is not changed."""
    out = report.copy()
    out["schema"] = unseen.SCHEMA
    out["usage"] = beyond.usage
    out["surface"], out["warnings"], out["dependencies"] = beyond.surface, beyond.warnings, beyond.dependencies
    if beyond.findings is not None:
        out["findings"] = beyond.findings
    out["beyond_contracts_s"] = beyond.seconds
    out["baseline"] = _without_raw_warnings(report["baseline"])
    out["candidate"] = _without_raw_warnings(report["candidate"])
    out = verdict.at_least(out, *verdict.of_beyond(beyond.broken()))
    return _with_notes(out, beyond.notes)


def _without_raw_warnings[Record: (model.BaselineRecord, model.CandidateRecord)](record: Record) -> Record:
    """A copy of a side's record without the raw ``warnings`` its run recorded (``runner``'s JSON holds them; the
    report holds their diff, the ``warnings`` section)."""
    return cast(Record, {k: v for k, v in record.items() if k != "warnings"})


def _with_notes(report: model.Report, notes: Sequence[str]) -> model.Report:
    """``report`` with ``notes`` after its own (a new list; none: the report as it is)."""
    if notes:
        report["notes"] = [*report.get("notes", []), *notes]
    return report


def with_scope(report: model.Report, scoped: scope.Scoped | None) -> model.Report:
    """A copy of ``report`` with its findings scoped (``scope.scoped``, ``scope.apply_options``; None: the report has
    no findings list, the copy is the same): the scoped findings, the ``scope`` section (and with ``--usage`` the
    ``attribution`` section), the notes, and the
    verdict rescoped to the team's findings and its reasons reworded (``verdict.rescoped``); a verdict that is
    not ``fail`` becomes ``not-verified`` for the rows beyond the contracts the gate cannot tell
    (``scoped.unsure``). ``report`` is not changed."""
    out = report.copy()
    if scoped is None:
        return out
    if scoped.attribution is not None:
        out["attribution"] = scoped.attribution
    out["findings"] = scoped.findings
    out["scope"] = scoped.section
    if scoped.reasons is not None:
        out = verdict.rescoped(out, scoped.reasons, scoped.falls_to)
    out = _with_notes(out, scoped.notes)
    if scoped.unsure and out.get("verdict") in ("pass", "not-verified"):
        out = verdict.at_least(out, "not-verified", list(scoped.unsure))
    return out


def with_team_run(report: model.Report, team_run: model.TeamRun, fail_on: str = "broken") -> model.Report:
    """A copy of ``report`` with the team's run (``--run``; ``team_run``, from
    ``optax_gate.gate.team_run.recording.run``):
    its findings scoped by the run (``judging.apply``, :func:`with_scope`; ``--fail-on`` ``fail_on``),
    its section ``team_run`` with the "Your code" lines, and the verdict the run gives
    (``judging.of_team_run``: a run that broke or diverged fails the gate, one not verified makes it
    not verified). ``report`` is not changed.

    Raises:
      ValueError: ``fail_on`` is not one of ``scope.FAIL_ON``.
    """
    judged = judging.apply(report, team_run, fail_on)
    out = with_scope(report, judged.scoped)
    out["team_run"] = judged.section
    return verdict.at_least(out, *judging.of_team_run(judged.section), at=0)


def with_speed(report: model.Report, section: model.Speed | None) -> model.Report:
    """A copy of ``report`` with the speed ``section`` (``optax_gate.gate.speed.readings.measure``; None: not measured,
    nothing added) and the verdict it gives (``verdict.of_speed``: a step over the speed budget fails the gate).
    ``report`` is not changed."""
    out = report.copy()
    if section is not None:
        out["speed"] = section
        out = verdict.at_least(out, *verdict.of_speed(section))
    return out


def with_upstream_tests(report: model.Report, section: model.UpstreamTests) -> model.Report:
    """A copy of ``report`` with the cross-run ``section`` (``upstream_tests.cross_run``): ``upstream_tests``, its
    findings after the others (all renumbered from 1, the section's own too), and its note (``upstream_tests.note``).
    The verdict and its reasons are not touched: a failing upstream test is evidence to read, not a judged contract.
    ``report`` and ``section`` are not changed."""
    out = report.copy()
    if isinstance(out.get("findings"), list):
        before = len(out["findings"])
        joined: list[model.Finding] = [*out["findings"], *section["findings"]]
        out["findings"] = [{**f, "number": number} for number, f in enumerate(joined, 1)]
        section = {**section, "findings": out["findings"][before:]}
    out["upstream_tests"] = section
    return _with_notes(out, [upstream_tests.note(section)])
