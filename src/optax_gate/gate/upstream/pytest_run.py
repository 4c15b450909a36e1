"""One pytest run of the cross-run: its arguments, environment and time limit, and the failure that stops the
cross-run (``gate --upstream-tests``)."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from optax_gate.gate.base.plain_text import shorten

#: pytest's own plugins that would change the run (our plugin's entry point, the cache).
PYTEST_ARGS = [
    "-q",
    "-p",
    "no:cacheprovider",
    "-p",
    "no:optax_gate",
    "--import-mode=importlib",
    "-o",
    "addopts=",
    "-o",
    "junit_family=xunit1",
    "--continue-on-collection-errors",
]


class CrossRunFailure(Exception):
    """The cross-run could not run: a missing package folder, pytest that
    produced no report, an overlay that cannot be installed."""


def process_env(extra: dict[str, str]) -> dict[str, str]:
    """The variables of a process the cross-run starts in an environment: this process's, less its
    ``PYTHONPATH`` (the other environment's packages must not leak in), JAX on the CPU, then ``extra``."""
    return {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "JAX_PLATFORMS": "cpu", **extra}


def with_overlay(extra: dict[str, str], folder: Path | None) -> dict[str, str]:
    """``extra`` with the overlay ``folder`` first on its ``PYTHONPATH``."""
    paths = [p for p in (os.path.abspath(folder) if folder else "", extra.get("PYTHONPATH", "")) if p]
    return {**extra, **({"PYTHONPATH": os.pathsep.join(paths)} if paths else {})}


@dataclass(frozen=True)
class Pytest:
    """One pytest run of the cross-run: its environment variables, its
    pytest-xdist ``workers``, its ``timeout`` (seconds), whether it only collects."""

    env: dict[str, str]
    workers: int
    timeout: float
    collect_only: bool = False


def run_pytest(python: Path, root: Path, files: list[str], xml: Path, how: Pytest) -> None:
    """Run optax's shipped test ``files`` under ``root`` with ``python``, their JUnit results into ``xml``.

    Raises:
      CrossRunFailure: pytest timed out or ended otherwise than with its results."""
    cmd = [
        os.path.abspath(python),
        "-m",
        "pytest",
        *PYTEST_ARGS,
        "--rootdir",
        str(root),
        "-c",
        str(root / "pytest.ini"),
        "--junitxml",
        str(xml),
        *(["-n", str(how.workers)] if how.workers > 1 else []),
        *(["--collect-only"] if how.collect_only else []),
        *files,
    ]
    env = process_env(how.env)
    timeout, collect_only = how.timeout, how.collect_only
    try:
        proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise CrossRunFailure(f"pytest timed out after {timeout:.0f} s") from None
    if proc.returncode not in (
        (0, 1, 5) if collect_only else (0, 1)
    ):  # 2 interrupted, 3 internal error, 4 usage, 5 nothing collected
        tail = [line for line in (proc.stdout + proc.stderr).strip().splitlines() if line.strip()][-3:]
        raise CrossRunFailure(f"pytest exited {proc.returncode}: {shorten(' | '.join(tail), 300)}")
