"""Probe an environment and run the contracts in it; what happened is its run record (``base.run_record``)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Unpack, cast

from optax_gate.gate.base.run_record import ContractResult, Kind, Outcome, RecordFields, RunRecord
from optax_gate.gate.inputs import team_contracts
from optax_gate.gate.inputs.options import EnvironmentOptions
from optax_gate.gate.install import compilation_cache
from optax_gate.gate.run import devices, outcomes, pytest_plugins, pytest_process, reach_record, warnings_diff
from optax_gate.kit import moved_behaviour

CONTRACTS_DIR = "tests/contracts"


def not_verified(
    label: str, reason: str, versions: dict[str, str] | None = None, **extra: Unpack[RecordFields]
) -> RunRecord:
    """A run record for an environment that could not be verified (``versions``: those its import check read)."""
    return RunRecord(label, "not-verified", reason, versions=versions or {}, fields=extra)


Probe = tuple[dict[str, str], "str | None", list[dict[str, Any]], dict[str, list[str]]]


_WHEEL_VERSION = re.compile(r"^optax\s*@\s*\S*/optax-([^-/]+)-[^/]*\.whl\b", re.MULTILINE)


def baseline_optax(lock: Path) -> str:
    """The optax version ``lock`` pins ("" when none, or unreadable): its
    ``optax==V`` line, or the version in the file name of the wheel it names
    (a baseline built from source). Passed to both sides' contract runs as
    ``$OPTAX_GATE_BASELINE_OPTAX`` (``optax_gate.kit.moved_behaviour``)."""
    try:
        text = lock.read_text(encoding="utf-8")
    except OSError:
        return ""
    pinned = re.search(r"^optax\s*==\s*([^\s;\\]+)", text, re.MULTILINE)
    wheel = _WHEEL_VERSION.search(text)
    return pinned.group(1) if pinned else wheel.group(1) if wheel else ""


def baseline_variables(lock: Path | None, version: str = "") -> dict[str, str]:
    """The environment variables every pytest process of the contracts gets
    from the gate's baseline: ``{$OPTAX_GATE_BASELINE_OPTAX: V}``, ``V`` the
    given ``version`` (the optax the baseline ran), else :func:`baseline_optax` of
    ``lock``; ``{}`` when neither names one (the installed optax then counts).
    Every runner of contracts takes them from here, whatever it runs (a side,
    a matrix cell, a bisection's commit): the ledger of moved behaviour
    (``optax_gate.kit.moved_behaviour``) is judged against the gate's baseline,
    never against the optax under test."""
    version = version or (baseline_optax(Path(lock)) if lock is not None else "")
    return {moved_behaviour.BASELINE_ENV: version} if version else {}


def probe(python: Path, timeout: float = 300) -> Probe:
    """Versions of the environment, its import error (None when imports work),
    the warnings raised while importing and its installed pytest plugins
    (``{distribution: [module, ...]}``)."""
    try:
        proc = subprocess.run(
            [str(python), "-m", "optax_gate.kit.environment.probe"], capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return {}, f"import check timed out after {timeout:.0f} s", [], {}
    except OSError as exc:
        return {}, f"import check could not start {python}: {exc.strerror or exc}", [], {}
    try:
        data = json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        return {}, f"import check crashed (exit {proc.returncode}): {' | '.join(tail)}", [], {}
    return data["versions"], data["import_error"], data.get("import_warnings", []), data.get("pytest_plugins", {})


def write_checkpoints(
    python: Path, directory: Path, project_root: Path, timeout: float = 600, extra_env: dict[str, str] | None = None
) -> str:
    """Have ``python``'s environment write the resume checkpoints
    (``optax_gate.kit.training.resume``) into a fresh ``directory``; "" on success, else the
    reason (the ``resume:*`` contracts then fail in every environment)."""
    import shutil

    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    try:
        proc = subprocess.run(
            [str(python), "-m", "optax_gate.kit.training.resume", "write", str(directory)],
            cwd=project_root,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, **(extra_env or {})},
        )
    except subprocess.TimeoutExpired:
        return f"writing checkpoints timed out after {timeout:.0f} s"
    except OSError as exc:
        return f"writing checkpoints failed: {exc}"
    if proc.returncode != 0:
        return "writing checkpoints failed: " + " | ".join(proc.stderr.strip().splitlines()[-3:])
    return ""


@dataclasses.dataclass(frozen=True)
class ContractRunOptions:
    """What one contract run runs, beyond the environment's options.

    ``pytest_args``: extra pytest arguments (e.g. ``-k``); ``checkpoints``:
    the baseline's resume checkpoints (``OPTAX_GATE_CHECKPOINTS``);
    ``extra_env``: environment variables for pytest (e.g. the compilation
    cache); ``workers``: split the single-device contracts over this many
    pytest-xdist processes, when the environment has pytest-xdist (0: one
    process; ``"auto"``: pytest-xdist's count for the machine, at most
    :data:`MAX_WORKERS`); ``team_dirs``: the team's contract folders (``gate
    --contracts``), run in the single-device process; ``targets``: per pytest
    process of :data:`PARTS`, the contract modules to run (paths relative to
    the project root) instead of its whole folder; a process with no module
    and no team folder is not started. None: every module (the results cache
    asks for the modules it lacks)."""

    pytest_args: tuple[str, ...] = ()
    checkpoints: Path | None = None
    extra_env: dict[str, str] = dataclasses.field(default_factory=dict)
    workers: int | str = 0
    team_dirs: tuple[Path, ...] = ()
    targets: tuple[tuple[str, ...], ...] | None = None


def run(
    python: Path,
    label: str,
    out_dir: Path,
    env: EnvironmentOptions,
    how: ContractRunOptions = ContractRunOptions(),
    on_progress: Callable[[int, int], None] | None = None,
    probed: Probe | None = None,
    **extra: Unpack[RecordFields],
) -> RunRecord:
    """Probe ``python``'s environment (unless ``probed``), then run the contracts there.

    Args:
      python: the environment's interpreter.
      label: name of the environment in reports and file names.
      out_dir: where ``<label>.reportlog.jsonl``, ``<label>.junit.xml`` and
        ``<label>.pytest.txt`` (pytest's output) go, and the same
        ``<label>.multidevice.*`` files of the multi-device process (``PARTS``).
      env: ``project_root`` (pytest runs from there) and ``timeout`` (seconds
        for the whole pytest run).
      how: what to run (:class:`ContractRunOptions`).
      on_progress: called with ``(finished, collected)`` tests every few
        seconds while pytest runs (from the report logs), summed over the
        pytest processes and only once each has collected: the total does
        not change during the run.
      probed: the result of :func:`probe` when the caller already checked the
        imports (the gate does, before either side runs: one side that cannot
        import stops the gate before the other starts its contracts).
      **extra: copied into the record (requirements, lock).

    Returns:
      the run record.
    """
    versions, import_error, import_warnings, plugins = probed or probe(python)
    fields: RecordFields = {
        **extra,
        "hypothesis_profile": os.environ.get("OPTAX_GATE_HYPOTHESIS_PROFILE", "ci"),
        # Only the declared pytest plugins load, on both sides (optax_gate.gate.run.pytest_plugins).
        "pytest_plugins": {"loaded": pytest_plugins.modules(plugins), "left_out": pytest_plugins.left_out(plugins)},
        "warnings": warnings_diff.fold(import_warnings, []),
    }
    if import_error:
        return not_verified(label, f"import failed: {import_error}", versions=versions, **fields)
    out_dir.mkdir(parents=True, exist_ok=True)
    variables = {
        **os.environ,
        **pytest_plugins.ENV,
        **how.extra_env,
        **({"OPTAX_GATE_CHECKPOINTS": str(how.checkpoints.absolute())} if how.checkpoints else {}),
    }
    variables.update(baseline_variables(env.baseline_lock))  # both sides judged against what the baseline does
    start = time.monotonic()
    call = pytest_process.PytestCall(
        python,
        label,
        CONTRACTS_DIR,
        env.project_root,
        out_dir,
        (*pytest_plugins.args(plugins), *reach_record.PLUGIN_ARGS, *how.pytest_args),
        variables,
    )
    ran = run_parts(call, start + env.timeout, how, versions, on_progress)
    late = next((i for i, part in enumerate(ran) if part is None), None)
    if late is not None:
        return not_verified(
            label, f"contracts timed out after {env.timeout:.0f} s ({PARTS[late][1]})", versions=versions, **fields
        )
    parts = [part for part in ran if part is not None]  # all of them: none is late
    duration = round(time.monotonic() - start, 1)
    fields["warnings"] = warnings_diff.fold(import_warnings, [w for p in parts for w in p.warnings])
    if any(compilation_cache.is_own_warning(w) for p in parts for w in p.warnings):  # JAX could not read its cache
        fields["compilation_cache_discarded"] = compilation_cache.discard_corrupt(
            variables.get("JAX_COMPILATION_CACHE_DIR")
        )
    contracts = team_contracts.rename(
        {cid: _result(c) for p in parts for cid, c in p.log.contracts.items()}, list(how.team_dirs), CONTRACTS_DIR
    )
    exitstatus = max((p.returncode for p in parts if p.returncode in (0, 1)), default=None)
    fields["exitstatus"], fields["duration_s"] = exitstatus, duration
    if all(
        p.reach is not None for p in parts
    ):  # what each module executed: the candidates' selection (gate.reuse.selection)
        fields["reach"] = reach_record.join([p.reach for p in parts if p.reach is not None])
    problem = pytest_process.merge_problems(parts, selected=bool(how.pytest_args) or how.targets is not None)
    if problem:
        fields["exitstatus"] = next((p.returncode for p in parts if p.returncode not in (0, 1, 5)), exitstatus)
        return RunRecord(label, "not-verified", problem, contracts, versions, fields)
    if not contracts:
        return RunRecord(label, "not-verified", "zero contracts ran", contracts, versions, fields)
    return RunRecord(label, "ran", "", contracts, versions, fields)


def _result(outcome: outcomes.ContractOutcome) -> ContractResult:
    """A contract's outcome as its record holds it: every field but its id."""
    return {
        "api": outcome.api,
        "guide": outcome.guide,
        "kind": cast(Kind, outcome.kind),  # the plugin refuses a contract without one of these markers
        "outcome": cast(Outcome, outcome.outcome),  # outcomes.parse gives only these
        "detail": outcome.detail,
        "defect": outcome.defect,
        "configuration": outcome.configuration,
    }


def run_parts(
    call: pytest_process.PytestCall,
    deadline: float,
    how: ContractRunOptions,
    versions: dict[str, str],
    on_progress: Callable[[int, int], None] | None,
) -> list[pytest_process.Part | None]:
    """Run the pytest processes of :data:`PARTS` (``call`` names the run:
    its label, project, output folder, arguments and variables) one after the
    other, each after the previous one ends; the later ones start at once,
    collect, write their count and wait for their go file
    (``$OPTAX_GATE_GO``), so that ``on_progress`` gets one total, all
    processes' counts summed, from its first call on. A part that times out
    (None) stops the ones after it. The team's contract folders
    (``how.team_dirs``) go to the single-device process; ``how.targets`` (per
    process, the modules to run instead of its folder): a process left with
    nothing to run is not started (an empty part)."""
    team_args = team_contracts.pytest_args(list(how.team_dirs), call.project_root)
    stop = threading.Event()
    counts = [[0, 0, False] for _ in PARTS]  # finished, collected, collected count final
    lock = threading.Lock()

    def report(i: int, done: int, total: int, final: bool = False) -> None:
        with lock:
            counts[i] = [done, max(total, counts[i][1]) if not final else total, final or counts[i][2] or total > 0]
            if (
                on_progress and all(c[2] for c in counts) and not pytest_process.stopping()
            ):  # no count after "interrupted"
                on_progress(sum(c[0] for c in counts), sum(c[1] for c in counts))

    def launch(i: int) -> pytest_process.Part | None:
        suffix, folder, multi = PARTS[i]
        paths = None if how.targets is None else tuple(how.targets[i])
        if paths is not None and not paths and (multi or not team_args):
            report(i, 0, 0, final=True)
            return pytest_process.Part(folder, 0, "", outcomes.ReportLog())
        split = (
            how.workers not in (0, 1) and not multi and versions.get("pytest-xdist", "not installed") != "not installed"
        )
        args = (*call.pytest_args, *(xdist_args(how.workers) if split else []), *([] if multi else team_args or []))
        part_env = devices.env(call.env) if multi else call.env
        if i:
            part_env = {**part_env, "OPTAX_GATE_GO": str(go[i].absolute())}
        part = pytest_process.run_pytest(
            dataclasses.replace(
                call, name=f"{call.name}{suffix}", folder=folder, pytest_args=args, env=part_env, paths=paths
            ),
            deadline - time.monotonic(),
            lambda d, t: report(i, d, t),
            stop,
        )
        if part is not None:
            report(i, *part.progress, final=True)
        return part

    go = [call.out_dir / f"{call.name}{suffix}.go" for suffix, _, _ in PARTS]
    for path in go:
        path.unlink(missing_ok=True)
    with ThreadPoolExecutor(max_workers=max(len(PARTS) - 1, 1)) as pool:
        later = [pool.submit(launch, i) for i in range(1, len(PARTS))]
        try:
            parts = [launch(0)]
            for i, future in enumerate(later, 1):
                if parts[-1] is None:
                    stop.set()
                else:
                    go[i].touch()
                parts.append(future.result())
        except BaseException:
            stop.set()
            raise
        finally:
            for path in go:
                path.unlink(missing_ok=True)
    return parts


#: The pytest processes of one contract run: (file name suffix, folder,
#: multi-device). The multi-device contracts need eight simulated CPU devices
#: configured before JAX starts (``optax_gate.gate.run.devices``), so they run in a
#: second process (``<label>.multidevice.*`` files); their outcomes join the
#: same record, and a failure or time-out of either process fails closed.
PARTS = (("", CONTRACTS_DIR, False), (".multidevice", devices.MULTIDEVICE_DIR, True))

#: The most pytest-xdist processes of one contract run, whatever the
#: machine: each holds its own JAX, Optax and traced programs (one process
#: running the whole suite peaked at 2.3 GB resident, measured on the 2-core
#: machine, 2026-12-02), so 4 stay under 10 GB; and each process traces and
#: lowers the programs it meets itself (two processes took 23 % more CPU than
#: one for the same suite), so more processes gain less each.
MAX_WORKERS = 4


def xdist_args(workers: int | str) -> list[str]:
    """pytest-xdist's arguments for ``workers`` processes (an int, or
    ``"auto"``: xdist's count of the machine's physical cores, or
    ``$PYTEST_XDIST_AUTO_NUM_WORKERS`` where set, capped at
    :data:`MAX_WORKERS`), each taking work from the other's queue
    (``--dist worksteal``)."""
    if workers == "auto":
        return ["-n", "auto", "--maxprocesses", str(MAX_WORKERS), "--dist", "worksteal"]
    return ["-n", str(workers), "--dist", "worksteal"]
