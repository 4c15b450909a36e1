"""The gate's flow (``python -m optax_gate gate``): check the inputs, resolve
the candidate, install both sides and check their imports (a side that cannot
stops the gate at once), run both sides' contracts, then the late phases
(``optax_gate.gate.late``), and write the report into its run folder
(``optax_gate.gate.run.evidence``). Also ``compare`` of two run records, and the
report of a crash of the gate itself."""

from __future__ import annotations

import dataclasses
import functools
import shutil
import sys
from pathlib import Path

from optax_gate.gate import assemble, gate_inputs, late
from optax_gate.gate.base import atomic, model
from optax_gate.gate.base.progress import Progress
from optax_gate.gate.base.run_record import RecordFields, RunRecord
from optax_gate.gate.bisect import command as bisect_command
from optax_gate.gate.inputs import requirements, validate
from optax_gate.gate.inputs.options import GateOptions
from optax_gate.gate.install import environments, extras, source_specs
from optax_gate.gate.judge import compare
from optax_gate.gate.report import html_page as report_html
from optax_gate.gate.report import json_file as report_json
from optax_gate.gate.report import markdown as report_markdown
from optax_gate.gate.report import speed_section as report_speed
from optax_gate.gate.reuse import baseline_snapshots
from optax_gate.gate.run import evidence, runner
from optax_gate.gate.sides import beyond_contracts, run_both, save_run
from optax_gate.gate.sides_code import compare_code, select_modules
from optax_gate.gate.sides_prepare import (
    Folders,
    Side,
    bound_compilation_cache,
    built_python,
    check_imports,
    configured_packages,
    prepare,
    results_dir,
)
from optax_gate.gate.sides_resolve import resolve_sources, skipped
from optax_gate.gate.sides_speed import SpeedSides, measure_speed
from optax_gate.gate.team_code import scope
from optax_gate.gate.team_run import recording
from optax_gate.gate.upstream import pytest_run, upstream_tests

#: Exit status of the gate's own failures (bad input, crash, interruption).
NOT_VERIFIED = compare.EXIT_STATUS["not-verified"]


@dataclasses.dataclass
class Started:
    """What a command has started, for the command line's interruption and
    crash handling: the gate's open run folder (None before it exists, and
    for the other commands) and the ``--keep`` it is pruned with."""

    run: evidence.RunFolder | None = None
    keep: int = 10


@dataclasses.dataclass
class Learned:
    """What the gate learned on its way to the late phases: ``team_run``, the
    result of ``--run`` (None without it); ``pythons`` and ``jax_envs``, the
    two environments' interpreters and JAX variables (``--upstream-tests`` runs
    pytest in both); ``speed``, the speed readings; ``phases``, the late
    phases' failures so far; ``refused``, the refusal of an input (the run
    then judged nothing)."""

    team_run: model.TeamRun | None = None
    pythons: tuple[Path | None, ...] = ()
    jax_envs: tuple[dict[str, str], ...] = ({}, {})
    speed: model.Speed | None = None
    phases: late.LatePhases = dataclasses.field(default_factory=late.LatePhases)
    refused: str = ""


def fail(message: str) -> int:
    """Say ``message`` on stderr; return the not-verified exit status."""
    print(f"optax-gate: {message}", file=sys.stderr)
    return NOT_VERIFIED


def write_reports(report: model.Report, out: Path, phases: late.LatePhases | None = None) -> int:
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
        page = (
            phases.run("report writing (report.html)", lambda: report_html.render(report))
            if markdown is not None
            else None
        )
        if markdown is not None and page is None:  # report.md says so too: its verdict is now not verified
            phases.record(report)
            markdown = phases.run("report writing", lambda: report_markdown.render(report))
        phases.record(report)
        texts = (
            report_json.render(report),
            markdown if markdown is not None else late.fallback_markdown(report),
            page if page is not None else report_html.fallback(report),
        )
    atomic.write_text(out / "report.json", texts[0])
    atomic.write_text(out / "report.md", texts[1])
    atomic.write_text(out / "report.html", texts[2])
    print(f"optax-gate: verdict {report['verdict']} — {out / 'report.md'}")
    for reason in report["reasons"]:
        print(f"optax-gate:   {reason}")
    return compare.EXIT_STATUS[report["verdict"]]


def finish(
    run: evidence.RunFolder,
    baseline: RunRecord,
    candidate: RunRecord,
    options: GateOptions,
    say: Progress,
    learned: Learned | None = None,
) -> int:
    """Compare, write the run's reports, mark it complete and current.

    Each phase after the contracts runs under ``learned.phases``: its error is
    recorded in the report (verdict not-verified) beside both sides'
    contracts. A report that cannot be written, or linked, leaves the run
    marked incomplete and the previous runs linked: exit 2. A run that
    judged both sides (``evidence.judged``) becomes ``latest``; one that did
    not moves only the ``not-judged`` links. A run that ``learned.refused`` its input
    judged nothing: its report leaves the ``--usage`` scan and its notes out."""
    learned = learned or Learned()
    phases, refused = learned.phases, learned.refused
    say("writing the refusal report" if refused else "comparing and writing the report")
    for record in (baseline, candidate):
        phases.run("writing of the run records", functools.partial(save_run, record, run.evidence))
    report = compare.compare(baseline, candidate)
    report["run"] = run.name
    if snapshots := baseline.fields.get("snapshots"):
        report["notes"].append(
            "snapshot contracts compare with the baseline's own snapshots, recorded in this gate "
            f"({snapshots}): "
            "the baseline lock is not the pinned one, so the baseline runs in every gate and is never "
            "taken from the cache (`./noxw -s compare` re-judges a run's evidence without running)"
        )
    packages = configured_packages(options.environment.project_root)
    report = phases.run_or(
        "API surface, warnings and dependency diff",
        lambda: beyond_contracts(report, baseline, candidate, options.scope, packages, usage=not refused),
        report,
    )
    team = learned.team_run if not refused else None
    if team is not None:  # --run: the team's run scopes the findings and sets the verdict
        report = phases.run_or(
            "your run (--run)", lambda: assemble.with_team_run(report, team, options.scope.fail_on), report
        )
    else:
        report = phases.run_or(
            "scope of the findings",
            lambda: assemble.with_scope(
                report, scope.apply_options(report, options.scope, packages, usage=not refused)
            ),
            report,
        )
    report = phases.run_or("speed readings", lambda: assemble.with_speed(report, learned.speed), report)
    if options.upstream_tests and not refused:
        report = phases.run_or(
            "upstream tests cross-run (--upstream-tests)",
            lambda: upstream_cross_run(report, (baseline, candidate), options, learned, say),
            report,
        )
    digest = (
        phases.run("candidate lock digest", lambda: environments.digest(run.candidate_lock))
        if run.candidate_lock.exists()
        else None
    )
    if digest:
        report["candidate_lock"] = {"file": "candidate-lock.txt", "sha256": digest}
    phases.record(report)
    judged = evidence.judged(report)
    try:
        status = write_reports(report, run.path, phases)
        evidence.complete(
            run, options.keep, judged=judged, why=f"refused: {refused}" if refused else "; ".join(report["reasons"])
        )
    except OSError as exc:
        return fail(
            f"the report could not be written or made current ({exc}); the run folder {run.path} stays marked "
            f"{evidence.MARKER} and {evidence.report_now(run.root)}"
        )
    if judged:
        print(f"optax-gate: run folder {run.path}; {run.root / 'report.md'} now shows it")
    else:
        say_not_judged(run)
    return status


def say_not_judged(run: evidence.RunFolder) -> None:
    """The console line of a run that judged nothing: where its report is, and what ``report.md`` still shows."""
    print(
        f"optax-gate: this run judged nothing (not both sides' contracts ran): its report is "
        f"{run.root / 'not-judged.md'} (the run folder's report.md above); {evidence.report_now(run.root)}"
    )


def upstream_cross_run(
    report: model.Report,
    records: tuple[RunRecord, RunRecord],
    options: GateOptions,
    learned: Learned,
    say: Progress,
) -> model.Report:
    """``--upstream-tests``: optax's shipped tests cross-run (``optax_gate.gate.upstream.upstream_tests``)
    when both sides (``records``: baseline, candidate) ran; returns ``report`` with its section and findings
    (``assemble.with_upstream_tests``), or ``report`` as it is when a side did not run.

    Raises:
      pytest_run.CrossRunFailure: it could not run (a late phase's failure: not verified).
    """
    baseline, candidate = records
    if not baseline.ran or not candidate.ran:
        return report
    base_site, cand_site = baseline.fields.get("site_packages"), candidate.fields.get("site_packages")
    if not learned.pythons or not base_site or not cand_site:
        raise pytest_run.CrossRunFailure("the two environments' interpreters or site-packages are not known")
    say("upstream tests: cross-running optax's shipped tests of the modules that differ")
    envs = dict(zip(("baseline", "candidate"), learned.jax_envs, strict=True))
    section = upstream_tests.cross_run(
        {"baseline": Path(base_site), "candidate": Path(cand_site)},
        dict(zip(("baseline", "candidate"), (Path(built_python(p)) for p in learned.pythons), strict=True)),
        upstream_tests.CrossRunOptions(results_dir(options.environment), options.environment.timeout, envs),
        say=say,
    )
    return assemble.with_upstream_tests(report, section)


def failed(side: Side) -> bool:
    """Whether a prepared side already has a record that is not verified."""
    return side.record is not None and not side.record.ran


def stopped_record(failed: Side, other: str, say: Progress) -> RunRecord:
    """The record of the side ``other`` that does not run because ``failed``
    could not be installed or imported (no verdict is possible without both)."""
    cause = (failed.record.reason or "") if failed.record else ""
    say(
        f"{failed.label} cannot be installed or imported, so the {other} is not run (no verdict without both "
        f"sides): {cause}"
    )
    return skipped(other, f"the {failed.label} could not be installed or imported")


def gate(options: GateOptions, started: Started | None = None) -> int:
    """``python -m optax_gate gate``: the exit status of the verdict (0 pass,
    1 fail) or 2 (not verified). ``started`` is told the run folder as soon
    as it exists (the command line's interruption and crash handling)."""
    say = Progress()
    started = started if started is not None else Started()
    env, cand = options.environment, options.candidate
    if cand.lock and (cand.specs or cand.source):
        return fail("give either requirement SPECs (or --source) or --candidate-lock, not both")
    try:
        validate.writable_folder(options.out)
        run = evidence.start(options.out, sys.argv)
        started.run, started.keep = run, options.keep
    except validate.InvalidInput as exc:
        return fail(f"{exc} (no report written)")
    except OSError as exc:
        return fail(
            f"no run folder can be made under {options.out / 'runs'}: {exc.strerror or exc} (no report "
            f"written; {evidence.report_now(options.out)})"
        )
    say(f"run folder {run.path}")
    base_req = [f"lock file {env.baseline_lock}"]
    if cand.lock:
        cand_req = [f"lock file {cand.lock}"]
    else:
        cand_req = [*cand.specs, *(f"--source {text}" for text in cand.source)]
        cand_req = cand_req or [f"{name} (newest)" for name in requirements.NEWEST_DEFAULT]
    cand_extra: RecordFields = {}

    def refuse(exc: validate.InvalidInput) -> int:
        print(f"optax-gate: {exc}", file=sys.stderr)
        why = f"invalid input: {exc}"
        run.candidate_lock.unlink(missing_ok=True)  # no lock beside a report that judged none
        return finish(
            run,
            skipped("baseline", why, requirements=base_req),
            runner.not_verified("candidate", why, requirements=cand_req),
            options,
            say,
            Learned(refused=str(exc)),
        )

    try:
        say("checking the inputs")
        checked = gate_inputs.check_inputs(options, say)
    except validate.InvalidInput as exc:
        return refuse(exc)
    env = dataclasses.replace(env, team_dirs=checked.team_dirs)
    options = dataclasses.replace(
        options,
        environment=env,
        scope=dataclasses.replace(options.scope, usage=checked.usage, usage_scan=checked.usage_scan),
    )
    if cand.lock:
        shutil.copyfile(cand.lock, run.candidate_lock)
    else:
        say("resolving the candidate (" + " ".join(cand_req) + ")")
        plain, sources = list(checked.plain_specs), list(checked.sources)
        try:
            if built := resolve_sources(
                plain or ([] if sources else list(requirements.NEWEST_DEFAULT)), sources, run.candidate_lock, env, say
            ):
                cand_extra["sources"] = built
            extras.check(plain, run.candidate_lock, env.python)
        except validate.InvalidInput as exc:
            return refuse(exc)
        except environments.EnvironmentFailure as exc:
            print(f"optax-gate: the candidate cannot be resolved: {exc}", file=sys.stderr)
            return finish(
                run,
                skipped("baseline", "the candidate could not be resolved", requirements=base_req),
                runner.not_verified("candidate", str(exc), requirements=cand_req),
                options,
                say,
            )
        except source_specs.SourceFailure as exc:
            print(f"optax-gate: the candidate cannot be built from source: {exc}", file=sys.stderr)
            return finish(
                run,
                skipped("baseline", "the candidate could not be built from source", requirements=base_req),
                runner.not_verified("candidate", str(exc), requirements=cand_req, sources=[exc.record]),
                options,
                say,
            )

    # Fail fast: both sides are installed (the baseline first), then their imports checked, before
    # either runs a contract; a side that fails stops the gate there.
    def stop(failed: Side, other: str, other_record: RunRecord | None, other_req: list[str]) -> int:
        stopped = stopped_record(failed, other, say).with_fields(requirements=other_req)
        if failed.record is None:
            raise AssertionError("stop() follows failed(), which saw its record")
        records = {failed.label: failed.record, other: other_record or stopped}
        return finish(run, records["baseline"], records["candidate"], options, say)

    folders = Folders(run.evidence, run.checkpoints)
    bound_compilation_cache(env, say)
    baseline = prepare("baseline", env.baseline_lock, env, folders, say, requirements=base_req)
    if failed(baseline):
        return stop(baseline, "candidate", None, cand_req)
    cand_fields: RecordFields = {"requirements": cand_req, **cand_extra}
    candidate = prepare("candidate", run.candidate_lock, env, folders, say, **cand_fields)
    if not failed(candidate):
        check_imports((baseline, candidate), env, say)
    if failed(baseline):  # its own failure, and the candidate's too when both failed, stay in the report
        return stop(baseline, "candidate", candidate.record, cand_req)
    if failed(candidate):  # a cached baseline result stays
        return stop(candidate, "baseline", baseline.record, base_req)
    if (
        baseline_snapshots.arrange(baseline, candidate, env, run.evidence, say) is not None
    ):  # a team's baseline: its own snapshots
        env = dataclasses.replace(env, concurrent=False)  # the candidate compares with what the baseline records
    compare_code(baseline, candidate, env, run.candidate_lock, say)
    select_modules(baseline, candidate, env, run.candidate_lock, say)
    learned = Learned()
    if checked.run_spec is not None:  # the team's own run first: quick, and its verdict is the one asked for
        spec = dataclasses.replace(
            checked.run_spec,
            not_watched=tuple(p for p in (options.out, env.cache_dir, env.envs_dir) if p),
            cache=Path(env.cache_dir) / "team-run-ensemble" if env.cache_dir else None,
            warnings_differ=options.scope.fail_on_new_deprecations,
        )
        learned.team_run = team = recording.run(
            spec,
            (built_python(baseline.python), built_python(candidate.python)),
            run.evidence,
            say,
            recording.user_names(spec.run_dir),
        )
        if team["outcome"] == "not-verified":  # the verdict cannot be had: say so now, not after the contracts
            why = "--run could not be verified, so no contract ran"
            say(f"{why} ({team['reason']}); fix the command (or leave --run out) and run the gate again")
            return finish(
                run,
                skipped("baseline", why, requirements=base_req),
                skipped("candidate", why, requirements=cand_req),
                options,
                say,
                learned,
            )
    base_record, cand_record = run_both(baseline, candidate, env, say)
    learned.pythons = (baseline.python, candidate.python)  # --upstream-tests runs pytest in both
    learned.jax_envs = (baseline.jax_env, candidate.jax_env)
    learned.speed = speed = learned.phases.run(
        "speed readings",
        lambda: measure_speed(
            env, options.speed, run.candidate_lock, cand_record, say, SpeedSides(learned.pythons, baseline.cache_inputs)
        ),
    )
    if speed is not None:  # the readings stay in the report even if their plot fails
        learned.phases.run("speed plot", lambda: report_speed.write_plot(speed, run.path))
    status = finish(run, base_record, cand_record, options, say, learned)
    if options.bisect.enabled and evidence.is_complete(
        run.path
    ):  # after the report is complete: it is kept whatever happens
        say("bisecting the findings (--bisect)")
        bisect_command.after_gate(
            run.path,
            candidate.python if options.bisect.env == "candidate" else baseline.python,
            env,
            options.bisect,
            say,
        )
    return status


def crash_report(reason: str, started: Started, out: Path | None) -> int:
    """Write a not-verified report for a crash of the gate itself, into the
    open run folder (gate: ``started.run``) or ``out`` (matrix, compare,
    bisect; None for a gate whose run folder was never made); 2 whatever
    happens. Never over a report the run already wrote, and never over the
    ``report.md`` / ``report.json`` links of a gate output folder (a report of no run)."""
    empty = runner.not_verified("?", reason)
    report = compare.compare(empty, empty)
    run = started.run
    try:
        if run is not None:
            if (run.path / "report.json").exists():
                return NOT_VERIFIED
            report["run"] = run.name
            write_reports(report, run.path)
            evidence.complete(run, started.keep, judged=False, why=reason)  # a report of no contract: never latest
            say_not_judged(run)
        else:
            if out is None or any((out / name).is_symlink() for name in evidence.CURRENT):
                return NOT_VERIFIED
            write_reports(report, out)
    except Exception as exc:  # 2 whatever happens: never the exit status of a verdict
        print(f"optax-gate: could not write the report either: {type(exc).__name__}: {exc}", file=sys.stderr)
    return NOT_VERIFIED
