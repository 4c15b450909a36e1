"""The perturbed baseline runs of a team's run kept between gates, under a key of what decides them."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from optax_gate.gate.team_run import team_files
from optax_gate.gate.team_run.command import RunSpec

#: A file of the team's folder larger than this is keyed by its size and modification time, not its bytes.
KEYED_BYTES = 16 * 2**20


def ensemble_key(spec: RunSpec, python: Path) -> str:
    """What decides the ensemble's runs: the baseline's environment (its interpreter's folder, named by its lock),
    the command, the number of members, the team's files (their bytes; the gate's own folders in it left out) and
    the recorder's code."""
    import hashlib

    digest = hashlib.sha256()
    recorder = Path(__file__).resolve().parents[2] / "recorder"
    for part in (str(Path(os.path.abspath(python)).parent.parent), spec.command, str(spec.members)):
        digest.update(part.encode() + b"\0")
    gates_own = frozenset(
        os.path.realpath(p) for p in spec.not_watched
    )  # a report written inside the team's folder is not the team's
    files, _ = team_files.scan(spec.run_dir, gates_own, limit=0)
    for rel in sorted(files or {}):
        path = spec.run_dir / rel
        size = (files or {})[rel][1]
        digest.update(rel.encode() + b"\0")
        digest.update(_file_digest(path) if size <= KEYED_BYTES else f"{size}:{(files or {})[rel][0]}".encode())
    for path in sorted(recorder.rglob("*.py")):
        digest.update(_file_digest(path))
    return digest.hexdigest()[:24]


def _file_digest(path: Path) -> bytes:
    import hashlib

    try:
        with open(path, "rb") as handle:
            return hashlib.file_digest(handle, "sha256").digest()
    except OSError:
        return b"unreadable"


def member_paths(labels: list[str]) -> list[str]:
    """The files and folders the perturbed runs ``labels`` leave in the evidence folder."""
    return [p for label in labels for p in (f"team-run-{label}", f"team-run-{label}.log", f"team-run-{label}-files")]


def cached_members(cache: Path | None, key: str, labels: list[str], folder: Path) -> bool:
    """Copy the ensemble's runs kept under ``cache/key`` into ``folder``; whether they were there (complete)."""
    if cache is None or not (cache / key / "COMPLETE").is_file():
        return False
    for rel in member_paths(labels):
        source = cache / key / rel
        if source.is_dir():
            shutil.copytree(source, folder / rel, dirs_exist_ok=True)
        elif source.is_file():
            shutil.copy2(source, folder / rel)
    return True


def store_members(cache: Path | None, key: str, labels: list[str], folder: Path) -> None:
    """Keep the ensemble's runs under ``cache/key`` for the next gate (written whole, then renamed; a failure to
    write only costs the next gate the runs)."""
    if cache is None:
        return
    target = cache / key
    staging = cache / f".{key}.{os.getpid()}"
    try:
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        for rel in member_paths(labels):
            source = folder / rel
            if source.is_dir():
                shutil.copytree(source, staging / rel)
            elif source.is_file():
                shutil.copy2(source, staging / rel)
        (staging / "COMPLETE").write_text("ensemble runs\n", encoding="utf-8")
        shutil.rmtree(target, ignore_errors=True)
        os.replace(staging, target)
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
