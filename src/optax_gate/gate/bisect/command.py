"""The two ways a bisection runs: after the gate's report is complete
(``gate --bisect``) and on an existing report (``python -m optax_gate bisect
[DIR]``, the ``bisect`` nox session). Either way the finished report is
written first and kept: the bisection rewrites it atomically with its answers,
also when it fails or is interrupted ("not bisected: <why>" on each finding)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from optax_gate.gate.base import model
from optax_gate.gate.bisect import flow as bisect_flow
from optax_gate.gate.bisect.history import parse_histories
from optax_gate.gate.bisect.probe import Prober
from optax_gate.gate.inputs.options import BisectCommandOptions, BisectOptions, EnvironmentOptions
from optax_gate.gate.install import compilation_cache, environments
from optax_gate.gate.run import evidence, runner

#: Exit status of the bisect command when the report or its environment cannot be used.
NOT_VERIFIED = 2


def baseline_optax(report: Mapping[str, Any]) -> str:
    """The optax version the report's baseline ran ("" when it does not say): a
    commit's contracts are judged against it, as both sides of the gate were."""
    versions = (report.get("baseline") or {}).get("versions") or {}
    return str(versions.get("optax") or "") if isinstance(versions, Mapping) else ""


def _prober_factory(
    python: Path, environment: EnvironmentOptions, bisect: BisectOptions, run_folder: Path, report: Mapping[str, Any]
) -> Callable[[str, Path], Prober]:
    env = dict(
        compilation_cache.environment(
            compilation_cache.shared(environment.cache_dir, environment.envs_dir), environment.compilation_cache
        )
    )
    if (run_folder / "checkpoints").is_dir():  # the resume contracts read the baseline's checkpoints
        env["OPTAX_GATE_CHECKPOINTS"] = str((run_folder / "checkpoints").absolute())
    env.update(
        runner.baseline_variables(environment.baseline_lock, baseline_optax(report))
    )  # what the gate's baseline ran
    return lambda package, repo: Prober(package, repo, python, environment, bisect, env)


def bisect_run(
    report: model.Report,
    run_folder: Path,
    python: Path,
    environment: EnvironmentOptions,
    bisect: BisectOptions,
    say: Callable[[str], None],
) -> None:
    """Bisect ``report`` (the run folder's) and write it back, whatever happens.

    Raises:
      ValueError: a ``--history`` value cannot be used (nothing written).
    """
    histories = parse_histories(list(bisect.history) or None)
    try:
        bisect_flow.attach(
            report, _prober_factory(python, environment, bisect, run_folder, report), histories, bisect, say
        )
    except Exception:  # recorded in the report ("not bisected: bisection failed: ..."); the verdict stays
        import traceback

        traceback.print_exc()
    finally:
        bisect_flow.write(report, run_folder)
        say(f"bisection written into {run_folder / 'report.md'} ({report['bisect'].get('error') or 'done'})")


def after_gate(
    run_folder: Path,
    python: Path | None,
    environment: EnvironmentOptions,
    bisect: BisectOptions,
    say: Callable[[str], None],
) -> None:
    """``gate --bisect``: bisect the complete run's report. An interruption is
    recorded and ends the bisection only: the gate's exit status stays the verdict's."""
    path = run_folder / "report.json"
    if python is None or not path.exists():
        say("bisection skipped: the candidate's environment or the report is missing")
        return
    try:
        bisect_run(json.loads(path.read_text(encoding="utf-8")), run_folder, python, environment, bisect, say)
    except KeyboardInterrupt:
        print("optax-gate: the bisection was interrupted; the report says 'not bisected: interrupted'", file=sys.stderr)
    except BaseException as exc:  # the cli's Interrupted (SIGTERM) is a BaseException too
        if type(exc).__name__ != "Interrupted":
            raise
        print("optax-gate: the bisection was interrupted; the report says 'not bisected: interrupted'", file=sys.stderr)


def _ran(report: Mapping[str, Any]) -> bool:
    return evidence.judged(report)  # the rule that makes a run ``latest``: both sides' contracts ran


def _why(report: Mapping[str, Any]) -> str:
    return "; ".join(report.get("reasons") or []) or "a side did not run its contracts"


def _newest_ran(runs: Path) -> Path | None:
    """The newest complete run folder under ``runs`` whose report ran both sides."""
    for folder in sorted((p for p in runs.iterdir() if p.is_dir()), key=lambda p: p.name, reverse=True):
        try:
            if not (folder / evidence.MARKER).exists() and _ran(
                json.loads((folder / "report.json").read_text(encoding="utf-8"))
            ):
                return folder
        except (OSError, ValueError):
            continue
    return None


def command(options: BisectCommandOptions, started: object = None) -> int:
    """``python -m optax_gate bisect [DIR]``: 0 once the report carries the
    bisection (whatever its answers), 2 when the report, the ``--history``
    values or the candidate's environment cannot be used."""

    def say(message: str) -> None:
        print(f"optax-gate: {message}", flush=True)

    environment, bisect = options.environment, options.bisect
    where = Path(options.report)
    path = where / "report.json" if where.is_dir() else where
    try:
        parse_histories(list(bisect.history) or None)  # a --history typo is refused before anything is touched
        run_folder = path.resolve(strict=True).parent  # a gate output folder's report.json links into its latest run
        report = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        if not where.exists() and not where.is_symlink():
            print(
                f"optax-gate: cannot bisect {where}: it does not exist (name a gate output folder or a run folder)",
                file=sys.stderr,
            )
        elif where.is_dir() and (where / "runs").is_dir():  # an output folder where no run has judged both sides yet
            shown = (
                f" (the newest run that judged nothing: {where / 'not-judged.md'})"
                if (where / "not-judged.md").exists()
                else ""
            )
            print(f"optax-gate: no run in {where / 'runs'} ran both sides: nothing to bisect{shown}", file=sys.stderr)
        elif (
            where.is_dir() and (where / evidence.MARKER).exists()
        ):  # a run folder whose gate was interrupted or crashed
            print(
                f"optax-gate: cannot bisect {where}: that run did not finish (marked {evidence.MARKER}), so it has no "
                f"report; name a run that finished, or the gate output folder above it",
                file=sys.stderr,
            )
        else:
            print(
                f"optax-gate: cannot bisect {where}: no report.json there (name a gate output folder or a run folder)",
                file=sys.stderr,
            )
        return NOT_VERIFIED
    except (OSError, ValueError) as exc:
        print(f"optax-gate: cannot bisect {path}: {exc}", file=sys.stderr)
        return NOT_VERIFIED
    if not _ran(report) and (where / "runs").is_dir():  # an output folder whose latest run was refused or not verified
        newest = _newest_ran(where / "runs")
        if newest is None:
            print(f"optax-gate: no run in {where / 'runs'} ran both sides: nothing to bisect", file=sys.stderr)
            return NOT_VERIFIED
        say(
            f"the latest run {run_folder.name} was not verified ({_why(report)}); bisecting the newest run "
            f"that ran both sides: {newest.name}"
        )
        run_folder, report = newest, json.loads((newest / "report.json").read_text(encoding="utf-8"))
    if not _ran(report):
        print(
            f"optax-gate: {run_folder} was not verified ({_why(report)}): nothing to bisect; the report is "
            "left as it is",
            file=sys.stderr,
        )
        return NOT_VERIFIED
    if (run_folder / evidence.MARKER).exists():
        print(f"optax-gate: {run_folder} is marked {evidence.MARKER}: bisect a complete run", file=sys.stderr)
        return NOT_VERIFIED
    side = bisect.env
    lock = run_folder / "candidate-lock.txt" if side == "candidate" else environment.baseline_lock
    if not lock.exists():
        print(
            f"optax-gate: {lock} does not exist: {run_folder} is not a gate run folder"
            if side == "candidate"
            else f"optax-gate: --baseline-lock {lock} does not exist",
            file=sys.stderr,
        )
        return NOT_VERIFIED
    say(f"{side}: building (or reusing) its environment from {lock}")
    try:
        python = environments.ensure(
            environments.folder_for(environment.envs_dir, lock), lock, environment.python, environment.project_root
        )
    except environments.EnvironmentFailure as exc:
        print(f"optax-gate: the {side}'s environment cannot be built: {exc}", file=sys.stderr)
        return NOT_VERIFIED
    bisect_run(report, run_folder, python, environment, bisect, say)
    return 0
