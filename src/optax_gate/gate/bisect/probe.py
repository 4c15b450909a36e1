"""One step of a bisection: a package built at one commit, put in front of
the candidate environment's copy, and some contracts run against it.

The environment itself is never changed: the commit's wheel is installed
without dependencies into a folder of its own (``uv pip install --no-deps
--target``, cached by commit SHA beside the wheels), and the contracts run in
the candidate's interpreter with ``PYTHONPATH`` naming that folder, so its
package shadows the installed one; requirements of that commit the
environment lacks go into a second folder (``missing_requirements``). Before the contracts run, an import check
proves the package really comes from that folder; a commit that cannot be
built, installed or imported is :class:`~optax_gate.gate.bisect.search.Unusable`.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from optax_gate.gate.bisect.search import Unusable
from optax_gate.gate.inputs.options import BisectOptions, EnvironmentOptions
from optax_gate.gate.install import missing_requirements, source_build
from optax_gate.gate.run import devices, outcomes, pytest_plugins, runner

#: Prints the imported package's file (no package name is imported by the gate itself).
_WHERE = "import importlib, sys; print(importlib.import_module(sys.argv[1]).__file__)"


class Prober:
    """``prober(sha, contract_ids) -> {contract id: outcome}`` for one package and environment.

    Args:
      package: the import name (``optax``, ``flax``).
      repo: the package's git directory.
      python: the candidate environment's interpreter.
      environment: ``project_root``, the folder the contracts run from (node ids are relative to it).
      options: ``cache``: wheels go to ``cache/wheels/<sha>`` (``source_build``),
        installs to ``cache/installs/<package>-<sha>``; ``timeout``: seconds
        for one build step, import check or pytest run.
      env: extra environment variables of the contract runs (checkpoints, compilation cache;
        ``$OPTAX_GATE_BASELINE_OPTAX``, the optax the gate's baseline ran, when the caller knows it: else
        ``runner.baseline_variables`` of ``environment.baseline_lock``). The contracts are judged against the
        gate's baseline, never against the commit under test.
      build: the wheel builder (``source_build.build_wheel``'s signature).
    """

    def __init__(
        self,
        package: str,
        repo: Path,
        python: Path,
        environment: EnvironmentOptions,
        options: BisectOptions,
        env: dict[str, str] | None = None,
        build: Callable[..., source_build.BuiltWheel] = source_build.build_wheel,
    ):
        self.package, self.repo, self.python = package, repo, Path(python)
        self.project_root, self.cache_dir, self.timeout = (
            Path(environment.project_root),
            Path(options.cache),
            options.timeout,
        )
        self.env, self.build = {**runner.baseline_variables(environment.baseline_lock), **dict(env or {})}, build
        #: commit SHA -> seconds spent building and installing it (0 when cached)
        self.built: dict[str, float] = {}
        self._paths: dict[str, list[Path]] = {}

    def install(self, sha: str) -> Path:
        """The folder holding the package built at ``sha`` (built and installed once).

        Raises:
          Unusable: it cannot be built or installed (the failing stage named).
        """
        target = self.cache_dir / "installs" / f"{self.package}-{sha}"
        if (target / ".complete").exists():
            self.built.setdefault(sha, 0.0)
            return target
        start = time.monotonic()
        try:
            wheel = self.build(self.repo, sha, self.cache_dir, self.timeout)
        except source_build.SourceBuildError as exc:
            raise Unusable(f"cannot be built: {exc}") from None
        try:
            missing_requirements.install_into(target, self.python, ["--no-deps", str(wheel.path)], self.timeout)
        except missing_requirements.DepsFailure as exc:
            raise Unusable(f"cannot be installed: {exc}") from None
        self.built[sha] = round(time.monotonic() - start, 1)
        return target

    def paths(self, sha: str) -> list[Path]:
        """The ``PYTHONPATH`` of ``sha``: its build, then the requirements it
        needs that the environment lacks (``missing_requirements``), once per commit.

        Raises:
          Unusable: it cannot be built or installed, or its missing requirements cannot.
        """
        if sha not in self._paths:
            target = self.install(sha)
            try:
                deps = missing_requirements.install_missing(self.python, target, self.cache_dir, self.timeout)
            except (missing_requirements.DepsFailure, subprocess.TimeoutExpired) as exc:
                raise Unusable(f"cannot be installed: {exc}") from None
            self._paths[sha] = [target, *([deps] if deps else [])]
        return self._paths[sha]

    def _env(self, paths: list[Path]) -> dict[str, str]:
        return {**os.environ, **pytest_plugins.ENV, **self.env, "PYTHONPATH": os.pathsep.join(str(p) for p in paths)}

    def check_import(self, paths: list[Path]) -> None:
        """Raises Unusable when the package does not import, or imports from elsewhere than its build (``paths[0]``)."""
        target = paths[0]
        try:
            proc = subprocess.run(
                [str(self.python), "-c", _WHERE, self.package],
                capture_output=True,
                text=True,
                timeout=self.timeout,
                env=self._env(paths),
                cwd=self.project_root,
            )
        except subprocess.TimeoutExpired:
            raise Unusable(f"cannot be imported: the import timed out after {self.timeout:.0f} s") from None
        if proc.returncode != 0:
            tail = [line for line in proc.stderr.strip().splitlines() if line.strip()][-1:] or [
                f"exit {proc.returncode}"
            ]
            raise Unusable(f"cannot be imported: {tail[0].strip()}")
        where = Path(proc.stdout.strip().splitlines()[-1]).resolve()
        if not where.is_relative_to(target.resolve()):
            raise Unusable(f"imports from {where}, not from the commit's build in {target}")

    def __call__(self, sha: str, contracts: list[str]) -> dict[str, str]:
        """The outcome of each of ``contracts`` (node ids) at commit ``sha``: its wheel imported, the single-device and
        multi-device contracts each run in their own pytest process."""
        paths = self.paths(sha)
        self.check_import(paths)
        multi = [c for c in contracts if devices.is_multidevice(c.split("::", 1)[0])]
        single = [c for c in contracts if c not in multi]
        found: dict[str, str] = {}
        for ids, multidevice in ((single, False), (multi, True)):
            if ids:
                found.update(self._pytest(paths, ids, multidevice))
        return found

    def _pytest(self, paths: list[Path], ids: list[str], multidevice: bool) -> dict[str, str]:
        with tempfile.TemporaryDirectory(prefix="optax-gate-bisect-") as tmp:
            log = Path(tmp) / "reportlog.jsonl"
            env = self._env(paths)
            cmd = [
                str(self.python),
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                *pytest_plugins.args(),
                f"--report-log={log}",
                *ids,
            ]
            try:
                proc = subprocess.run(
                    cmd,
                    capture_output=True,
                    text=True,
                    timeout=self.timeout,
                    env=devices.env(env) if multidevice else env,
                    cwd=self.project_root,
                )
            except subprocess.TimeoutExpired:
                raise Unusable(f"its contracts timed out after {self.timeout:.0f} s") from None
            parsed = outcomes.parse(log) if log.exists() else outcomes.ReportLog()
            if proc.returncode not in (0, 1) or parsed.collection_errors:
                tail = " | ".join((parsed.collection_errors or proc.stdout.strip().splitlines())[-3:])
                raise Unusable(f"its contracts could not run (pytest exit status {proc.returncode}): {tail[:400]}")
            return {cid: c.outcome for cid, c in parsed.contracts.items()}
