"""Snapshots of the team's own baseline (``--baseline-lock`` other than ours).

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from optax_gate.gate.base.run_record import RecordFields, RunRecord
from optax_gate.gate.inputs.options import EnvironmentOptions
from optax_gate.gate.install import environments

#: Environment variables read by ``tests/contracts/conftest.py``.
SNAPSHOT_DIR = "OPTAX_GATE_SNAPSHOT_DIR"
RECORD = "OPTAX_GATE_RECORD_SNAPSHOTS"
#: The folder of the baseline's snapshots in a run's evidence folder.
FOLDER = "snapshots-baseline"
PINNED_LOCK = "requirements-lock.txt"


def is_pinned(baseline_lock: Path, project_root: Path) -> bool:
    """Whether ``baseline_lock`` installs what the project's own lock does
    (same pins and hashes; comments may differ). A project without its lock
    counts as pinned (nothing to compare the recorded files with)."""
    ours = Path(project_root) / PINNED_LOCK
    if not ours.is_file():
        return True
    return environments.pins_digest(Path(baseline_lock)) == environments.pins_digest(ours)


class PreparedSide(Protocol):
    """What ``arrange`` changes of a prepared side (``optax_gate.gate.sides_prepare.Side``, a later stage)."""

    record: RunRecord | None
    cache_inputs: dict[str, Any] | None
    cached: dict[str, dict[str, Any]]
    jax_env: dict[str, str]
    extra: RecordFields


def arrange(
    baseline: PreparedSide, candidate: PreparedSide, env: EnvironmentOptions, evidence: Path, say: Callable[[str], None]
) -> Path | None:
    """Set up both prepared sides (``sides_prepare.Side``) for a baseline that is not
    the pinned one: the baseline records its snapshots into
    ``evidence/snapshots-baseline``, the candidate compares with them, the
    baseline cache is bypassed. Returns the folder, or None (nothing changed)
    for the pinned baseline; given a folder, the caller runs the two sides one
    after the other (the candidate reads what the baseline records)."""
    if is_pinned(env.baseline_lock, env.project_root):
        return None
    folder = (Path(evidence) / FOLDER).absolute()
    folder.mkdir(parents=True, exist_ok=True)
    say(
        "baseline: not cached: a baseline other than the pinned one runs in every gate, recording its snapshots "
        "(./noxw -s compare re-judges a run's evidence without running)"
    )
    baseline.record = None
    baseline.cache_inputs = None
    baseline.cached.clear()  # no module of it from the cache either: each must record its snapshots
    baseline.jax_env = {**baseline.jax_env, SNAPSHOT_DIR: str(folder), RECORD: "1"}
    candidate.jax_env = {**candidate.jax_env, SNAPSHOT_DIR: str(folder)}
    baseline.extra["snapshots"] = candidate.extra["snapshots"] = (
        f"evidence/{FOLDER} (recorded by the baseline in this gate)"
    )
    say(
        f"the baseline lock is not the pinned one: its snapshots are recorded into {folder} and the "
        "candidate's snapshot "
        "contracts compare with them (the two sides run one after the other)"
    )
    return folder
