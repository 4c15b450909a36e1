"""The compare command: two run records re-judged without running anything (python -m optax_gate compare)."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from optax_gate.gate import assemble
from optax_gate.gate.base.run_record import NotARunRecord, RunRecord
from optax_gate.gate.gate_flow import Started, fail, write_reports
from optax_gate.gate.gate_inputs import team_code
from optax_gate.gate.inputs import validate
from optax_gate.gate.inputs.options import CompareOptions
from optax_gate.gate.inputs.user_paths import check_usage
from optax_gate.gate.judge import compare, verdict
from optax_gate.gate.run import evidence
from optax_gate.gate.sides import beyond_contracts, load
from optax_gate.gate.sides_prepare import configured_packages
from optax_gate.gate.team_code import scope, usage
from optax_gate.gate.team_run import reused


def _run_record(path: Path) -> RunRecord:
    """The run record (``baseline.json``, ``candidate.json`` of a run's
    evidence folder) at ``path``.

    Raises:
      validate.InvalidInput: the file cannot be read, is not JSON, or is not a run record.
    """
    try:
        return load(path)
    except OSError as exc:
        raise validate.InvalidInput(
            f"{validate.shown(path)} cannot be read as a run record: {exc.strerror or exc}"
        ) from None
    except NotARunRecord:
        raise validate.InvalidInput(f"{validate.shown(path)} is not a run record: {_WANTED}") from None
    except ValueError as exc:
        raise validate.InvalidInput(
            f"{validate.shown(path)} is not a run record: {_WANTED} (this file is not JSON: {exc})"
        ) from None


#: What a run record is, said with every refusal of one.
_WANTED = (
    "a JSON object with label, status and contracts, the evidence/baseline.json or evidence/candidate.json of a "
    "gate's run folder"
)


#: The project folder a gate runs in (``./noxw`` starts it there): a run record's relative paths are relative to it.
PROJECT = Path(__file__).resolve().parents[3]


def located(record: RunRecord) -> RunRecord:
    """A run record whose environment paths (``site_packages``, ``lock_file``:
    relative to the project folder the gate ran in) are found from here too:
    a compare started from another folder read neither and said "API surface:
    not compared; Dependencies: not compared". A path found from the current
    folder, or found nowhere, stays as it is."""
    site, lock = _found(record.fields.get("site_packages")), _found(record.fields.get("lock_file"))
    if site is not None:
        record = record.with_fields(site_packages=site)
    if lock is not None:
        record = record.with_fields(lock_file=lock)
    return record


def _found(value: str | None) -> str | None:
    """``value`` (a run record's relative path) found under the project folder when it is not found from here, else
    None (it stays as it is)."""
    if value and not Path(value).is_absolute() and not Path(value).exists() and (PROJECT / value).exists():
        return str(PROJECT / value)
    return None


def compare_runs(options: CompareOptions, started: Started | None = None) -> int:
    """``python -m optax_gate compare``: the report of two run records, into
    an output folder of its own (never a gate's, whose ``report.md`` links to
    its newest judged run); 2 for an input that cannot be used."""
    try:
        if any((options.out / name).is_symlink() for name in evidence.CURRENT):
            raise validate.InvalidInput(
                f"--out {validate.shown(options.out)} is a gate output folder (its report.md shows the newest "
                "judged run): give compare a folder of its own"
            )
        baseline, candidate = (located(_run_record(path)) for path in (options.baseline_run, options.candidate_run))
        swapped = swapped_records(baseline, candidate)
        if swapped and options.team_run is not None:  # said as swapped records, not as "another baseline"
            raise validate.InvalidInput(f"{swapped} (the same options after them)")
        team = (
            reused.recorded(options.team_run, baseline, candidate, options.scope.usage)
            if options.team_run is not None
            else None
        )
        code = team_code(
            options.scope.usage, Path(team["run_dir"]) if team and Path(team["run_dir"]).is_dir() else None
        )
        scan = usage.scan(check_usage(code)) if code else None
        validate.writable_folder(
            options.out
        )  # a file, or a folder that cannot be made or written: refused before comparing (made last)
    except validate.InvalidInput as exc:
        return fail(f"{exc} (no report written)")
    given = dataclasses.replace(options.scope, usage=code, usage_scan=scan)
    packages = configured_packages(Path.cwd())
    report = beyond_contracts(compare.compare(baseline, candidate), baseline, candidate, given, packages)
    if swapped:  # the verdict, not a note: swapped records are no evidence about the upgrade, whatever they
        # found: never a pass
        report = verdict.at_least(
            report,
            "not-verified",
            f"{swapped}; as given, every change in this report reads the other way round (broken as fixed)",
            at=0,
        )
    if (
        team is not None and options.team_run is not None
    ):  # the gate's recorded run scopes the findings and sets the verdict, as in that gate
        report = assemble.with_team_run(report, team, given.fail_on)
        report["notes"].append(
            f"your run (`{team['command']}` in {team['run_dir']}): re-used from "
            f"{os.path.abspath(options.team_run)} (compare runs no code)"
        )
    else:
        report = assemble.with_scope(report, scope.apply_options(report, given, packages))
        if not swapped:  # swapped, the recorded run would not fit them: the note above says what to do
            say_recorded_run(report, options.baseline_run)
    return write_reports(report, options.out)


def swapped_records(baseline: RunRecord, candidate: RunRecord) -> str | None:
    """A note when compare's two run records look given the other way round:
    the first (taken as the baseline) is a gate's candidate record and the
    second its baseline record (their ``label``). Compare still compares
    them as given (comparing a candidate against a baseline can be meant),
    but every change then reads backwards (broken as fixed), and the
    baseline's own failures read as the candidate's. None otherwise."""
    if baseline.label != "candidate" or candidate.label != "baseline":
        return None

    def which(record: RunRecord) -> str:
        versions = record.versions or {}
        named = ", ".join(f"{name} {versions[name]}" for name in ("optax", "jax") if versions.get(name))
        return f" ({named})" if named else ""

    return (
        "the run records look swapped: the first, taken as the baseline, is a gate's candidate "
        f"record{which(baseline)}, "
        f"and the second its baseline record{which(candidate)}; compare takes BASELINE first: "
        "compare …/evidence/baseline.json …/evidence/candidate.json"
    )


def say_recorded_run(report: Mapping[str, Any], baseline_run: Path) -> None:
    """A note for a compare whose lines of the team's code are "cannot tell
    without --run": compare runs no code; the gate that recorded the run
    records may have run the team's command, which ``--team-run`` re-uses.
    Where that gate did, any verdict but a pass says so too, so that a --run
    gate's PASS re-judged here never reads FAIL without a hint."""
    found = report.get("findings") or []
    gate_report = Path(baseline_run).resolve().parent.parent / "report.json"
    try:
        ran = isinstance(json.loads(gate_report.read_text(encoding="utf-8")).get("team_run"), dict)
    except (OSError, ValueError, AttributeError):
        ran = False
    if ran and report.get("verdict") != "pass":  # a --run gate's verdict is about the team's run: point to it
        report["notes"].append(
            f"the gate that recorded these run records ran your command (--run): add --team-run {gate_report} "
            "to make the verdict about that run, as the gate's was (compare runs no code)"
        )
        return
    if not any(
        a.get("verdict") == "cannot-tell" for f in found for a in (f.get("your_code_attribution") or {}).values()
    ):
        return
    report["notes"].append(
        "compare runs no code: a line of yours that is 'cannot tell without --run' is decided by your run; "
        + (
            f"the gate that recorded these run records ran it: add --team-run {gate_report}"
            if ran
            else "run the gate with --run, or give compare --team-run with the report.json of a gate that did"
        )
    )
