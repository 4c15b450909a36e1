"""One run of the team's command under the recorder: its environment, its process group stopped on a time-out or an
interruption, and its exit status and error line in words."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from optax_gate.gate.team_run import ensemble
from optax_gate.recorder import REPLAY_ENV, ROOT_ENV, TRACE_ENV

#: The recorder's start-up folder (its ``sitecustomize.py``), put first on ``PYTHONPATH``.
RECORDER_SITE = Path(__file__).resolve().parents[2] / "recorder" / "site"
#: Characters of the command's output kept in the report (its end).
TAIL_CHARS = 2000


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """What ``--run`` asks: the command, the team's folder, the time limit of
    one run (seconds); and the gate's own folders (its output, caches and
    environments: ``not_watched``), which the gate writes while the command
    runs: never looked at nor put back, should they lie in the team's folder."""

    command: str
    run_dir: Path
    timeout: float
    not_watched: tuple[Path, ...] = ()
    #: perturbed baseline runs that measure the run's own rounding noise (``ensemble``); 0: ``--exact``, the ULP budget
    #: alone
    members: int = ensemble.MEMBERS
    #: where the ensemble's runs are kept between gates (None: not kept)
    cache: Path | None = None
    #: a warning that appears or disappears at a call makes the run diverge (``--fail-on-new-deprecations``)
    warnings_differ: bool = False


def environment(python: Path, run_dir: Path, trace: Path) -> dict[str, str]:
    """The environment variables of one run of the team's command (see the module docstring)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")}
    bin_dir = Path(
        os.path.abspath(python)
    ).parent  # the gate's own paths are relative to the project; the command runs elsewhere
    env["PATH"] = os.pathsep.join([str(bin_dir), env.get("PATH", "")])
    env["VIRTUAL_ENV"] = str(bin_dir.parent)
    run_dir = Path(os.path.abspath(run_dir))
    paths = [str(RECORDER_SITE), str(run_dir)] + ([str(run_dir / "src")] if (run_dir / "src").is_dir() else [])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env[TRACE_ENV] = os.path.abspath(trace)
    env[ROOT_ENV] = str(run_dir)
    return env


def run_once(
    spec: RunSpec, python: Path, label: str, folder: Path, extra_env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Run the command once in ``python``'s environment; its trace goes to
    ``folder/team-run-<label>/``, its output to ``folder/team-run-<label>.log``.

    Returns:
      ``{"label", "exit" (None: could not start or timed out), "seconds",
      "timed_out", "error", "tail", "log", "trace"}``.
    """
    trace, log = folder / f"team-run-{label}", folder / f"team-run-{label}.log"
    shutil.rmtree(trace, ignore_errors=True)
    trace.mkdir(parents=True)
    start = time.monotonic()
    row: dict[str, Any] = {
        "label": label,
        "exit": None,
        "timed_out": False,
        "error": "",
        "log": log.name,
        "trace": trace.name,
    }
    try:
        with open(log, "wb") as out:
            env = environment(python, spec.run_dir, trace)
            if not label.endswith("-replay"):  # the equation replays cost a compilation per operation: only when read
                env[REPLAY_ENV] = "0"
            env.update(extra_env or {})
            # its own process group: on a timeout or an interruption the whole command is stopped (bash and the
            # team's Python under it) before the folder is put back, so nothing the command started writes into
            # the folder after it is put back (`python train.py && echo done` under Ctrl-C keeps the team's checkpoint)
            proc = subprocess.Popen(
                ["bash", "-c", spec.command],
                cwd=spec.run_dir,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            try:
                row["exit"] = proc.wait(timeout=spec.timeout)
            except BaseException:  # a timeout, Ctrl-C, the gate's own stop
                stop_group(proc)
                raise
    except subprocess.TimeoutExpired:
        row["timed_out"] = True
        row["error"] = f"timed out after {spec.timeout:.0f} s"
    except OSError as exc:
        row["error"] = f"could not start: {exc.strerror or exc}"
    row["seconds"] = round(time.monotonic() - start, 2)
    text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    row["tail"] = text[-TAIL_CHARS:]
    return row


#: Seconds the team's command has to end after SIGTERM before its process group is killed.
STOP_GRACE = 5.0


def stop_group(proc: subprocess.Popen[bytes]) -> None:
    """Stop the command's whole process group: SIGTERM, then SIGKILL after
    :data:`STOP_GRACE` seconds; wait for it."""
    for sig, grace in ((signal.SIGTERM, STOP_GRACE), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            break
        try:
            proc.wait(timeout=grace)
            if sig == signal.SIGTERM:
                os.killpg(proc.pid, signal.SIGKILL)  # what is left of the group (a child the shell did not wait for)
            break
        except subprocess.TimeoutExpired:
            continue
        except ProcessLookupError:
            break
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=30)


def raised_at(tail: str, run_dir: Path) -> str:
    """The last ``file:line`` of the team's files in a Python traceback of ``tail``, or ""."""
    root = str(Path(run_dir).resolve())
    found = ""
    for path, line in re.findall(r'File "([^"]+)", line (\d+)', tail):
        resolved = str(Path(path).resolve()) if os.path.isabs(path) else str((Path(run_dir) / path).resolve())
        if resolved.startswith(root + os.sep) and "site-packages" not in resolved:
            found = f"{os.path.relpath(resolved, root)}:{line}"
    return found


def run_failed(row: dict[str, Any]) -> bool:
    """Whether a run of the command (a row of :func:`run_once`) ended other than with exit status 0."""
    exit_status: int | None = row["exit"]
    return exit_status != 0


_ERROR_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)\b.*")


def exit_reason(row: dict[str, Any]) -> str:
    """The exit status and the error line of a run's output (the last line
    that names an exception, else the last line)."""
    error: str = row["error"]
    if error:
        return error
    lines = [
        re.sub(r"^E\s+", "", line.strip()) for line in row["tail"].strip().splitlines() if line.strip()
    ]  # pytest's "E   "
    errors = [line for line in lines if _ERROR_LINE.match(line)]
    last = (errors or lines)[-1:] or ["(no output)"]
    return f"exit {row['exit']}: {last[0][:300]}"
