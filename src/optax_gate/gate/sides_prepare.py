"""A side prepared for its run: its folders, its environment built or reused, its cached results looked up per
contract module, its imports checked, and (the baseline) the resume checkpoints every environment starts from."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple, Unpack

from optax_gate.gate.base.run_record import RecordFields, RunRecord
from optax_gate.gate.diffs import unseen
from optax_gate.gate.inputs.options import EnvironmentOptions
from optax_gate.gate.install import compilation_cache, environments
from optax_gate.gate.reuse import results_cache
from optax_gate.gate.reuse import same_code as same_code_
from optax_gate.gate.reuse import selection as selection_
from optax_gate.gate.run import runner
from optax_gate.gate.surface import public_api


def forget_previous_evidence(label: str, folder: Path) -> None:
    """Remove the files an earlier run of ``label`` left in ``folder`` (the
    matrix reuses ``runs/``), so a run that stops early never sits beside
    evidence that is not its own."""
    for old in folder.glob(f"{label}.*"):
        old.unlink()


class Folders(NamedTuple):
    """Where a side writes: ``evidence``, its run records and logs; ``checkpoints``, the resume checkpoints."""

    evidence: Path
    checkpoints: Path


def results_dir(env: EnvironmentOptions) -> Path:
    """``env.cache_dir``, the results cache of the sides: the commands that
    prepare sides (gate, matrix) always have one (``--cache-dir``, a default)."""
    if env.cache_dir is None:
        raise AssertionError("no --cache-dir: the gate and the matrix always have one")
    return env.cache_dir


def requirements_in(env: EnvironmentOptions) -> Path:
    """``env.requirements_in``, the baseline's direct requirements: the
    commands that resolve (gate, matrix) always have one (``--requirements-in``, a default)."""
    if env.requirements_in is None:
        raise AssertionError("no --requirements-in: the gate and the matrix always have one")
    return env.requirements_in


def built_python(python: Path | None) -> Path:
    """The interpreter of a side that runs (``Side.python``): None only when
    its environment could not be built, and then its record is final and it never runs."""
    if python is None:
        raise AssertionError("a side without an environment has its final record and never runs")
    return python


def configured_packages(project_root: Path) -> tuple[str, ...]:
    """The packages whose API surface is diffed (``[tool.optax-gate]`` of the project's pyproject.toml)."""
    return tuple(public_api.configured_packages(Path(project_root) / "pyproject.toml"))


@dataclasses.dataclass
class Side:
    """One side of a comparison, prepared: its environment built and its
    cached results looked up. ``record`` is already final when the side needs
    no contract run (every module taken from the cache, or not verified).
    ``units`` are the side's contract modules (``results_cache.Unit``),
    ``cached`` the results found for some of them (by unit name),
    ``cache_inputs`` the side's cache inputs (what its results are stored under)."""

    label: str
    folder: Path
    checkpoints: Path
    extra: RecordFields
    python: Path | None = None
    jax_env: dict[str, str] = dataclasses.field(default_factory=dict)
    record: RunRecord | None = None
    cache_inputs: dict[str, Any] | None = None
    probed: runner.Probe | None = None
    units: list[results_cache.Unit] = dataclasses.field(default_factory=list)
    cached: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    #: the resume checkpoints are in ``checkpoints`` (written or from the cache):
    #: only then are its results stored.
    checkpoints_ready: bool = False
    #: the candidate runs the baseline's code (``same_code.compare``): its record is derived from the baseline's.
    same_code: same_code_.SameCode | None = None
    #: the side's cached header (``results_cache.fetch_side``), when found
    header: dict[str, Any] | None = None
    #: the candidate's modules that executed no changed function (``selection.choose``): the baseline's results, by unit
    #: name
    taken: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    #: the candidate's modules that run only some APIs' contracts (``selection.choose``): the baseline's results of
    #: the other APIs, by unit name
    taken_apis: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    selection: selection_.Selection | None = None

    @property
    def pending(self) -> list[results_cache.Unit]:
        """The units whose results are neither cached nor taken from the baseline."""
        return [u for u in self.units if u.name not in self.cached and u.name not in self.taken]


def _cache_words(side: Side, inputs: dict[str, Any], why: list[str]) -> str:
    found, total = len(side.cached), len(side.units)
    discarded = [w for w in why if "discarded" in w]
    tail = (
        f"; {len(discarded)} doubtful entr{'y' if len(discarded) == 1 else 'ies'} discarded: {discarded[0]}"
        if discarded
        else ""
    )
    if found == total:
        return f"{side.label}: from cache {results_cache.key(inputs)}, all {total} contract modules"
    if not found:
        return f"{side.label}: not taken from the cache (no entry for its {total} contract modules{tail})"
    return (
        f"{side.label}: {found} of {total} contract modules from cache {results_cache.key(inputs)}; "
        f"running the other {total - found}: "
        + ", ".join(u.name for u in side.pending[:5])
        + (", ..." if total - found > 5 else "")
        + tail
    )


def look_up(side: Side, lock: Path, env: EnvironmentOptions, say: Callable[[str], None]) -> None:
    """Find the side's cached results per contract module; a side whose every
    module (and its header) is cached gets its final record."""
    side.units = results_cache.units(env.project_root, list(env.team_dirs) or None)
    side.cache_inputs = inputs = results_cache.side_inputs(lock, env.baseline_lock, env.project_root)
    if not env.use_cache:  # --no-cache: run everything, store the new results
        say(f"{side.label}: not taken from the cache (--no-cache)")
        return
    why: list[str] = []
    for unit in side.units:
        got, reason = results_cache.fetch_unit(results_dir(env), inputs, unit)
        if got is not None:
            side.cached[unit.name] = got
        else:
            why.append(reason)
    header, reason = results_cache.fetch_side(results_dir(env), inputs) if side.cached else (None, "")
    side.header = header
    if side.cached and not side.pending and header is None:  # a side's versions and plugins come only from a run of it
        say(
            f"{side.label}: {len(side.cached)} contract module(s) cached, but the side's own entry is not usable "
            f"({reason or 'missing'}): running all of its modules again"
        )
        side.cached.clear()
        why = []
    say(_cache_words(side, inputs, why))
    if side.units and not side.pending and header is not None:
        side.record = results_cache.assemble(side.label, header, side.cached, **side.extra).with_fields(
            from_cache=results_cache.origin(inputs, side.cached, len(side.units))
        )


def bound_compilation_cache(env: EnvironmentOptions, say: Callable[[str], None]) -> None:
    """Bound the shared compilation cache before any environment reads it (``compilation_cache.prune``)."""
    if compilation_cache.enabled(env.compilation_cache):
        gone, left = compilation_cache.prune(compilation_cache.shared(env.cache_dir, env.envs_dir))
        if gone:
            say(
                f"compilation cache: {gone} entries written longest ago deleted, {left / 2**20:.0f} MB left "
                f"(bound: ${compilation_cache.SIZE_SWITCH}, {compilation_cache.limit() // 2**20} MB)"
            )


def prepare(
    label: str,
    lock: Path,
    env: EnvironmentOptions,
    folders: Folders,
    say: Callable[[str], None],
    **extra: Unpack[RecordFields],
) -> Side:
    """Build (or reuse) the environment of ``lock``; take the results of its
    contract modules from the cache where a verified entry exists."""
    forget_previous_evidence(label, folders.evidence)
    say(f"{label}: building (or reusing) its environment")
    env_folder = environments.folder_for(env.envs_dir, lock)
    extra["lock_file"] = str(lock)  # for the dependency diff (optax_gate.gate.diffs.unseen)
    side = Side(label, folders.evidence, folders.checkpoints, extra)
    try:
        side.python = environments.ensure(env_folder, lock, env.python, env.project_root)
    except environments.EnvironmentFailure as exc:
        side.record = runner.not_verified(label, str(exc), **extra)
        return side
    side.jax_env = compilation_cache.environment(
        compilation_cache.shared(env.cache_dir, env.envs_dir), env.compilation_cache
    )
    extra["compilation_cache"] = bool(side.jax_env.get("JAX_COMPILATION_CACHE_DIR"))
    extra["site_packages"] = str(unseen.site_packages(side.python) or "")  # for the API surface diff
    look_up(side, lock, env, say)
    return side


def check_imports(sides: tuple[Side, ...], env: EnvironmentOptions, say: Callable[[str], None]) -> None:
    """The import check of each side that will run its contracts, the sides at
    the same time, before any contract runs; a side that fails it gets its
    final not-verified record."""
    todo = [side for side in sides if side.record is None]
    for side in todo:
        say(f"{side.label}: checking its imports")
    with ThreadPoolExecutor(max_workers=max(len(todo), 1)) as pool:
        probes = list(pool.map(lambda side: runner.probe(side.python), todo))
    for side, probed in zip(todo, probes, strict=False):
        side.probed = probed
        if probed[1]:
            side.record = runner.run(
                built_python(side.python), side.label, side.folder, env, probed=probed, **side.extra
            )


def write_checkpoints(side: Side, env: EnvironmentOptions, say: Callable[[str], None]) -> None:
    """The baseline provides the checkpoints every environment resumes from:
    taken from the cache when an entry for its inputs exists, else written in
    its environment (and stored)."""
    if side.cache_inputs is not None and env.use_cache:
        why = results_cache.fetch_checkpoints(results_dir(env), side.cache_inputs, side.checkpoints)
        if not why:
            say("baseline: resume checkpoints from the cache")
            side.extra["checkpoint_writer"] = "written"
            side.checkpoints_ready = True
            return
    say("baseline: writing the resume checkpoints")
    side.extra["checkpoint_writer"] = (
        runner.write_checkpoints(built_python(side.python), side.checkpoints, env.project_root, extra_env=side.jax_env)
        or "written"
    )
    side.checkpoints_ready = side.extra["checkpoint_writer"] == "written"
    if side.checkpoints_ready and side.cache_inputs is not None:
        results_cache.store_checkpoints(results_dir(env), side.cache_inputs, side.checkpoints)
