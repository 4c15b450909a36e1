"""One pytest process of a contract run: started, watched for its progress and time limit, killed when the gate is
interrupted, and read back."""

from __future__ import annotations

import contextlib
import dataclasses
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from optax_gate.gate.base.run_record import Reach
from optax_gate.gate.run import outcomes, reach_record, warnings_diff
from optax_gate.kit.environment import reach_names as reach

#: Seconds between two looks at a running pytest (progress, time limit).
POLL_S = 2.0


def _count_progress(log: Path, collected: Path) -> tuple[int, int]:
    """(tests finished, tests collected) so far: finished from the report log
    being written, collected from the count the plugin writes to ``collected``
    (0 while collection is still going)."""
    try:
        total = int(collected.read_text(encoding="utf-8").strip() or 0)
        done = log.read_text(encoding="utf-8").count('"when": "teardown"')
    except (OSError, ValueError):
        return 0, 0
    return done, total


@dataclasses.dataclass(frozen=True)
class PytestCall:
    """One pytest process: ``python -m pytest FOLDER`` (or ``paths`` inside
    it) from ``project_root``, its files named ``name`` in ``out_dir``, with
    ``pytest_args`` and the environment variables ``env``."""

    python: Path
    name: str
    folder: str
    project_root: Path
    out_dir: Path
    pytest_args: tuple[str, ...] = ()
    env: dict[str, str] = dataclasses.field(default_factory=dict)
    paths: tuple[str, ...] | None = None


@dataclasses.dataclass
class Part:
    """One pytest process of a contract run: its folder, exit status, the
    tail of its output, its report log, its last (finished, collected) and the
    warnings its contracts raised (``optax_gate.gate.run.warnings_diff``)."""

    folder: str
    returncode: int
    output: str
    log: outcomes.ReportLog
    progress: tuple[int, int] = (0, 0)
    warnings: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    #: what its contract modules executed (``reach_record.read``); None: not recorded
    reach: Reach | None = dataclasses.field(default_factory=lambda: reach_record.join([]))


def run_pytest(
    call: PytestCall,
    timeout: float,
    on_progress: Callable[[int, int], None] | None,
    stop: threading.Event | None = None,
) -> Part | None:
    """Run ``call`` within ``timeout`` seconds; ``<name>.reportlog.jsonl``,
    ``<name>.junit.xml`` and ``<name>.pytest.txt`` go to its ``out_dir``. None when
    it timed out or ``stop`` was set (the process is killed)."""
    name, out_dir = call.name, call.out_dir
    if timeout <= 0:
        return None
    log = out_dir / f"{name}.reportlog.jsonl"
    log.unlink(missing_ok=True)
    output = out_dir / f"{name}.pytest.txt"
    collected = out_dir / f"{name}.collected"
    collected.unlink(missing_ok=True)
    cmd = [
        str(call.python),
        "-m",
        "pytest",
        *([call.folder] if call.paths is None else call.paths),
        "-q",
        "-p",
        "no:cacheprovider",
        f"--report-log={log}",
        f"--junitxml={out_dir / f'{name}.junit.xml'}",
        *call.pytest_args,
    ]
    start = time.monotonic()
    warnings_file = out_dir / f"{name}.warnings.json"
    warnings_file.unlink(missing_ok=True)
    reach_record.forget(out_dir, name)
    env = {
        **call.env,
        "OPTAX_GATE_PROGRESS": str(collected.absolute()),
        "OPTAX_GATE_WARNINGS": str(warnings_file.absolute()),
        reach.VARIABLE: str(reach_record.reach_file(out_dir, name).absolute()),
    }
    with open(output, "w", encoding="utf-8") as sink:
        with _LIVE_LOCK:  # checked and registered at once: stop_all() cannot fall between the two
            if _STOP.is_set():  # the gate is being interrupted: start nothing new
                return None
            proc = subprocess.Popen(
                cmd, cwd=call.project_root, stdout=sink, stderr=subprocess.STDOUT, text=True, env=env
            )
            _LIVE.add(proc)
        try:
            while True:
                try:
                    returncode = proc.wait(timeout=POLL_S)
                    break
                except subprocess.TimeoutExpired:
                    if on_progress:
                        on_progress(*_count_progress(log, collected))
                    if time.monotonic() - start > timeout or (stop is not None and stop.is_set()) or _STOP.is_set():
                        proc.kill()
                        proc.wait()
                        return None
        finally:
            _LIVE.discard(proc)
            if proc.poll() is None:  # interrupted: never leave pytest running behind the gate
                proc.kill()
                proc.wait()
    tail = "\n".join(output.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-3:])
    return Part(
        call.folder,
        returncode,
        tail,
        outcomes.parse(log) if log.exists() else outcomes.ReportLog(),
        _count_progress(log, collected),
        warnings_diff.read(warnings_file),
        reach_record.read(out_dir, name),
    )


#: pytest processes running now (contract runs may go on in worker threads).
_LIVE: set[subprocess.Popen[str]] = set()


_STOP = threading.Event()


_LIVE_LOCK = threading.Lock()


#: Seconds stop_all() waits for each killed pytest process to be gone.
KILL_WAIT_S = 10


def stop_all() -> None:
    """Kill every running pytest process and start no new one: called when the
    gate is interrupted, so no contract run outlives it (worker threads then
    see their process end and return not-verified records)."""
    with _LIVE_LOCK:
        _STOP.set()
        live = list(_LIVE)
    for proc in live:
        proc.kill()
    for proc in live:  # gone before the gate reports the interruption and exits, not only signalled
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=KILL_WAIT_S)


def merge_problems(parts: list[Part], selected: bool = False) -> str:
    """Why the pytest processes of one run do not verify it ("" when they do):
    an exit status other than 0 or 1 (5, nothing collected, is accepted only
    when ``selected``: the caller's ``-k``/paths may select nothing in one
    process), or collection errors, in any process."""
    for part in parts:
        if part.returncode not in (0, 1) and not (part.returncode == 5 and selected):
            tail = " | ".join(part.output.strip().splitlines()[-3:])
            return f"pytest ({part.folder}) ended with exit status {part.returncode}: {tail}"
        if part.log.collection_errors:
            return "collection errors: " + "; ".join(part.log.collection_errors)[:600]
    return ""


def stopping() -> bool:
    """Whether :func:`stop_all` was called: the gate is being interrupted, so nothing new starts."""
    return _STOP.is_set()
