"""The baseline's result, stored content-addressed, so a warm gate runs only
the candidate.

The baseline's outcomes change only when something that feeds them changes.
The cache key is the SHA-256 of all of it:

- the baseline lock's bytes;
- every file of the contracts (``tests/contracts/**``: modules, snapshots,
  ledger, conftests) and of this package (``src/optax_gate/**``), plus the
  root ``conftest.py`` and ``pyproject.toml`` (pytest's configuration);
- every file of the team's contract folders (``gate --contracts DIR``), when given;
- the Python version, the operating system and the machine;
- the hypothesis profile and every environment variable the suite or JAX
  reads (``OPTAX_GATE_*``, ``JAX_*``, ``XLA_*``), except the compilation
  cache's folder (it changes speed, not outcomes).

An entry (``<cache dir>/baseline/<key>/``) holds the run record, the evidence
files (report logs, JUnit XML, pytest output, warnings) and the resume
checkpoints, with a manifest of each file's SHA-256 and the inputs of the key.
It is written into a temporary folder and renamed into place whole. An entry
is used only when its manifest names the same key inputs and every file still
has its recorded digest; anything else (a missing, changed or extra file, an
unreadable manifest) deletes the entry and the baseline runs again: a doubtful
entry costs a re-run, never a wrong verdict.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import platform
import shutil
import secrets
from pathlib import Path
from typing import Any

from optax_gate.gate import atomic, team_contracts

#: Environment variables that do not change outcomes (where the compilation
#: cache lives; the gate's own progress and warning files; the folder noxw was
#: started from).
IGNORED_ENV = ("JAX_COMPILATION_CACHE_DIR", "OPTAX_GATE_PROGRESS", "OPTAX_GATE_WARNINGS", "OPTAX_GATE_CHECKPOINTS",
               "OPTAX_GATE_INVOKED_FROM")
ENV_PREFIXES = ("OPTAX_GATE_", "JAX_", "XLA_")
MANIFEST = "manifest.json"
RECORD = "record.json"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _tree_digest(project_root: Path) -> dict[str, str]:
    """SHA-256 of every file that the contracts' outcomes depend on, by path."""
    files = [project_root / "conftest.py", project_root / "pyproject.toml"]
    for folder in ("tests/contracts", "src/optax_gate"):
        files += [p for p in (project_root / folder).rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and not p.name.endswith((".pyc", ".obtained.yml"))]
    return {p.relative_to(project_root).as_posix(): _sha256(p) for p in sorted(files) if p.exists()}


def key_inputs(lock: Path, project_root: Path, environ: dict[str, str] | None = None,
               team_dirs: list[Path] | None = None) -> dict[str, Any]:
    """Everything the baseline's outcomes depend on (see the module docstring)."""
    environ = dict(os.environ if environ is None else environ)
    env = {k: v for k, v in sorted(environ.items()) if k.startswith(ENV_PREFIXES) and k not in IGNORED_ENV}
    env.setdefault("OPTAX_GATE_HYPOTHESIS_PROFILE", "ci")
    files = _tree_digest(project_root)
    team = {"team_contracts": [team_contracts.label(d) for d in team_dirs],
            "team_contracts_sha256": team_contracts.digest(team_dirs)} if team_dirs else {}
    return {
        "lock_sha256": _sha256(lock),
        "files_sha256": hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest(),
        **team,
        "python": platform.python_version(),
        "platform": f"{platform.system()}-{platform.machine()}",
        "environment": env,
    }


def key(inputs: dict[str, Any]) -> str:
    """The cache key of ``key_inputs`` (24 hex digits of their SHA-256)."""
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:24]


def _files(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): _sha256(p) for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != MANIFEST}


def store(cache_dir: Path, inputs: dict[str, Any], record: dict[str, Any], evidence: list[Path],
          checkpoints: Path) -> Path | None:
    """Store a verified baseline run; return its entry, or None when the run is
    not worth storing (not verified, or its checkpoints were not written)."""
    if record.get("status") != "ran" or record.get("checkpoint_writer") != "written":
        return None
    entry = cache_dir / "baseline" / key(inputs)
    work = entry.with_name(f".{entry.name}.{secrets.token_hex(4)}.tmp")
    work.mkdir(parents=True)
    try:
        (work / "evidence").mkdir()
        for path in evidence:
            if path.is_file():
                shutil.copy2(path, work / "evidence" / path.name)
        if checkpoints.is_dir():
            shutil.copytree(checkpoints, work / "checkpoints")
        atomic.write_text(work / RECORD, json.dumps(record, indent=2, sort_keys=True) + "\n")
        manifest = {"key": key(inputs), "inputs": inputs, "recorded": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                    "files": _files(work)}
        atomic.write_text(work / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        shutil.rmtree(entry, ignore_errors=True)
        os.replace(work, entry)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return entry


def fetch(cache_dir: Path, inputs: dict[str, Any], evidence_dir: Path, checkpoints: Path) -> tuple[dict[str, Any] | None, str]:
    """The cached baseline record for ``inputs``, with its evidence copied into
    ``evidence_dir`` and its checkpoints into ``checkpoints``; ``(None, why)``
    when there is no usable entry (a doubtful one is deleted)."""
    entry = cache_dir / "baseline" / key(inputs)
    if not entry.is_dir():
        return None, "no cache entry"
    try:
        manifest = json.loads((entry / MANIFEST).read_text(encoding="utf-8"))
        problem = ("key inputs differ" if manifest.get("inputs") != inputs
                   else "files differ from their recorded digests" if manifest.get("files") != _files(entry) else "")
        record = json.loads((entry / RECORD).read_text(encoding="utf-8")) if not problem else None
    except (OSError, ValueError) as exc:
        problem, record = f"unreadable entry ({exc})", None
    if problem:
        shutil.rmtree(entry, ignore_errors=True)
        return None, f"cache entry {entry.name} discarded: {problem}"
    evidence_dir.mkdir(parents=True, exist_ok=True)
    for path in sorted((entry / "evidence").glob("*")) if (entry / "evidence").is_dir() else []:
        shutil.copy2(path, evidence_dir / path.name)
    shutil.rmtree(checkpoints, ignore_errors=True)
    if (entry / "checkpoints").is_dir():
        shutil.copytree(entry / "checkpoints", checkpoints)
    record["from_cache"] = {"key": manifest["key"], "recorded": manifest["recorded"]}
    return record, ""
