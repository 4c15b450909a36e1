"""The command line of the gate (``python -m optax_gate <command>``): the frozen options built once from what
``cli_parser`` parsed, the interruptions, and the exit statuses."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import traceback
from pathlib import Path
from types import FrameType

from optax_gate.gate import cli_parser
from optax_gate.gate.gate_flow import NOT_VERIFIED, Started, crash_report, fail
from optax_gate.gate.inputs import options as opts
from optax_gate.gate.inputs import validate
from optax_gate.gate.run import evidence, pytest_process

__all__ = ["NOT_VERIFIED", "main", "options"]


class Interrupted(BaseException):
    """SIGTERM reached the gate. A ``BaseException``, like the
    ``KeyboardInterrupt`` of SIGINT, so that no ``except Exception`` on the
    way (a late phase's failure, a crash report) takes it for an error."""


def _environment(args: argparse.Namespace) -> opts.EnvironmentOptions:
    return opts.EnvironmentOptions(
        project_root=args.project_root,
        baseline_lock=args.baseline_lock,
        python=args.python,
        envs_dir=args.envs_dir,
        compilation_cache=args.compilation_cache,
        requirements_in=getattr(args, "requirements_in", None),
        timeout=getattr(args, "timeout", 3600.0),
        cache_dir=getattr(args, "cache_dir", None),
        use_cache=getattr(args, "baseline_cache", True),
        select_modules=getattr(args, "select_modules", True),
        concurrent=getattr(args, "concurrent", True),
    )


def _speed(args: argparse.Namespace) -> opts.SpeedOptions:
    return opts.SpeedOptions(enabled=args.speed, rounds=args.speed_rounds, budget=args.speed_budget)


def _scope(args: argparse.Namespace) -> opts.ScopeOptions:
    return opts.ScopeOptions(
        usage=tuple(args.usage or ()), fail_on=args.fail_on, fail_on_new_deprecations=args.fail_on_new_deprecations
    )


def _bisect(args: argparse.Namespace) -> opts.BisectOptions:
    return opts.BisectOptions(
        enabled=getattr(args, "bisect", False),
        history=tuple(args.history or ()),
        cache=args.bisect_cache,
        env=args.bisect_env,
        timeout=args.bisect_timeout,
    )


def options(
    args: argparse.Namespace,
) -> opts.GateOptions | opts.MatrixOptions | opts.CompareOptions | opts.BisectCommandOptions | opts.RebaselineOptions:
    """The typed options of the command ``args`` holds (:mod:`optax_gate.gate.inputs.options`), made once here."""
    if args.command == "gate":
        return opts.GateOptions(
            environment=_environment(args),
            speed=_speed(args),
            scope=_scope(args),
            bisect=_bisect(args),
            candidate=opts.CandidateOptions(
                specs=tuple(args.specs),
                source=tuple(args.source or ()),
                lock=args.candidate_lock,
                allow_extra=args.allow_extra,
            ),
            team_run=opts.TeamRunOptions(
                command=args.run, folder=args.run_dir, timeout=args.run_timeout, exact=args.exact
            ),
            out=args.out,
            keep=args.keep,
            contracts=tuple(args.contracts or ()),
            upstream_tests=args.upstream_tests,
        )
    if args.command == "matrix":
        return opts.MatrixOptions(
            environment=_environment(args),
            speed=_speed(args),
            out=args.out,
            plan_only=args.plan,
            only=tuple(args.only or ()),
            merge=args.merge,
            include_older=args.include_older,
            upstream=args.upstream,
            fail_on=args.fail_on,
            upstream_tests=args.upstream_tests,
            heartbeat=args.heartbeat,
        )
    if args.command == "compare":
        return opts.CompareOptions(
            baseline_run=args.baseline_run,
            candidate_run=args.candidate_run,
            scope=_scope(args),
            out=args.out,
            team_run=args.team_run,
        )
    if args.command == "rebaseline":
        return opts.RebaselineOptions(environment=_environment(args), lock=args.lock, move=args.move, out=args.out)
    return opts.BisectCommandOptions(report=args.report, environment=_environment(args), bisect=_bisect(args))


#: The signals that reached the gate, in order: the first one is the cause. Ctrl-C under ``./noxw``
#: reaches the gate as SIGINT, and nox sends SIGTERM when the gate has not ended soon after, which may
#: arrive while the gate is still stopping; the later exception then replaces the first.
_SIGNALS: list[str] = []
_WORDS = {"SIGINT": "SIGINT, Ctrl-C", "SIGTERM": "SIGTERM"}
#: Set once main() handles the interruption: a later signal is only recorded (the handling is short: kill, print).
_STOPPING: list[bool] = []
#: Set when the command's exit status is that of an interruption (not of a run complete before the signal came).
_INTERRUPTED: list[bool] = []


def _interrupt(signum: int, frame: FrameType | None) -> None:
    _SIGNALS.append(signal.Signals(signum).name)
    if not _STOPPING:  # stopping from now on: a second signal while this one unwinds is only recorded
        _STOPPING.append(True)
        _raise(Interrupted(signal.Signals(signum).name))


def _ctrl_c(signum: int, frame: FrameType | None) -> None:
    _SIGNALS.append("SIGINT")
    if not _STOPPING:
        _STOPPING.append(True)
        _raise(KeyboardInterrupt())


def _raise(exc: BaseException) -> None:
    """Raise the interruption now, or, while the run folder is being made complete and current
    (``evidence.COMMITTING``), once that is done (``evidence.DEFERRED``)."""
    if evidence.COMMITTING:
        evidence.DEFERRED.append(exc)
        return
    raise exc


def interruption(exc: BaseException) -> str:
    """Which signal interrupted the gate: the first that came (``SIGINT, Ctrl-C`` or ``SIGTERM``), and any later one."""
    first = _SIGNALS[0] if _SIGNALS else ("SIGTERM" if isinstance(exc, Interrupted) else "SIGINT")
    later = sorted({name for name in _SIGNALS[1:] if name != first})
    return _WORDS.get(first, first) + "".join(f"; then {name}" for name in later)


#: Where :func:`entry` writes the exit status once the command is over (set by the nox sessions).
EXIT_FILE = "OPTAX_GATE_EXIT_FILE"


def entry(argv: list[str] | None = None) -> None:
    """The process's entry point (``python -m optax_gate``, the ``optax-gate``
    script): :func:`main`, then exit with its status. A Ctrl-C or SIGTERM that
    comes once the command is over (its run complete, its report current) is
    only recorded: it had killed the process by the signal (exit -2, no
    word) in the moment between the command's end and the interpreter's."""
    status = main(argv, process=True)
    # ignored, not handled, from here: at the interpreter's end Python puts back the default action of a
    # signal that has a Python handler, and a Ctrl-C in the second of tear-down killed the gate (exit 130)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    said = os.environ.get(EXIT_FILE)
    if said:  # for the nox session, which a Ctrl-C reaching it after this point must not turn into "not verified"
        with contextlib.suppress(OSError):
            Path(said).write_text(f"{status}{' interrupted' if _INTERRUPTED else ''}\n")
    sys.exit(status)


def _completed_before(run: evidence.RunFolder, exc: BaseException) -> int:
    """A signal that came after ``run`` was complete and current: its own
    exit status (its report's verdict; 2 when that cannot be read), said
    with the signal, never "interrupted: not verified" beside a current
    report, and never "no report" for a run that is the latest."""
    import json

    from optax_gate.gate.judge import compare

    try:
        verdict = json.loads((run.path / "report.json").read_text(encoding="utf-8"))["verdict"]
        status = compare.EXIT_STATUS.get(verdict, 2)
    except (OSError, ValueError, KeyError, TypeError):
        verdict, status = "unreadable", 2
    shows = run.root / ("report.md" if evidence.is_judged(run.path) else "not-judged.md")
    print(
        f"optax-gate: {interruption(exc)} came after the run was complete: verdict {verdict}; {shows} shows "
        f"it (run folder {run.path})",
        file=sys.stderr,
    )
    return status


def main(argv: list[str] | None = None, process: bool = False) -> int:
    """Run one command; return its exit status (``gate``: 0 nothing broke, 1 something broke, 2 not verified,
    as ``cli_help.TEXT`` says for each command).
    ``process``: this is the whole process (:func:`entry`): the signal
    handlers stay, recording only, once the command is over; otherwise the
    caller's handlers are put back."""
    validate.CREATED.clear()
    args = cli_parser.parse(argv)
    given = options(args)
    started = Started()
    _SIGNALS.clear()
    _STOPPING.clear()
    evidence.COMMITTING.clear()
    evidence.DEFERRED.clear()
    previous = signal.signal(signal.SIGTERM, _interrupt)
    previous_int = signal.getsignal(signal.SIGINT)
    if previous_int is signal.default_int_handler:  # not when SIGINT is ignored (a background job)
        signal.signal(signal.SIGINT, _ctrl_c)
    try:
        status: int = args.func(given, started)
        return status
    except (KeyboardInterrupt, Interrupted) as exc:
        _STOPPING.append(True)
        pytest_process.stop_all()
        run = started.run
        if run is not None and evidence.is_complete(run.path):  # the signal came once the run was complete and current
            return _completed_before(run, exc)
        where = (
            (
                f"; its folder {run.path} is marked {evidence.MARKER}, with the evidence gathered so far (its "
                "report, if "
                "written, is not current; the next gate that completes removes it), and "
                f"{evidence.report_now(run.root)}"
            )
            if run
            else ""
        )
        if run is not None and (run.root / "not-judged.md").exists():  # an earlier run's file is named as such
            where += f" ({run.root / 'not-judged.md'} is an earlier run's, not this one's)"
        _INTERRUPTED.append(True)
        validate.remove_empty_created()  # an --out folder made for a run that wrote nothing
        return fail(f"interrupted ({interruption(exc)}): not verified{where}")
    except Exception as exc:  # fail closed: a crash of the gate is "not verified", with a report if one can be written
        traceback.print_exc()
        print(f"optax-gate: the gate itself failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return crash_report(
            f"gate error: {type(exc).__name__}: {exc}",
            started,
            None if args.command in ("gate", "rebaseline") else getattr(given, "out", Path("reports/gate")),
        )
    finally:
        if process:  # the command is over: a later signal is only recorded, the exit status stands
            _STOPPING.append(True)
        elif not _STOPPING:  # once stopping, a late SIGTERM (nox's, 0.3 s after Ctrl-C) is only recorded, never fatal:
            signal.signal(signal.SIGTERM, previous)  # the exit status stays 2, not 143
            if previous_int is signal.default_int_handler:
                signal.signal(signal.SIGINT, previous_int)
