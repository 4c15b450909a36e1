"""Probe an environment and run the contracts in it; record what happened.

A *run record* (a JSON-able dict) is the evidence the comparison works from:

``{"label", "requirements", "lock", "versions", "status": "ran" |
"not-verified", "reason", "exitstatus", "duration_s", "hypothesis_profile",
"contracts": {id: {"api", "guide", "kind", "outcome", "detail"}}}``

``status`` is ``ran`` only when the contracted packages import, pytest ends
normally (exit 0 or 1) within the time limit, nothing fails to collect and at
least one contract ran; every other case is ``not-verified`` with the reason.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from optax_gate.gate import outcomes

CONTRACTS_DIR = "tests/contracts"
#: Seconds between two looks at a running pytest (progress, time limit).
POLL_S = 2.0


def not_verified(label: str, reason: str, **extra: Any) -> dict[str, Any]:
    """A run record for an environment that could not be verified."""
    return {"label": label, "status": "not-verified", "reason": reason, "versions": {}, "contracts": {}, **extra}


def probe(python: Path, timeout: float = 300) -> tuple[dict[str, str], str | None]:
    """Versions of the environment and its import error (None when imports work)."""
    try:
        proc = subprocess.run([str(python), "-m", "optax_gate.kit.probe"], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {}, f"import check timed out after {timeout:.0f} s"
    try:
        data = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {}, f"import check crashed (exit {proc.returncode}): {' | '.join(tail)}"
    return data["versions"], data["import_error"]


def write_checkpoints(python: Path, directory: Path, project_root: Path, timeout: float = 600) -> str:
    """Have ``python``'s environment write the resume checkpoints
    (``optax_gate.kit.resume``) into a fresh ``directory``; "" on success, else the
    reason (the ``resume:*`` contracts then fail in every environment)."""
    import shutil

    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    try:
        proc = subprocess.run([str(python), "-m", "optax_gate.kit.resume", "write", str(directory)],
                              cwd=project_root, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"writing checkpoints timed out after {timeout:.0f} s"
    except OSError as exc:
        return f"writing checkpoints failed: {exc}"
    if proc.returncode != 0:
        return "writing checkpoints failed: " + " | ".join(proc.stderr.strip().splitlines()[-3:])
    return ""


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


def run(python: Path, label: str, project_root: Path, out_dir: Path, timeout: float,
        pytest_args: list[str] | None = None, checkpoints: Path | None = None,
        on_progress: Callable[[int, int], None] | None = None, **extra: Any) -> dict[str, Any]:
    """Probe ``python``'s environment, then run the contracts there.

    Args:
      python: the environment's interpreter.
      label: name of the environment in reports and file names.
      project_root: the project folder (pytest runs from there).
      out_dir: where ``<label>.reportlog.jsonl``, ``<label>.junit.xml`` and
        ``<label>.pytest.txt`` (pytest's output) go.
      timeout: seconds for the whole pytest run.
      pytest_args: extra pytest arguments (e.g. ``-k``).
      checkpoints: the baseline's resume checkpoints (``OPTAX_GATE_CHECKPOINTS``).
      on_progress: called with ``(finished, collected)`` tests every few
        seconds while pytest runs (from its report log).
      **extra: copied into the record (requirements, lock).

    Returns:
      the run record (see module docstring).
    """
    profile = os.environ.get("OPTAX_GATE_HYPOTHESIS_PROFILE", "ci")
    extra = {**extra, "hypothesis_profile": profile}
    versions, import_error = probe(python)
    if import_error:
        return not_verified(label, f"import failed: {import_error}", versions=versions, **extra)
    out_dir.mkdir(parents=True, exist_ok=True)
    log = out_dir / f"{label}.reportlog.jsonl"
    log.unlink(missing_ok=True)
    output = out_dir / f"{label}.pytest.txt"
    collected = out_dir / f"{label}.collected"
    collected.unlink(missing_ok=True)
    cmd = [str(python), "-m", "pytest", CONTRACTS_DIR, "-q", "-p", "no:cacheprovider",
           f"--report-log={log}", f"--junitxml={out_dir / f'{label}.junit.xml'}", *(pytest_args or [])]
    start = time.monotonic()
    env = {**os.environ, "OPTAX_GATE_PROGRESS": str(collected.absolute()),
           **({"OPTAX_GATE_CHECKPOINTS": str(checkpoints.absolute())} if checkpoints else {})}
    with open(output, "w", encoding="utf-8") as sink:
        proc = subprocess.Popen(cmd, cwd=project_root, stdout=sink, stderr=subprocess.STDOUT, text=True, env=env)
        try:
            while True:
                try:
                    returncode = proc.wait(timeout=POLL_S)
                    break
                except subprocess.TimeoutExpired:
                    if on_progress:
                        on_progress(*_count_progress(log, collected))
                    if time.monotonic() - start > timeout:
                        proc.kill()
                        proc.wait()
                        return not_verified(label, f"contracts timed out after {timeout:.0f} s", versions=versions, **extra)
        finally:
            if proc.poll() is None:  # interrupted: never leave pytest running behind the gate
                proc.kill()
                proc.wait()
    duration = round(time.monotonic() - start, 1)
    parsed = outcomes.parse(log) if log.exists() else outcomes.ReportLog()
    if on_progress:
        on_progress(len(parsed.contracts), len(parsed.contracts))
    record = {
        "label": label, "versions": versions, "status": "ran", "reason": "", "exitstatus": returncode,
        "duration_s": duration, **extra,
        "contracts": {cid: {k: v for k, v in dataclasses.asdict(c).items() if k != "id"} for cid, c in parsed.contracts.items()},
    }
    if returncode not in (0, 1):
        tail = " | ".join(output.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-3:])
        record.update(status="not-verified", reason=f"pytest ended with exit status {returncode}: {tail}")
    elif parsed.collection_errors:
        record.update(status="not-verified", reason="collection errors: " + "; ".join(parsed.collection_errors)[:600])
    elif not parsed.contracts:
        record.update(status="not-verified", reason="zero contracts ran")
    return record
