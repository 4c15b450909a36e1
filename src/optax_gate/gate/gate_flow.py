"""The gate's flow (``python -m optax_gate gate``): check the inputs, resolve
the candidate, install both sides and check their imports (a side that cannot
stops the gate at once), run both sides' contracts, then the late phases
(``optax_gate.gate.late``), and write the report into its run folder
(``optax_gate.gate.run.evidence``). Also ``compare`` of two run records, and the
report of a crash of the gate itself."""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from optax_gate.gate.base import atomic
from optax_gate.gate.inputs import requirements, team_contracts, validate
from optax_gate.gate.install import environments, extras, source_specs
from optax_gate.gate.run import baseline_snapshots, evidence, runner
from optax_gate.gate.run.progress import Progress
from optax_gate.gate.judge import compare
from optax_gate.gate.beyond import scope, team_run, upstream_tests, usage
from optax_gate.gate.beyond import speed as speed_
from optax_gate.gate.report import html_page as report_html
from optax_gate.gate.report import json_file as report_json
from optax_gate.gate.report import markdown as report_markdown
from optax_gate.gate.report import speed_section as report_speed
from optax_gate.gate.bisect import command as bisect_command
from optax_gate.gate.bisect import history as bisect_history
from optax_gate.gate import late
from optax_gate.gate.sides import (Side, beyond_contracts, check_imports, load, measure_speed, prepare, resolve_sources, run_both,
                                   save_run, skipped)
from optax_gate.gate.inputs.user_paths import check_usage, refuse_paths_as_specs

#: Exit status of the gate's own failures (bad input, crash, interruption).
NOT_VERIFIED = compare.EXIT_STATUS["not-verified"]


def fail(message: str) -> int:
    """Say ``message`` on stderr; return the not-verified exit status."""
    print(f"optax-gate: {message}", file=sys.stderr)
    return NOT_VERIFIED


def write_reports(report: dict[str, Any], out: Path, phases: late.LatePhases | None = None) -> int:
    """Write ``report.json``, ``report.md`` and ``report.html`` atomically; return the exit status.
    With ``phases``, a report that cannot be rendered is recorded as a failure
    of the report writing and written in its plain form (``late.fallback_markdown``;
    report.html then says only that, and points to report.md and report.json).

    Raises:
      OSError: a file could not be written (the files already there stay whole).
    """
    if phases is None:
        texts = report_json.render(report), report_markdown.render(report), report_html.render(report)
    else:
        markdown = phases.run("report writing", lambda: report_markdown.render(report))
        page = phases.run("report writing (report.html)", lambda: report_html.render(report)) if markdown is not None else None
        if markdown is not None and page is None:  # report.md says so too: its verdict is now not verified
            phases.record(report)
            markdown = phases.run("report writing", lambda: report_markdown.render(report))
        phases.record(report)
        texts = (report_json.render(report), markdown if markdown is not None else late.fallback_markdown(report),
                 page if page is not None else report_html.fallback(report))
    atomic.write_text(out / "report.json", texts[0])
    atomic.write_text(out / "report.md", texts[1])
    atomic.write_text(out / "report.html", texts[2])
    print(f"optax-gate: verdict {report['verdict']} — {out / 'report.md'}")
    for reason in report["reasons"]:
        print(f"optax-gate:   {reason}")
    return compare.EXIT_STATUS[report["verdict"]]


def finish(run: evidence.RunFolder, baseline: dict[str, Any], candidate: dict[str, Any], args: argparse.Namespace,
            say: Progress, speed: dict[str, Any] | None = None, phases: late.LatePhases | None = None,
            refused: str = "") -> int:
    """Compare, write the run's reports, mark it complete and current.

    Each phase after the contracts runs under ``phases``: its error is
    recorded in the report (verdict not-verified) beside both sides'
    contracts. A report that cannot be written, or linked, leaves the run
    marked incomplete and the previous runs linked: exit 2. A run that
    judged both sides (``evidence.judged``) becomes ``latest``; one that did
    not moves only the ``not-judged`` links. A run that ``refused`` its input
    judged nothing: its report leaves the ``--usage`` scan and its notes out."""
    phases = phases or late.LatePhases()
    say("writing the refusal report" if refused else "comparing and writing the report")
    for record in (baseline, candidate):
        phases.run("writing of the run records", lambda record=record: save_run(record, run.evidence))
    report = compare.compare(baseline, candidate)
    report["run"] = run.name
    if baseline.get("snapshots"):
        report["notes"].append(f"snapshot contracts compare with the baseline's own snapshots, recorded in this gate ({baseline['snapshots']}): "
                               "the baseline lock is not the pinned one")
    phases.run("API surface, warnings and dependency diff", lambda: beyond_contracts(report, baseline, candidate, args, usage=not refused))
    team = getattr(args, "team_run_result", None) if not refused else None
    if team is not None:  # --run: the team's run scopes the findings and sets the verdict
        phases.run("your run (--run)", lambda: team_run.apply(report, team, getattr(args, "fail_on", None) or "broken"))
    else:
        phases.run("scope of the findings", lambda: scope.apply_args(report, args, usage=not refused))
    phases.run("speed readings", lambda: speed_.attach(report, speed))
    if getattr(args, "upstream_tests", False) and not refused:
        phases.run("upstream tests cross-run (--upstream-tests)", lambda: upstream_cross_run(report, baseline, candidate, args, say))
    digest = phases.run("candidate lock digest", lambda: environments.digest(run.candidate_lock)) if run.candidate_lock.exists() else None
    if digest:
        report["candidate_lock"] = {"file": "candidate-lock.txt", "sha256": digest}
    phases.record(report)
    judged = evidence.judged(report)
    try:
        status = write_reports(report, run.path, phases)
        evidence.complete(run, args.keep, judged=judged, why=f"refused: {refused}" if refused else "; ".join(report["reasons"]))
    except OSError as exc:
        return fail(f"the report could not be written or made current ({exc}); the run folder {run.path} stays marked "
                     f"{evidence.MARKER} and {run.root / 'report.md'} still shows {evidence.shown(run.root)}")
    if judged:
        print(f"optax-gate: run folder {run.path}; {run.root / 'report.md'} now shows it")
    else:
        say_not_judged(run)
    return status


def say_not_judged(run: evidence.RunFolder) -> None:
    """The console line of a run that judged nothing: where its report is, and what ``report.md`` still shows."""
    print(f"optax-gate: this run judged nothing (not both sides' contracts ran): its report is "
          f"{run.root / 'not-judged.md'} (run folder {run.path}); {run.root / 'report.md'} still shows "
          f"{evidence.shown(run.root)}")


def upstream_cross_run(report: dict[str, Any], baseline: dict[str, Any], candidate: dict[str, Any], args: argparse.Namespace,
                       say: Progress) -> None:
    """``--upstream-tests``: optax's shipped tests cross-run (``optax_gate.gate.beyond.upstream_tests``)
    when both sides ran; its section and findings go into ``report``.

    Raises:
      upstream_tests.CrossRunFailure: it could not run (a late phase's failure: not verified).
    """
    if baseline.get("status") != "ran" or candidate.get("status") != "ran":
        return
    pythons = getattr(args, "side_pythons", None)
    if not pythons or not baseline.get("site_packages") or not candidate.get("site_packages"):
        raise upstream_tests.CrossRunFailure("the two environments' interpreters or site-packages are not known")
    say("upstream tests: cross-running optax's shipped tests of the modules that differ")
    envs = dict(zip(("baseline", "candidate"), getattr(args, "side_jax_env", ({}, {}))))
    section = upstream_tests.cross_run({"baseline": Path(baseline["site_packages"]), "candidate": Path(candidate["site_packages"])},
                                       dict(zip(("baseline", "candidate"), map(Path, pythons))), args.cache_dir,
                                       timeout=args.timeout, extra_env=envs, say=say)
    upstream_tests.attach(report, section)


def check_inputs(args: argparse.Namespace, say: Callable[[str], None]) -> None:
    """Raises validate.InvalidInput for the first input that cannot be used."""
    known = validate.lock_packages(args.baseline_lock, "baseline lock")
    if args.candidate_lock:
        validate.lock_packages(args.candidate_lock, "candidate lock")
    else:
        if not args.requirements_in.is_file():
            raise validate.InvalidInput(f"--requirements-in {args.requirements_in} does not exist")
        refuse_paths_as_specs(args.specs, known)
        validate.parse_specs(args.specs, known, args.allow_extra)
        args.plain_specs, args.sources = source_specs.split(args.specs, getattr(args, "source", None))
    args.team_dirs = team_contracts.check(getattr(args, "contracts", None))
    if getattr(args, "bisect", False):
        try:  # a --history typo is refused now, not after the whole gate
            bisect_history.parse_histories(args.history)
        except ValueError as exc:
            raise validate.InvalidInput(str(exc)) from None
    args.run_spec = team_run.check(getattr(args, "run", None), getattr(args, "run_dir", None), getattr(args, "run_timeout", 1800))
    args.usage_scan = usage.scan(check_usage(args.usage)) if args.usage else None  # before anything runs; unreadable files are listed, not fatal
    if args.usage_scan is not None:
        say(f"--usage: {args.usage_scan.scanned} of {args.usage_scan.found} file(s) scanned, "
            f"{len(args.usage_scan.not_scanned)} not scanned (listed in the report)")


def failed(side: Side) -> bool:
    """Whether a prepared side already has a record that is not verified."""
    return side.record is not None and side.record.get("status") != "ran"


def stopped_record(failed: Side, other: str, say: Progress) -> dict[str, Any]:
    """The record of the side ``other`` that does not run because ``failed``
    could not be installed or imported (no verdict is possible without both)."""
    cause = failed.record.get("reason", "") if failed.record else ""
    say(f"{failed.label} cannot be installed or imported, so the {other} is not run (no verdict without both sides): {cause}")
    return skipped(other, f"the {failed.label} could not be installed or imported")


def gate(args: argparse.Namespace) -> int:
    say = Progress()
    if args.candidate_lock and (args.specs or getattr(args, "source", None)):
        return fail("give either requirement SPECs (or --source) or --candidate-lock, not both")
    try:
        validate.writable_folder(args.out)
        run = args.run_folder = evidence.start(args.out, sys.argv)
    except validate.InvalidInput as exc:
        return fail(f"{exc} (no report written)")
    except OSError as exc:
        return fail(f"no run folder can be made under {args.out / 'runs'}: {exc.strerror or exc} (no report written; "
                     f"{args.out / 'report.md'} still shows {evidence.shown(args.out)})")
    say(f"run folder {run.path}")
    base_req = [f"lock file {args.baseline_lock}"]
    if args.candidate_lock:
        cand_req = [f"lock file {args.candidate_lock}"]
    else:
        cand_req = [*args.specs, *(f"--source {text}" for text in getattr(args, "source", None) or [])]
        cand_req = cand_req or [f"{name} (newest)" for name in requirements.NEWEST_DEFAULT]
    cand_extra: dict[str, Any] = {}

    def refuse(exc: validate.InvalidInput) -> int:
        print(f"optax-gate: {exc}", file=sys.stderr)
        why = f"invalid input: {exc}"
        run.candidate_lock.unlink(missing_ok=True)  # no lock beside a report that judged none
        return finish(run, skipped("baseline", why, requirements=base_req), runner.not_verified("candidate", why, requirements=cand_req),
                       args, say, refused=str(exc))

    try:
        say("checking the inputs")
        check_inputs(args, say)
    except validate.InvalidInput as exc:
        return refuse(exc)
    if args.candidate_lock:
        shutil.copyfile(args.candidate_lock, run.candidate_lock)
    else:
        say("resolving the candidate (" + " ".join(cand_req) + ")")
        plain, sources = getattr(args, "plain_specs", args.specs), getattr(args, "sources", [])
        try:
            if built := resolve_sources(plain or ([] if sources else list(requirements.NEWEST_DEFAULT)), sources,
                                        run.candidate_lock, args, say):
                cand_extra["sources"] = built
            extras.check(plain, run.candidate_lock, args.python)
        except validate.InvalidInput as exc:
            return refuse(exc)
        except environments.EnvironmentFailure as exc:
            print(f"optax-gate: the candidate cannot be resolved: {exc}", file=sys.stderr)
            return finish(run, skipped("baseline", "the candidate could not be resolved", requirements=base_req),
                           runner.not_verified("candidate", str(exc), requirements=cand_req), args, say)
        except source_specs.SourceFailure as exc:
            print(f"optax-gate: the candidate cannot be built from source: {exc}", file=sys.stderr)
            return finish(run, skipped("baseline", "the candidate could not be built from source", requirements=base_req),
                           runner.not_verified("candidate", str(exc), requirements=cand_req, sources=[exc.record]), args, say)
    # Fail fast: both sides are installed (the baseline first), then their imports checked, before
    # either runs a contract; a side that fails stops the gate there.
    def stop(failed: Side, other: str, other_record: dict[str, Any] | None, other_req: list[str]) -> int:
        stopped = {**stopped_record(failed, other, say), "requirements": other_req}
        records = {failed.label: failed.record, other: other_record or stopped}
        return finish(run, records["baseline"], records["candidate"], args, say)

    baseline = prepare("baseline", args.baseline_lock, args, run.evidence, run.checkpoints, say, requirements=base_req)
    if failed(baseline):
        return stop(baseline, "candidate", None, cand_req)
    candidate = prepare("candidate", run.candidate_lock, args, run.evidence, run.checkpoints, say, requirements=cand_req, **cand_extra)
    if not failed(candidate):
        check_imports((baseline, candidate), args, say)
    if failed(baseline):  # its own failure, and the candidate's too when both failed, stay in the report
        return stop(baseline, "candidate", candidate.record, cand_req)
    if failed(candidate):  # a cached baseline result stays
        return stop(candidate, "baseline", baseline.record, base_req)
    baseline_snapshots.arrange(baseline, candidate, args, run.evidence, say)  # a team's baseline: its own snapshots
    if getattr(args, "run_spec", None) is not None:  # the team's own run first: quick, and its verdict is the one asked for
        args.team_run_result = team_run.run(args.run_spec, (baseline.python, candidate.python), run.evidence, say)
        if args.team_run_result["outcome"] == "not-verified":  # the verdict cannot be had: say so now, not after the contracts
            why = "--run could not be verified, so no contract ran"
            say(f"{why} ({args.team_run_result['reason']}); fix the command (or leave --run out) and run the gate again")
            return finish(run, skipped("baseline", why, requirements=base_req), skipped("candidate", why, requirements=cand_req),
                          args, say)
    base_record, cand_record = run_both(baseline, candidate, args, say)
    args.side_pythons = (baseline.python, candidate.python)  # --upstream-tests runs pytest in both
    args.side_jax_env = (baseline.jax_env, candidate.jax_env)
    phases = late.LatePhases()
    speed = phases.run("speed readings", lambda: measure_speed(args, args.baseline_lock, run.candidate_lock, cand_record, run.path, say,
                                                          plot=False, pythons=(baseline.python, candidate.python)))
    if speed is not None:  # the readings stay in the report even if their plot fails
        phases.run("speed plot", lambda: report_speed.write_plot(speed, run.path))
    status = finish(run, base_record, cand_record, args, say, speed, phases)
    if getattr(args, "bisect", False) and evidence.is_complete(run.path):  # after the report is complete: it is kept whatever happens
        say("bisecting the findings (--bisect)")
        bisect_command.after_gate(run.path, candidate.python if args.bisect_env == "candidate" else baseline.python, args, say)
    return status


def compare_runs(args: argparse.Namespace) -> int:
    try:
        args.usage_scan = usage.scan(check_usage(args.usage)) if args.usage else None
    except validate.InvalidInput as exc:
        return fail(str(exc))
    baseline, candidate = load(args.baseline_run), load(args.candidate_run)
    report = beyond_contracts(compare.compare(baseline, candidate), baseline, candidate, args)
    return write_reports(scope.apply_args(report, args), args.out)


def crash_report(args: argparse.Namespace, reason: str) -> int:
    """Write a not-verified report for a crash of the gate itself, into the
    open run folder (gate) or ``--out`` (matrix, compare); 2 whatever happens.
    Never over a report the run already wrote, and never over the ``report.md``
    / ``report.json`` links of a gate output folder (a report of no run)."""
    empty = runner.not_verified("?", reason)
    report = compare.compare(empty, empty)
    run = getattr(args, "run_folder", None)
    try:
        if run is not None:
            if (run.path / "report.json").exists():
                return NOT_VERIFIED
            report["run"] = run.name
            write_reports(report, run.path)
            evidence.complete(run, args.keep, judged=False, why=reason)  # a report of no contract: never latest
            say_not_judged(run)
        else:
            out = getattr(args, "out", Path("reports/gate"))
            if args.func is gate or any((out / name).is_symlink() for name in evidence.CURRENT):
                return NOT_VERIFIED
            write_reports(report, out)
    except Exception as exc:  # 2 whatever happens: never the exit status of a verdict
        print(f"optax-gate: could not write the report either: {type(exc).__name__}: {exc}", file=sys.stderr)
    return NOT_VERIFIED
