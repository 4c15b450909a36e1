"""Command line of the gate: ``python -m optax_gate <command>`` (through
``./noxw -s gate`` / ``./noxw -s matrix``).

Commands:

``gate [SPEC ...]``
    Check the inputs, resolve the candidate (the baseline's requirements with
    the packages named by ``SPEC`` replaced, e.g. ``optax==0.2.8``; with no
    ``SPEC``, the newest releases of optax, jax, jaxlib and flax) or take
    ``--candidate-lock``, then build (or reuse) both environments, run the
    contracts in each, and write the report into a new run folder under
    ``--out`` (``optax_gate.gate.evidence``); ``OUT/report.md`` shows the latest
    complete run.
    ``--usage PATH`` (repeatable, one path each) scopes the API surface and
    dependency diffs to the team's code and names its call sites on every
    finding; relative paths are read from the folder ``./noxw`` was started
    from; ``--fail-on-new-deprecations`` makes a new deprecation
    warning broken (``optax_gate.gate.unseen``).
``matrix [--plan | --only NAME ... | --merge] [--include-older]``
    Discover the releases of optax, jax/jaxlib and flax newer than the
    baseline on the package index, run the contracts in the baseline and in
    each candidate environment (``optax_gate.gate.matrix``), and write
    ``report.md``, ``report.json`` and ``report.html`` to ``--out``
    (default ``reports/matrix``). ``--plan`` only prints the environments as
    JSON (for fanning out over CI runners), ``--only`` runs the named ones
    (``baseline`` included) into ``runs/``, ``--merge`` combines ``runs/``
    into the report. A progress line at least every 25 s (``--heartbeat``)
    while an environment runs. Exit 2 when the baseline did not run; else 0
    once the report is written, or with ``--fail-on broken|changed`` (for
    scheduled jobs): 1 when an environment has a broken contract (or any
    differing one), else 2 when an environment is not verified, else 0.
``compare BASELINE_RUN CANDIDATE_RUN``
    Compare two run records (``evidence/<label>.json``) and write the reports.

Exit status (gate, compare):
  0  pass: no contract broke and no row beyond the contracts is broken
  1  fail: a contract broke, or a broken row beyond the contracts: an API
     surface change that breaks an import or call site of the team's code
     (--usage; without it, a contracted API removed or made incompatible), a
     dependency removed that the team's code imports (--usage), a new
     deprecation warning (--fail-on-new-deprecations), or a training step
     slower than --speed-budget
  2  not verified: a bad input (spec, extra, lock file, output folder), an
     environment that could not be resolved, installed or imported (the
     other side is then not run), pytest crashed or timed out, zero
     contracts ran, a contract went missing, the run was interrupted, or the
     gate itself failed (a failure after the contracts ran keeps them in the
     report, with the phase named)

Exit status (matrix):
  0  the report was written with a verified baseline
  2  the baseline was not verified, no plan to merge, or an environment name
     not in the plan
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import signal
import sys
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from optax_gate.gate import (atomic, baseline_cache, compare, compilation_cache, environments, evidence, extras, late, matrix, report_json,
                             report_markdown, report_matrix, requirements, runner, surface, unseen, validate)
from optax_gate.gate import report_speed, speed as speed_  # issue 12: speed drift
from optax_gate.gate.heartbeat import Heartbeat
from optax_gate.gate.progress import Progress
from optax_gate.gate.user_paths import check_usage, refuse_paths_as_specs, user_path

PYTHON_VERSION = "3.12"
#: Exit status of the gate's own failures (bad input, crash, interruption).
NOT_VERIFIED = compare.EXIT_STATUS["not-verified"]


class Interrupted(Exception):
    """SIGINT or SIGTERM reached the gate."""


def _fail(message: str) -> int:
    print(f"optax-gate: {message}", file=sys.stderr)
    return NOT_VERIFIED


def write_reports(report: dict[str, Any], out: Path, phases: late.LatePhases | None = None) -> int:
    """Write ``report.json`` and ``report.md`` atomically; return the exit status.
    With ``phases``, a report that cannot be rendered is recorded as a failure
    of the report writing and written in its plain form (``late.fallback_markdown``).

    Raises:
      OSError: a file could not be written (the files already there stay whole).
    """
    if phases is None:
        texts = report_json.render(report), report_markdown.render(report)
    else:
        markdown = phases.run("report writing", lambda: report_markdown.render(report))
        phases.record(report)
        texts = report_json.render(report), markdown if markdown is not None else late.fallback_markdown(report)
    atomic.write_text(out / "report.json", texts[0])
    atomic.write_text(out / "report.md", texts[1])
    print(f"optax-gate: verdict {report['verdict']} — {out / 'report.md'}")
    for reason in report["reasons"]:
        print(f"optax-gate:   {reason}")
    return compare.EXIT_STATUS[report["verdict"]]


def _save_run(record: dict[str, Any], folder: Path) -> None:
    atomic.write_text(folder / f"{record['label']}.json", json.dumps(record, indent=2, sort_keys=True) + "\n")


def _forget_previous_evidence(label: str, folder: Path) -> None:
    """Remove the files an earlier run of ``label`` left in ``folder`` (the
    matrix reuses ``runs/``), so a run that stops early never sits beside
    evidence that is not its own."""
    for old in folder.glob(f"{label}.*"):
        old.unlink()


@dataclasses.dataclass
class Side:
    """One side of a comparison, prepared: its environment built and its
    cache looked up. ``record`` is already final when the side needs no
    contract run (taken from the cache, or not verified)."""

    label: str
    folder: Path
    checkpoints: Path
    extra: dict[str, Any]
    python: Path | None = None
    jax_env: dict[str, str] = dataclasses.field(default_factory=dict)
    record: dict[str, Any] | None = None
    cache_inputs: dict[str, Any] | None = None
    probed: runner.Probe | None = None


def _prepare(label: str, lock: Path, args: argparse.Namespace, folder: Path, checkpoints: Path,
             say: Callable[[str], None], **extra: Any) -> Side:
    """Build (or reuse) the environment of ``lock``; for the baseline, take its
    result from the cache when a verified entry exists."""
    _forget_previous_evidence(label, folder)
    say(f"{label}: building (or reusing) its environment")
    env_folder = environments.folder_for(args.envs_dir, lock)
    extra["lock_file"] = str(lock)  # for the dependency diff (optax_gate.gate.unseen)
    side = Side(label, folder, checkpoints, extra)
    try:
        side.python = environments.ensure(env_folder, lock, args.python, args.project_root)
    except environments.EnvironmentFailure as exc:
        side.record = runner.not_verified(label, str(exc), **extra)
        return side
    side.jax_env = compilation_cache.environment(env_folder, args.compilation_cache)
    extra["compilation_cache"] = bool(side.jax_env.get("JAX_COMPILATION_CACHE_DIR"))
    extra["site_packages"] = str(unseen.site_packages(side.python) or "")  # for the API surface diff
    if label == "baseline" and args.baseline_cache:
        side.cache_inputs = baseline_cache.key_inputs(lock, args.project_root)
        cached, why = baseline_cache.fetch(args.cache_dir, side.cache_inputs, folder, checkpoints)
        if cached is not None:
            say(f"baseline: from cache {cached['from_cache']['key']}, recorded {cached['from_cache']['recorded']}")
            side.record = {**cached, **extra, "from_cache": cached["from_cache"]}
        else:
            say(f"baseline: not taken from the cache ({why})")
    return side


def _check_imports(sides: tuple[Side, ...], args: argparse.Namespace, say: Callable[[str], None]) -> None:
    """The import check of each side that will run its contracts, the sides at
    the same time, before any contract runs; a side that fails it gets its
    final not-verified record."""
    todo = [side for side in sides if side.record is None]
    for side in todo:
        say(f"{side.label}: checking its imports")
    with ThreadPoolExecutor(max_workers=max(len(todo), 1)) as pool:
        probes = list(pool.map(lambda side: runner.probe(side.python), todo))
    for side, probed in zip(todo, probes):
        side.probed = probed
        if probed[1]:
            side.record = runner.run(side.python, side.label, args.project_root, side.folder, args.timeout, probed=probed, **side.extra)


def _write_checkpoints(side: Side, args: argparse.Namespace, say: Callable[[str], None]) -> None:
    """The baseline writes the checkpoints every environment resumes from."""
    say("baseline: writing the resume checkpoints")
    side.extra["checkpoint_writer"] = runner.write_checkpoints(
        side.python, side.checkpoints, args.project_root, extra_env=side.jax_env) or "written"


#: pytest-xdist processes of a contract run that has the machine to itself
#: (one side at a time); two sides at once run one process each.
ALONE_WORKERS = 2


def _contracts(side: Side, args: argparse.Namespace, progress: Progress | None, workers: int = ALONE_WORKERS) -> dict[str, Any]:
    """Run the contracts of a prepared side (unless its record is final); a
    verified baseline run is stored in the cache."""
    if side.record is not None:
        return side.record
    say = progress or (lambda message: None)
    say(f"{side.label}: running the contracts")
    record = runner.run(side.python, side.label, args.project_root, side.folder, args.timeout, checkpoints=side.checkpoints,
                        on_progress=progress.contracts(side.label) if progress else None, extra_env=side.jax_env,
                        workers=workers, probed=side.probed, **side.extra)
    if side.cache_inputs is not None:
        entry = baseline_cache.store(args.cache_dir, side.cache_inputs, record,
                                     sorted(side.folder.glob(f"{side.label}.*")), side.checkpoints)
        if entry is not None:
            say(f"baseline: stored in the cache as {entry.name}")
    return record


def _run_lock(label: str, lock: Path, args: argparse.Namespace, folder: Path, checkpoints: Path,
              progress: Progress | None = None, **extra: Any) -> dict[str, Any]:
    """Build (or reuse) the environment of ``lock`` and run the contracts there
    (one side at a time: the matrix); evidence goes to ``folder``; the
    baseline writes the resume ``checkpoints``."""
    say = progress or (lambda message: None)
    side = _prepare(label, lock, args, folder, checkpoints, say, **extra)
    _check_imports((side,), args, say)
    if side.record is None and label == "baseline":
        _write_checkpoints(side, args, say)
    return _contracts(side, args, progress)


def _run_both(baseline: Side, candidate: Side, args: argparse.Namespace, say: Progress) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run the contracts of both sides. The checkpoints come first (the
    candidate resumes from them); then, when both sides need a run, the two
    pytest processes run at the same time unless ``--sequential``."""
    if baseline.record is None:
        _write_checkpoints(baseline, args, say)
    if baseline.record is None and candidate.record is None and args.concurrent:
        say("running both sides at the same time (--sequential to run one after the other)")
        pool = ThreadPoolExecutor(max_workers=2)
        try:
            futures = [pool.submit(_contracts, side, args, say, 0) for side in (baseline, candidate)]
            return futures[0].result(), futures[1].result()
        finally:  # on an interruption, do not wait here: main() stops the pytest processes
            pool.shutdown(wait=False, cancel_futures=True)
    return _contracts(baseline, args, say), _contracts(candidate, args, say)


def _resolve(specs: list[str], lock_path: Path, args: argparse.Namespace) -> Path:
    """Resolve the baseline's requirements with ``specs`` replaced into ``lock_path``.

    Raises:
      environments.EnvironmentFailure: the resolver found no set of versions.
    """
    text = requirements.replace(args.requirements_in.read_text(encoding="utf-8"), specs)
    req_in = atomic.write_text(lock_path.with_suffix(".in"), text)
    upgrade = [requirements.canonical_name(s) for s in specs]
    return environments.compile_lock(req_in, lock_path, args.baseline_lock, upgrade, PYTHON_VERSION)


def _run_specs(label: str, specs: list[str], lock_path: Path, args: argparse.Namespace, folder: Path,
               checkpoints: Path, progress: Progress | None = None) -> dict[str, Any]:
    """Resolve ``specs`` into ``lock_path``, then run it (the matrix's environments)."""
    _forget_previous_evidence(label, folder)
    try:
        lock = _resolve(specs, lock_path, args)
    except environments.EnvironmentFailure as exc:
        return runner.not_verified(label, str(exc), requirements=specs)
    return _run_lock(label, lock, args, folder, checkpoints, progress, requirements=specs)


def _finish(run: evidence.RunFolder, baseline: dict[str, Any], candidate: dict[str, Any], args: argparse.Namespace,
            say: Progress, speed: dict[str, Any] | None = None, phases: late.LatePhases | None = None,
            refused: str = "") -> int:
    """Compare, write the run's reports, mark it complete and current.

    Each phase after the contracts runs under ``phases``: its error is
    recorded in the report (verdict not-verified) beside both sides'
    contracts. A report that cannot be written, or linked, leaves the run
    marked incomplete and the previous complete run linked: exit 2."""
    phases = phases or late.LatePhases()
    say("comparing and writing the report")
    for record in (baseline, candidate):
        phases.run("writing of the run records", lambda record=record: _save_run(record, run.evidence))
    report = compare.compare(baseline, candidate)
    report["run"] = run.name
    phases.run("API surface, warnings and dependency diff", lambda: _beyond_contracts(report, baseline, candidate, args))
    phases.run("speed readings", lambda: speed_.attach(report, speed))
    digest = phases.run("candidate lock digest", lambda: environments.digest(run.candidate_lock)) if run.candidate_lock.exists() else None
    if digest:
        report["candidate_lock"] = {"file": "candidate-lock.txt", "sha256": digest}
    phases.record(report)
    try:
        status = write_reports(report, run.path, phases)
        evidence.complete(run, args.keep, refused=refused)
    except OSError as exc:
        return _fail(f"the report could not be written or made current ({exc}); the run folder {run.path} stays marked "
                     f"{evidence.MARKER} and {run.root / 'report.md'} still shows the previous complete run")
    print(f"optax-gate: run folder {run.path}; {run.root / 'report.md'} now shows it")
    return status


def _skipped(label: str, why: str, **extra: Any) -> dict[str, Any]:
    return runner.not_verified(label, f"not run: {why}", **extra)


def _check_inputs(args: argparse.Namespace, say: Callable[[str], None]) -> None:
    """Raises validate.InvalidInput for the first input that cannot be used."""
    known = validate.lock_packages(args.baseline_lock, "baseline lock")
    if args.candidate_lock:
        validate.lock_packages(args.candidate_lock, "candidate lock")
    else:
        if not args.requirements_in.is_file():
            raise validate.InvalidInput(f"--requirements-in {args.requirements_in} does not exist")
        refuse_paths_as_specs(args.specs, known)
        validate.parse_specs(args.specs, known, args.allow_extra)
    args.usage_scan = check_usage(args.usage)  # before anything runs; unreadable files are listed, not fatal
    if args.usage_scan is not None:
        say(f"--usage: {args.usage_scan.scanned} of {args.usage_scan.found} file(s) scanned, "
            f"{len(args.usage_scan.not_scanned)} not scanned (listed in the report)")


def _failed(side: Side) -> bool:
    """Whether a prepared side already has a record that is not verified."""
    return side.record is not None and side.record.get("status") != "ran"


def _stopped(failed: Side, other: str, say: Progress) -> dict[str, Any]:
    """The record of the side ``other`` that does not run because ``failed``
    could not be installed or imported (no verdict is possible without both)."""
    cause = failed.record.get("reason", "") if failed.record else ""
    say(f"{failed.label} cannot be installed or imported, so the {other} is not run (no verdict without both sides): {cause}")
    return _skipped(other, f"the {failed.label} could not be installed or imported")


def gate(args: argparse.Namespace) -> int:
    say = Progress()
    if args.candidate_lock and args.specs:
        return _fail("give either requirement SPECs or --candidate-lock, not both")
    try:
        validate.writable_folder(args.out)
        run = args.run_folder = evidence.start(args.out, sys.argv)
    except validate.InvalidInput as exc:
        return _fail(f"{exc} (no report written)")
    except OSError as exc:
        return _fail(f"no run folder can be made under {args.out / 'runs'}: {exc.strerror or exc} (no report written; "
                     f"{args.out / 'report.md'} still shows the previous complete run)")
    say(f"run folder {run.path}")
    base_req = [f"lock file {args.baseline_lock}"]
    if args.candidate_lock:
        cand_req = [f"lock file {args.candidate_lock}"]
    else:
        cand_req = args.specs or [f"{name} (newest)" for name in requirements.NEWEST_DEFAULT]

    def refuse(exc: validate.InvalidInput) -> int:
        print(f"optax-gate: {exc}", file=sys.stderr)
        why = f"invalid input: {exc}"
        run.candidate_lock.unlink(missing_ok=True)  # no lock beside a report that judged none
        return _finish(run, _skipped("baseline", why, requirements=base_req), runner.not_verified("candidate", why, requirements=cand_req),
                       args, say, refused=str(exc))

    try:
        say("checking the inputs")
        _check_inputs(args, say)
    except validate.InvalidInput as exc:
        return refuse(exc)
    if args.candidate_lock:
        shutil.copyfile(args.candidate_lock, run.candidate_lock)
    else:
        say("resolving the candidate (" + " ".join(cand_req) + ")")
        try:
            _resolve(args.specs or list(requirements.NEWEST_DEFAULT), run.candidate_lock, args)
            extras.check(args.specs, run.candidate_lock, args.python)
        except validate.InvalidInput as exc:
            return refuse(exc)
        except environments.EnvironmentFailure as exc:
            print(f"optax-gate: the candidate cannot be resolved: {exc}", file=sys.stderr)
            return _finish(run, _skipped("baseline", "the candidate could not be resolved", requirements=base_req),
                           runner.not_verified("candidate", str(exc), requirements=cand_req), args, say)
    # Fail fast: both sides are installed (the baseline first), then their imports checked, before
    # either runs a contract; a side that fails stops the gate there.
    def stop(failed: Side, other: str, other_record: dict[str, Any] | None, other_req: list[str]) -> int:
        stopped = {**_stopped(failed, other, say), "requirements": other_req}
        records = {failed.label: failed.record, other: other_record or stopped}
        return _finish(run, records["baseline"], records["candidate"], args, say)

    baseline = _prepare("baseline", args.baseline_lock, args, run.evidence, run.checkpoints, say, requirements=base_req)
    if _failed(baseline):
        return stop(baseline, "candidate", None, cand_req)
    candidate = _prepare("candidate", run.candidate_lock, args, run.evidence, run.checkpoints, say, requirements=cand_req)
    if not _failed(candidate):
        _check_imports((baseline, candidate), args, say)
    if _failed(baseline):  # its own failure, and the candidate's too when both failed, stay in the report
        return stop(baseline, "candidate", candidate.record, cand_req)
    if _failed(candidate):  # a cached baseline result stays
        return stop(candidate, "baseline", baseline.record, base_req)
    base_record, cand_record = _run_both(baseline, candidate, args, say)
    phases = late.LatePhases()
    speed = phases.run("speed readings", lambda: _speed(args, args.baseline_lock, run.candidate_lock, cand_record, run.path, say,
                                                          plot=False, pythons=(baseline.python, candidate.python)))
    if speed is not None:  # the readings stay in the report even if their plot fails
        phases.run("speed plot", lambda: report_speed.write_plot(speed, run.path))
    return _finish(run, base_record, cand_record, args, say, speed, phases)


# ---- speed drift (issue 12, items 3-4): separate from the contract runs --------------------------------
def _speed(args: argparse.Namespace, baseline_lock: Path, candidate_lock: Path, candidate: dict[str, Any],
           folder: Path, say: Progress | None = None, plot: bool = True,
           pythons: tuple[Path | None, ...] = ()) -> dict[str, Any] | None:
    """Time the training steps of both environments, interleaved (``gate.speed``),
    and draw the plot into ``folder``; None under ``--no-speed``. Measured here,
    in this run, even when a contract result comes from the baseline cache.
    ``pythons``: the environments' interpreters when already built (else built here)."""
    if not args.speed:
        return None
    if candidate.get("status") != "ran":
        return speed_.not_measured("the candidate did not run its contracts", args.speed_budget)
    if say:
        say(f"speed: timing the training steps, {args.speed_rounds} rounds interleaved")
    try:
        if len(pythons) != 2 or not all(pythons):
            pythons = tuple(environments.ensure(environments.folder_for(args.envs_dir, lock), lock, args.python,
                                                args.project_root) for lock in (baseline_lock, candidate_lock))
    except environments.EnvironmentFailure as exc:
        return speed_.not_measured(str(exc), args.speed_budget)
    result = speed_.measure(*pythons, args.project_root, args.speed_rounds, args.speed_budget)
    if plot:
        report_speed.write_plot(result, folder)
    return result


def _seconds(text: str) -> float:
    value = float(text)
    if not value > 0:  # NaN included
        raise argparse.ArgumentTypeError(f"must be a number of seconds greater than 0, got {text}")
    return value


def _count(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def _ratio(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive ratio, got {text}")
    return value


def _rounds(text: str) -> int:
    value = int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"must be at least 2, got {text}")
    return value


def _speed_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--speed", action=argparse.BooleanOptionalAction, default=True,
                   help="time three training steps in both environments, interleaved (default: on; 18 compilations, about 20 s on an idle 2-core machine)")
    p.add_argument("--speed-budget", type=_ratio, default=None, metavar="RATIO",
                   help="a training step slower than RATIO x the baseline's (beyond noise) is broken (default: never)")
    p.add_argument("--speed-rounds", type=_rounds, default=speed_.ROUNDS, metavar="N",
                   help="compile rounds of the speed readings, at least 2 (default: %(default)s)")
# ---- end of speed drift -----------------------------------------------------------------------------------


# --- beyond the contracts (issue 10): API surface, warnings, dependencies ----------------------
def _beyond_contracts(report: dict[str, Any], baseline: dict[str, Any], candidate: dict[str, Any],
                      args: argparse.Namespace) -> dict[str, Any]:
    packages = surface.configured_packages(Path(getattr(args, "project_root", Path.cwd())) / "pyproject.toml")
    return unseen.attach(report, baseline, candidate, usage_paths=args.usage, packages=packages,
                         fail_on_new_deprecations=args.fail_on_new_deprecations, usage_scan=getattr(args, "usage_scan", None))


def _beyond_contracts_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--usage", action="append", type=user_path, default=None, metavar="PATH",
                   help="the team's code (.py, .ipynb, or a folder of them): scope the API surface and dependency diffs "
                        "to what it uses and name its call sites on every finding; one path each, repeat it for more "
                        "(--usage src --usage notebooks); files that cannot be scanned are listed in the report")
    p.add_argument("--fail-on-new-deprecations", action="store_true",
                   help="a deprecation warning new in the candidate is broken (for code run with -W error)")
# ------------------------------------------------------------------------------------------------


def _load(path: Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def run_matrix(args: argparse.Namespace) -> int:
    out = args.out
    plan_path = out / "plan.json"
    if args.fail_on and not args.merge and (args.only or args.plan):
        return _fail("--fail-on judges the merged report: give it to a full run or to --merge, not to --plan or --only")
    if args.merge or (args.only and plan_path.exists()):
        # Merge, and runners fanned out by CI, use the plan already made: every
        # runner sees the same environments even if a release appears meanwhile.
        if not plan_path.exists():
            print(f"optax-gate: no {plan_path}; run the plan first (--plan or a full matrix run)", file=sys.stderr)
            return 2
        plan = _load(plan_path)
    else:
        envs, discovered = matrix.plan(args.requirements_in.read_text(encoding="utf-8"), include_older=args.include_older)
        plan = {"discovered": discovered, "environments": [e.to_json() for e in envs]}
        atomic.write_text(plan_path, json.dumps(plan, indent=2) + "\n")
        if args.plan:
            print(json.dumps(plan, indent=2))
            return 0
    names = {e["name"]: e for e in plan["environments"]}
    wanted = args.only or ([] if args.merge else ["baseline", *names])
    unknown = [n for n in wanted if n != "baseline" and n not in names]
    if unknown:
        print(f"optax-gate: not in the plan: {unknown}; planned: {sorted(names)}", file=sys.stderr)
        return 2
    with Heartbeat(args.heartbeat) as say:  # a line at least every --heartbeat seconds while an environment runs
        for i, name in enumerate(wanted, 1):
            say(f"{name}: environment {i} of {len(wanted)}")
            if name == "baseline":
                record = _run_lock("baseline", args.baseline_lock, args, out / "runs", out / "checkpoints", say,
                                   requirements=[f"lock file {args.baseline_lock}"])
            else:
                say(f"{name}: resolving {' '.join(names[name]['specs'])}")
                record = _run_specs(name, list(names[name]["specs"]), out / "locks" / f"{name}.txt", args, out / "runs",
                                    out / "checkpoints", say)
                record["speed"] = _speed(args, args.baseline_lock, out / "locks" / f"{name}.txt", record, out / "runs", say, plot=False)
            _save_run(record, out / "runs")
            say.idle()
            cached = record.get("from_cache")
            origin = f" — baseline taken from the cache ({cached['key']}, recorded {cached['recorded']})" if cached else ""
            print(f"optax-gate: {name}: {record['status']} {record.get('reason', '')}{origin}", flush=True)
    if args.only:
        return 0
    runs_dir = out / "runs"
    base_path = runs_dir / "baseline.json"
    baseline = _load(base_path) if base_path.exists() else runner.not_verified("baseline", "no run record")
    runs = {n: _load(runs_dir / f"{n}.json") for n in names if (runs_dir / f"{n}.json").exists()}
    packages = surface.configured_packages(Path(args.project_root) / "pyproject.toml")
    report = matrix.merge(baseline, runs, plan["environments"], plan["discovered"], packages=packages)
    report["exit"] = matrix.exit_status(report, args.fail_on)
    atomic.write_text(out / "report.json", report_json.render(report))
    atomic.write_text(out / "report.md", report_matrix.markdown(report))
    atomic.write_text(out / "report.html", report_matrix.html_grid(report))
    for e in report["environments"]:
        print(f"optax-gate: {e['name']:24s} {e['verdict']:13s} {'; '.join(e['reasons'])}")
    print(f"optax-gate: matrix report — {out / 'report.md'}, {out / 'report.html'}")
    print(f"optax-gate: {matrix.exit_words(report['exit'])}")
    return report["exit"]["status"]


def compare_runs(args: argparse.Namespace) -> int:
    try:
        args.usage_scan = check_usage(args.usage)
    except validate.InvalidInput as exc:
        return _fail(str(exc))
    baseline, candidate = _load(args.baseline_run), _load(args.candidate_run)
    return write_reports(_beyond_contracts(compare.compare(baseline, candidate), baseline, candidate, args), args.out)


def _environment_options(p: argparse.ArgumentParser, out: str) -> None:
    p.add_argument("--baseline-lock", type=user_path, default=Path("requirements-lock.txt"), metavar="FILE",
                   help="hash-pinned lock of the baseline (default: %(default)s)")
    p.add_argument("--requirements-in", type=user_path, default=Path("requirements.in"), metavar="FILE",
                   help="the baseline's direct requirements, which SPECs replace (default: %(default)s)")
    p.add_argument("--out", type=user_path, default=Path(out), metavar="DIR", help="output folder (default: %(default)s)")
    p.add_argument("--envs-dir", type=user_path, default=Path(".nox/gate-envs"), metavar="DIR",
                   help="where environments are built and reused, one per lock content (default: %(default)s)")
    p.add_argument("--python", default=sys.executable, help="Python 3.12 interpreter to build environments with (default: this one)")
    p.add_argument("--project-root", type=user_path, default=Path.cwd(), metavar="DIR",
                   help="the project folder holding tests/contracts (default: the current folder)")
    p.add_argument("--timeout", type=_seconds, default=1800, metavar="SECONDS", help="time limit of one pytest run (default: %(default)s)")
    p.add_argument("--no-cache", dest="baseline_cache", action="store_false",
                   help="run the baseline even when its result is cached (the new result replaces the entry)")
    p.add_argument("--cache-dir", type=user_path, default=Path(".nox/gate-cache"), metavar="DIR",
                   help="where baseline results are cached, content-addressed (default: %(default)s)")
    p.add_argument("--no-compilation-cache", dest="compilation_cache", action="store_false",
                   help="compile every program afresh (default: JAX's persistent compilation cache, one per environment; "
                        "also off with OPTAX_GATE_COMPILATION_CACHE=0)")


def _help(start: str = "", end: str | None = None) -> str:
    """The part of the module docstring from ``start`` up to ``end``, as plain
    help text (reST's double backticks dropped)."""
    text = __doc__[__doc__.index(start):]
    text = text[:text.index(end)] if end else text
    return text.replace("``", "")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="optax-gate", description=_help(), formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    g = sub.add_parser("gate", help="run the contracts in the baseline and a candidate, write the report",
                       description="Judge an upgrade:\n" + _help("``gate [SPEC ...]``", "``matrix")
                       + "\n" + _help("Exit status (gate", "Exit status (matrix"), formatter_class=argparse.RawDescriptionHelpFormatter)
    g.add_argument("specs", nargs="*", metavar="SPEC",
                   help="a candidate requirement (PEP 508), e.g. optax==0.2.8 jax==0.12.0.1 jaxlib==0.12.0.1; "
                        "only packages of the baseline lock unless --allow-extra")
    g.add_argument("--candidate-lock", type=user_path, default=None, metavar="FILE",
                   help="judge this hash-pinned lock file instead of SPECs (what a bump pull request changes)")
    g.add_argument("--allow-extra", action="store_true", help="let SPECs add packages the baseline does not require")
    g.add_argument("--sequential", dest="concurrent", action="store_false",
                   help="run the baseline's and the candidate's contracts one after the other (default: at the same time "
                        "when both need a run)")
    g.add_argument("--keep", type=_count, default=10, metavar="N",
                   help="complete runs kept under OUT/runs, at least 1; runs that refused their input do not count (default: %(default)s)")
    _environment_options(g, "reports/gate")
    _beyond_contracts_options(g)
    _speed_options(g)
    g.set_defaults(func=gate)
    m = sub.add_parser("matrix", help="every newer release of optax, jax/jaxlib and flax against the baseline",
                       description="The release matrix:\n" + _help("``matrix", "``compare") + "\n" + _help("Exit status (matrix"),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    what = m.add_mutually_exclusive_group()
    what.add_argument("--plan", action="store_true", help="print the planned environments as JSON and stop")
    what.add_argument("--only", action="append", metavar="NAME", help="run only these environments (and 'baseline')")
    what.add_argument("--merge", action="store_true", help="combine the runs in OUT/runs into the report")
    m.add_argument("--include-older", action="store_true", help="also plan releases older than the baseline")
    m.add_argument("--fail-on", choices=matrix.FAIL_ON, default=None,
                   help="for scheduled jobs (with a full run or --merge): exit 1 when an environment has a broken contract "
                        "(broken) or any contract that differs (changed); else 2 when an environment is not verified")
    m.add_argument("--heartbeat", type=_seconds, default=25.0, metavar="SECONDS",
                   help="longest silence on the console while an environment runs (default: %(default)s)")
    _environment_options(m, "reports/matrix")
    _speed_options(m)
    m.set_defaults(func=run_matrix)
    c = sub.add_parser("compare", help="compare two run records and write the report")
    c.add_argument("baseline_run", type=user_path, help="the baseline's run record (JSON)")
    c.add_argument("candidate_run", type=user_path, help="the candidate's run record (JSON)")
    c.add_argument("--out", type=user_path, default=Path("reports/gate"), metavar="DIR", help="output folder (default: %(default)s)")
    _beyond_contracts_options(c)
    c.set_defaults(func=compare_runs)
    return p


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line's arguments; the gate's SPECs may sit between options
    (``--usage src optax==0.2.8 --usage nb jax==0.12.0.1``: argparse alone
    takes one run of them). Exits 2 on an unknown option."""
    p = parser()
    args, rest = p.parse_known_args(argv)
    if rest and args.command == "gate" and not any(r.startswith("-") for r in rest):
        args.specs += rest
    elif rest:
        p.error(f"unrecognized arguments: {' '.join(rest)}")
    return args


def _interrupt(signum, frame):
    raise Interrupted(signal.Signals(signum).name)


def _crash_report(args: argparse.Namespace, reason: str) -> int:
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
            evidence.complete(run, args.keep)
        else:
            out = getattr(args, "out", Path("reports/gate"))
            if args.func is gate or any((out / name).is_symlink() for name in evidence.CURRENT):
                return NOT_VERIFIED
            write_reports(report, out)
    except Exception as exc:  # 2 whatever happens: never the exit status of a verdict
        print(f"optax-gate: could not write the report either: {type(exc).__name__}: {exc}", file=sys.stderr)
    return NOT_VERIFIED


def main(argv: list[str] | None = None) -> int:
    """Run one command; return its exit status (see the module docstring)."""
    args = parse(argv)
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        return args.func(args)
    except (KeyboardInterrupt, Interrupted) as exc:
        runner.stop_all()
        run = getattr(args, "run_folder", None)
        where = f"; its folder {run.path} stays marked {evidence.MARKER} and the previous report is untouched" if run else ""
        return _fail(f"interrupted ({str(exc) or 'SIGINT'}): not verified{where}")
    except Exception as exc:  # fail closed: a crash of the gate is "not verified", with a report if one can be written
        traceback.print_exc()
        print(f"optax-gate: the gate itself failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return _crash_report(args, f"gate error: {type(exc).__name__}: {exc}")
    finally:
        signal.signal(signal.SIGTERM, previous)
