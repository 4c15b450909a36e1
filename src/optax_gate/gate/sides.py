"""The sides of a comparison run (the baseline, a candidate, a matrix environment): each side's contracts
run or its result taken from the cache, its run record written, and the diffs beyond the contracts. Shared by
the flows; a side is prepared in ``sides_prepare``, the candidate's code against the baseline's is ``sides_code``,
the speed readings ``sides_speed``."""

from __future__ import annotations

import dataclasses
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Unpack

from optax_gate.gate import assemble
from optax_gate.gate.base import atomic, model
from optax_gate.gate.base.progress import Progress
from optax_gate.gate.base.run_record import NotARunRecord, RecordFields, RunRecord
from optax_gate.gate.diffs import unseen
from optax_gate.gate.inputs.options import EnvironmentOptions, ScopeOptions
from optax_gate.gate.reuse import results_cache
from optax_gate.gate.reuse import same_code as same_code_
from optax_gate.gate.run import runner
from optax_gate.gate.sides_prepare import (
    Folders,
    Side,
    built_python,
    check_imports,
    configured_packages,
    prepare,
    results_dir,
    write_checkpoints,
)
from optax_gate.gate.surface import public_api
from optax_gate.kit.environment import reach_names


def save_run(record: RunRecord, folder: Path) -> None:
    """Write a side's run record as ``folder/<label>.json``, atomically."""
    atomic.write_text(folder / f"{record.label}.json", json.dumps(record.to_json(), indent=2, sort_keys=True) + "\n")


#: pytest-xdist processes of a contract run that has the machine to itself
#: (one side at a time): one per physical core (``runner.xdist_args``: two on
#: the 2-core machine, as before; more on a bigger one). Two sides at once
#: run one process each.
ALONE_WORKERS = "auto"


def contracts(
    side: Side, env: EnvironmentOptions, progress: Progress | None, workers: int | str = ALONE_WORKERS
) -> RunRecord:
    """Run the contract modules of a prepared side that the cache lacks
    (unless its record is final), join the cached ones, and store what ran
    when the run is verified and its resume checkpoints were there."""
    if side.record is not None:
        return side.record
    say = progress or (lambda message: None)
    pending = side.pending
    if side.taken and not pending:
        return _taken_record(side)
    partial = bool(side.cached) or bool(side.taken) or bool(side.taken_apis)
    if side.taken:
        say(
            f"{side.label}: running the contracts of {len(pending)} module(s); "
            f"{len(side.taken)} take the baseline's outcomes"
            + (f", {len(side.cached)} come from the cache" if side.cached else "")
        )
    else:
        say(f"{side.label}: running the contracts" + (f" of {len(pending)} module(s) not cached" if partial else ""))
    team = [u for u in pending if u.team]
    targets = (
        tuple(tuple(u.target for u in pending if not u.team and u.part == i) for i in range(len(runner.PARTS)))
        if partial
        else None
    )
    deselect: tuple[str, ...] = ()
    if (
        side.taken
    ):  # every module collected, as in a full run (the side's collect-time warnings are its own), the others deselected
        running = {u.name for u in pending}
        deselect = tuple(
            word for u in side.units if not u.team and u.name not in running for word in ("--deselect", u.target)
        )
        targets = tuple(
            (folder,) if any(not u.team and u.part == i for u in pending) else ()
            for i, (_, folder, _) in enumerate(runner.PARTS)
        )
    team_dirs = tuple(d for d in env.team_dirs if any(u.target == str(d) for u in team))
    extra_env = dict(side.jax_env)
    if side.label == "baseline":  # what each API executes: only a baseline's record selects (gate.reuse.selection)
        extra_env[reach_names.PER_API_VARIABLE] = "1"
    if side.taken_apis and side.selection is not None:  # in a module run in part, only the selected APIs' contracts
        extra_env[reach_names.SELECT_VARIABLE] = str(_write_apis(side.folder, side.label, side.selection.apis))
    how = runner.ContractRunOptions(
        pytest_args=deselect,
        checkpoints=side.checkpoints,
        extra_env=extra_env,
        workers=workers,
        team_dirs=team_dirs,
        targets=targets,
    )
    record = runner.run(
        built_python(side.python),
        side.label,
        side.folder,
        env,
        how,
        on_progress=progress.contracts(side.label) if progress else None,
        probed=side.probed,
        **side.extra,
    )
    if side.cached and not side.taken and side.header is not None and record.ran:
        # a run of the modules not cached collected only those: its collect-time warnings are also the cached header's
        # (the same side, the same inputs), so they stay, and stay stored
        loose = [w for w in side.header.get("warnings") or [] if not w.get("contracts")]
        record = record.with_fields(warnings=results_cache.merge_warnings(record.fields.get("warnings") or [], loose))
    if side.cache_inputs is not None and side.checkpoints_ready:
        # a module run in part holds only its selected APIs' results: it is not stored
        stored = results_cache.store(results_dir(env), side.cache_inputs, record, pending, side.taken_apis)
        if stored:
            say(f"{side.label}: {stored} contract module(s) stored in the cache {results_cache.key(side.cache_inputs)}")
    if partial:
        # (a module run in part is pending: neither cached nor taken, so its name keys its other APIs' outcomes)
        record = results_cache.join(record, {**side.cached, **side.taken, **side.taken_apis})
        if record.ran and side.cache_inputs is not None and side.cached:  # partial only with cache inputs (look_up)
            record = record.with_fields(
                from_cache=results_cache.origin(side.cache_inputs, side.cached, len(side.units))
            )
    if side.selection is not None and record.ran:
        record = record.with_fields(selection=side.selection.record())
    return record


def _write_apis(folder: Path, label: str, apis: dict[str, list[str]]) -> Path:
    """The file of the APIs that run per module run in part (``kit.environment.select_apis``), written atomically."""
    path = Path(folder) / f"{label}.selected-apis.json"
    atomic.write_text(path, json.dumps(apis, indent=1, sort_keys=True))
    return path


def _taken_record(side: Side) -> RunRecord:
    """The record of a candidate none of whose modules runs: each module's
    results are its own cached ones or the baseline's (it executed no changed
    function); what the side's run says beyond its modules is the baseline's
    (the candidate's top level is the baseline's: ``function_diff``), with its own versions."""
    assert side.selection is not None and side.header is not None
    record = results_cache.assemble(side.label, side.header, {**side.cached, **side.taken}, **side.extra)
    if side.probed:
        record = dataclasses.replace(record, versions=dict(side.probed[0]))
    return record.with_fields(selection=side.selection.record())


def run_lock(
    label: str,
    lock: Path,
    env: EnvironmentOptions,
    folders: Folders,
    progress: Progress | None = None,
    **extra: Unpack[RecordFields],
) -> RunRecord:
    """Build (or reuse) the environment of ``lock`` and run the contracts there
    (one side at a time: the matrix); evidence goes to ``folders.evidence``; the
    baseline writes the resume ``folders.checkpoints``."""
    say = progress or (lambda message: None)
    side = prepare(label, lock, env, folders, say, **extra)
    check_imports((side,), env, say)
    if label == "baseline" and side.python is not None and (side.record is None or side.record.ran):
        write_checkpoints(side, env, say)  # the other environments resume from them, even when this one is cached
    else:
        side.checkpoints_ready = folders.checkpoints.is_dir() and any(folders.checkpoints.iterdir())
    return contracts(side, env, progress)


def read_surfaces(sides: tuple[Side, ...], env: EnvironmentOptions) -> threading.Thread | None:
    """Start reading the environments' API surfaces (``surface.cached_surface``, a
    cached reader: the late phase's diff then finds them read) in a thread of
    this process while the contracts run in others: about 3 s of CPU per
    environment, taken off the gate's serial tail. An error here is ignored:
    the late phase reads again and records it. None when there is nothing to read."""
    sites = [Path(side.extra["site_packages"]) for side in sides if side.extra.get("site_packages")]
    if len(sites) != 2 or not all(site.is_dir() for site in sites) or (all(side.record is not None for side in sides)):
        return None
    packages = configured_packages(env.project_root)

    def read() -> None:
        for site in sites:
            try:
                public_api.cached_surface(site, tuple(packages))
            except Exception:  # recorded by the late phase, which reads again
                return

    thread = threading.Thread(target=read, name="read-surfaces", daemon=True)
    thread.start()
    return thread


#: Seconds the gate waits, after the contracts, for the surfaces read beside them.
SURFACE_WAIT_S = 120


def run_both(baseline: Side, candidate: Side, env: EnvironmentOptions, say: Progress) -> tuple[RunRecord, RunRecord]:
    """Run the contracts of both sides, the API surfaces read beside them
    (:func:`read_surfaces`). The checkpoints come first (the candidate
    resumes from them); then, when both sides need a run, the two pytest
    processes run at the same time unless ``--sequential``. A candidate that
    runs the baseline's code (:func:`compare_code`) does not run: its record
    is the baseline's outcomes (``same_code.record``).

    The reader starts once the checkpoints are in place, not before: its
    thread holds the interpreter lock for seconds at a time, and a copy of many
    small files in the main thread waits for it at every file (the baseline's
    175 checkpoint files, a 0.02 s copy alone, took about 6 s beside it)."""
    same = candidate.same_code is not None and candidate.record is None
    if baseline.record is None or (candidate.record is None and not same):
        write_checkpoints(baseline, env, say)
        candidate.checkpoints_ready = baseline.checkpoints_ready
    reading = read_surfaces((baseline, candidate), env)
    # an interruption does not wait for the (daemon) reader
    records = _same_code(baseline, candidate, env, say) if same else _run_both(baseline, candidate, env, say)
    if reading is not None:
        reading.join(SURFACE_WAIT_S)
    return records


def _same_code(baseline: Side, candidate: Side, env: EnvironmentOptions, say: Progress) -> tuple[RunRecord, RunRecord]:
    """The baseline run (or taken from the cache) alone; the candidate's record derived from it."""
    assert candidate.same_code is not None
    base_record = contracts(baseline, env, say)
    versions = candidate.probed[0] if candidate.probed else None
    return base_record, same_code_.record(
        base_record, candidate.label, candidate.same_code, versions, **candidate.extra
    )


def _run_both(baseline: Side, candidate: Side, env: EnvironmentOptions, say: Progress) -> tuple[RunRecord, RunRecord]:
    if baseline.record is None and candidate.record is None and env.concurrent:
        say("running both sides at the same time (--sequential to run one after the other)")
        pool = ThreadPoolExecutor(max_workers=2)
        try:
            futures = [pool.submit(contracts, side, env, say, 0) for side in (baseline, candidate)]
            return futures[0].result(), futures[1].result()
        finally:  # on an interruption, do not wait here: main() stops the pytest processes
            pool.shutdown(wait=False, cancel_futures=True)
    return contracts(baseline, env, say), contracts(candidate, env, say)


def beyond_contracts(
    report: model.Report,
    baseline: RunRecord,
    candidate: RunRecord,
    scope: ScopeOptions,
    packages: tuple[str, ...],
    usage: bool = True,
) -> model.Report:
    """``report`` with what the contracts cannot see (``unseen.beyond``, put in by ``assemble.with_beyond``)
    with the ``scope`` options, the API surface of ``packages`` (:func:`configured_packages`);
    ``usage=False`` leaves ``--usage`` out (a refused run judged nothing of the team's code). ``report`` is not
    changed."""
    given = scope if usage else dataclasses.replace(scope, usage=(), usage_scan=None)
    return assemble.with_beyond(report, unseen.beyond(report, baseline, candidate, given, packages))


def load(path: Path) -> RunRecord:
    """A run record read back from ``path``.

    Raises:
      OSError: the file cannot be read.
      NotARunRecord: it is JSON, but not a run record (``RunRecord.is_json``).
      ValueError: it is not JSON (nor UTF-8).
    """
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not RunRecord.is_json(data):
        raise NotARunRecord("not a JSON object with label, status and contracts")
    return RunRecord.from_json(data)
