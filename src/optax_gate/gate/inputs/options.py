"""The command line's options, typed and frozen: parsed once by ``optax_gate.gate.cli``
(:func:`optax_gate.gate.cli.options`), then each stage receives the part it uses, never the whole
``argparse.Namespace``.

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Literal


@dataclasses.dataclass(frozen=True)
class EnvironmentOptions:
    """Building (or reusing) an environment and running its contracts.

    ``project_root``: the folder holding ``tests/contracts``;
    ``baseline_lock``: the baseline's hash-pinned lock; ``python``: the
    interpreter environments are built with; ``envs_dir``: where they are
    kept; ``compilation_cache``: JAX's persistent compilation cache on;
    ``requirements_in``: the baseline's direct requirements (None where the
    command resolves nothing); ``timeout``: seconds of one pytest run;
    ``cache_dir``: the results cache (None: none); ``use_cache``: take results
    from it (``--no-cache`` turns it off; new results are stored either way);
    ``select_modules``: a candidate runs only the contract modules that
    execute a function it changed (``gate.reuse.selection``; ``--all-modules``: every one);
    ``concurrent``: both sides' contracts at the same time; ``team_dirs``: the
    team's checked contract folders (``--contracts``)."""

    project_root: Path
    baseline_lock: Path
    python: str
    envs_dir: Path
    compilation_cache: bool = True
    requirements_in: Path | None = None
    timeout: float = 3600.0
    cache_dir: Path | None = None
    use_cache: bool = True
    select_modules: bool = True
    concurrent: bool = True
    team_dirs: tuple[Path, ...] = ()


@dataclasses.dataclass(frozen=True)
class SpeedOptions:
    """``enabled``: take the speed readings (``--no-speed``: not);
    ``rounds``: compile rounds (at least 2); ``budget``: the slowdown ratio
    beyond which a step is broken (None: never)."""

    enabled: bool
    rounds: int
    budget: float | None = None


@dataclasses.dataclass(frozen=True)
class ScopeOptions:
    """``usage``: the team's code (``--usage`` paths); ``fail_on``:
    ``broken`` (the team's broken findings fail the gate) or ``all``;
    ``fail_on_new_deprecations``: a new deprecation warning is broken;
    ``usage_scan``: the scan of ``usage`` once made (an
    ``optax_gate.gate.team_code.usage.Scan``; None before, or without
    ``--usage``)."""

    usage: tuple[Path, ...] = ()
    fail_on: str = "broken"
    fail_on_new_deprecations: bool = False
    usage_scan: Any = None


@dataclasses.dataclass(frozen=True)
class BisectOptions:
    """``enabled``: ``gate --bisect``; ``history``: the ``--history
    PACKAGE=PATH_OR_URL`` values; ``cache``: wheels and histories per commit;
    ``env``: ``candidate`` or ``baseline``, whose environment the commits go
    into; ``timeout``: seconds of one build, import check or contract run."""

    enabled: bool = False
    history: tuple[str, ...] = ()
    cache: Path = Path(".nox/gate-cache/bisect")
    env: Literal["candidate", "baseline"] = "candidate"
    timeout: float = 600.0


@dataclasses.dataclass(frozen=True)
class CandidateOptions:
    """``specs``: requirement SPECs (PEP 508); ``source``: the ``--source
    NAME=PATH_OR_URL[@REF]`` values; ``lock``: ``--candidate-lock`` (None:
    resolve the SPECs); ``allow_extra``: SPECs may add packages the baseline
    does not require."""

    specs: tuple[str, ...] = ()
    source: tuple[str, ...] = ()
    lock: Path | None = None
    allow_extra: bool = False


@dataclasses.dataclass(frozen=True)
class TeamRunOptions:
    """``command``: ``--run`` (None: no run); ``folder``: ``--run-dir``
    (None: the current folder); ``timeout``: seconds of one run; ``exact``:
    ``--exact``, the ULP budget alone (no ensemble of perturbed baseline runs)."""

    command: str | None = None
    folder: Path | None = None
    timeout: float = 1800.0
    exact: bool = False


@dataclasses.dataclass(frozen=True)
class GateOptions:
    """``python -m optax_gate gate``: ``out``: the output folder; ``keep``:
    runs that judged both sides kept; ``contracts``: the team's contract
    folders as given; ``upstream_tests``: cross-run optax's own tests."""

    environment: EnvironmentOptions
    candidate: CandidateOptions
    speed: SpeedOptions
    scope: ScopeOptions
    bisect: BisectOptions
    team_run: TeamRunOptions
    out: Path = Path("reports/gate")
    keep: int = 10
    contracts: tuple[Path, ...] = ()
    upstream_tests: bool = False


@dataclasses.dataclass(frozen=True)
class MatrixOptions:
    """``python -m optax_gate matrix``: ``plan_only`` (``--plan``), ``only``
    (environments to run), ``merge``, ``include_older``, ``upstream``
    (optax-main, flax-main), ``fail_on`` (None, ``broken`` or ``changed``),
    ``upstream_tests``, ``heartbeat`` (longest silence, seconds)."""

    environment: EnvironmentOptions
    speed: SpeedOptions
    out: Path = Path("reports/matrix")
    plan_only: bool = False
    only: tuple[str, ...] = ()
    merge: bool = False
    include_older: bool = False
    upstream: bool = False
    fail_on: str | None = None
    upstream_tests: bool = False
    heartbeat: float = 25.0


@dataclasses.dataclass(frozen=True)
class CompareOptions:
    """``python -m optax_gate compare``: the two run records (JSON), the output
    folder, and ``team_run``: a gate's ``report.json`` (or run folder) whose
    recorded ``--run`` is re-used (None: none)."""

    baseline_run: Path
    candidate_run: Path
    scope: ScopeOptions
    out: Path = Path("reports/gate")
    team_run: Path | None = None


@dataclasses.dataclass(frozen=True)
class BisectCommandOptions:
    """``python -m optax_gate bisect``: ``report``: a gate output folder or run folder."""

    report: Path
    environment: EnvironmentOptions
    bisect: BisectOptions


@dataclasses.dataclass(frozen=True)
class RebaselineOptions:
    """``python -m optax_gate rebaseline``: ``lock``: the other baseline's
    hash-pinned lock; ``move``: make it the pinned baseline (lock and
    snapshots) too; ``out``: where the run's evidence and ``summary.md`` go."""

    environment: EnvironmentOptions
    lock: Path
    move: bool
    out: Path
