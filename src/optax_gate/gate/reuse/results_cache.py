"""Contract results, stored content-addressed per contract module, for every side (the baseline, a candidate, a
matrix environment): a gate runs only the modules whose results are not cached yet.

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import os
import platform
import secrets
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Unpack, cast

from optax_gate.gate.base import atomic, model
from optax_gate.gate.base.run_record import ContractResult, RecordedWarning, RecordFields, RunRecord
from optax_gate.gate.inputs import team_contracts
from optax_gate.gate.inputs.options import SpeedOptions
from optax_gate.gate.run import devices

FORMAT = "results-v1"
CONTRACTS_DIR = "tests/contracts"
#: Environment variables that do not change outcomes (where the compilation
#: cache lives; the gate's own progress, warning, checkpoint and go files; the
#: folder noxw was started from; the file the nox session reads the exit status from).
IGNORED_ENV = (
    "JAX_COMPILATION_CACHE_DIR",
    "OPTAX_GATE_PROGRESS",
    "OPTAX_GATE_WARNINGS",
    "OPTAX_GATE_CHECKPOINTS",
    "OPTAX_GATE_INVOKED_FROM",
    "OPTAX_GATE_GO",
    "OPTAX_GATE_EXIT_FILE",
)
ENV_PREFIXES = ("OPTAX_GATE_", "JAX_", "XLA_")
#: Files of the package that decide a contract's outcome (relative to the
#: project root): the kit and the plugin run inside the environment; these gate
#: modules choose pytest's arguments, plugins and device flags and parse its
#: report log (``tests/meta/gate/test_results_cache.py`` checks that every gate
#: module the runner imports is here).
RUN_MODULES = (
    "src/optax_gate/__init__.py",
    "src/optax_gate/pytest_plugin.py",
    "src/optax_gate/gate/run/runner.py",
    "src/optax_gate/gate/run/pytest_process.py",
    "src/optax_gate/gate/run/outcomes.py",
    "src/optax_gate/gate/run/pytest_plugins.py",
    "src/optax_gate/gate/run/devices.py",
    "src/optax_gate/gate/inputs/team_contracts.py",
    "src/optax_gate/gate/inputs/options.py",
    "src/optax_gate/gate/run/warnings_diff.py",
    "src/optax_gate/gate/run/reach_record.py",
    "src/optax_gate/gate/inputs/validate.py",
    "src/optax_gate/gate/install/compilation_cache.py",
    "src/optax_gate/gate/base/details.py",
    "src/optax_gate/gate/base/drift.py",
    "src/optax_gate/gate/base/plain_text.py",
    "src/optax_gate/gate/base/run_record.py",
)
MANIFEST = "manifest.json"
_SKIP_SUFFIXES = (".pyc", ".obtained.yml")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _digest_json(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def _files_under(folder: Path) -> list[Path]:
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and not p.name.endswith(_SKIP_SUFFIXES)
    )


@dataclasses.dataclass(frozen=True)
class Unit:
    """One cached unit: ``name`` is how its contract ids begin
    (``tests/contracts/test_adam.py``) or, for a team folder, the folder's
    label; ``part`` the pytest process (0 single-device, 1 multi-device);
    ``target`` what pytest is given (a module path relative to the project
    root, or the team folder); ``digest`` the SHA-256 of its files."""

    name: str
    part: int
    target: str
    digest: str
    team: bool = False

    def owns(self, contract_id: str, record: ContractResult) -> bool:
        """Whether the contract ``contract_id`` (``record`` its result) is this unit's."""
        if self.team:
            return record.get("team") == self.name
        return not record.get("team") and contract_id.split("::", 1)[0] == self.name


def _module_files(project_root: Path) -> tuple[dict[str, list[Path]], list[Path]]:
    """The contract modules under ``tests/contracts`` (name -> its files: the
    module and its snapshot folder) and the files no module owns."""
    root = project_root / CONTRACTS_DIR
    files = _files_under(root) if root.is_dir() else []
    modules = {p: [p] for p in files if p.name.startswith("test_") and p.suffix == ".py"}
    folders = {m.with_suffix(""): m for m in modules}  # a module's snapshot folder has its name
    shared: list[Path] = []
    for path in files:
        if path in modules:
            continue
        owner = next((folders[d] for d in path.parents if d in folders), None)
        (modules[owner] if owner else shared).append(path)
    return {m.relative_to(project_root).as_posix(): sorted(fs) for m, fs in modules.items()}, shared


def units(project_root: Path, team_dirs: list[Path] | None = None) -> list[Unit]:
    """Every unit of a contract run, in order: our modules, then one per team folder."""
    project_root = Path(project_root)
    modules, _ = _module_files(project_root)
    out = [
        Unit(
            name,
            1 if devices.is_multidevice(name) else 0,
            name,
            _digest_json({p.relative_to(project_root).as_posix(): _sha256(p) for p in files}),
        )
        for name, files in sorted(modules.items())
    ]
    for folder in team_dirs or []:
        out.append(Unit(team_contracts.label(folder), 0, str(folder), team_contracts.digest([folder]), team=True))
    return out


def side_inputs(
    lock: Path, baseline_lock: Path, project_root: Path, environ: dict[str, str] | None = None
) -> dict[str, Any]:
    """Everything a side's outcomes depend on besides its contract modules (see the module docstring)."""
    project_root = Path(project_root)
    environ = dict(os.environ if environ is None else environ)
    env = {k: v for k, v in sorted(environ.items()) if k.startswith(ENV_PREFIXES) and k not in IGNORED_ENV}
    env.setdefault("OPTAX_GATE_HYPOTHESIS_PROFILE", "ci")
    _, shared = _module_files(project_root)
    files = [
        project_root / "conftest.py",
        project_root / "pyproject.toml",
        *shared,
        *(project_root / m for m in RUN_MODULES),
    ]
    kit = project_root / "src/optax_gate/kit"
    files += _files_under(kit) if kit.is_dir() else []
    digests = {p.relative_to(project_root).as_posix(): _sha256(p) for p in sorted(set(files)) if p.is_file()}
    return {
        "format": FORMAT,
        "lock_sha256": _sha256(lock),
        "checkpoints_lock_sha256": _sha256(baseline_lock),
        "files_sha256": _digest_json(digests),
        "python": platform.python_version(),
        "platform": f"{platform.system()}-{platform.machine()}",
        "environment": env,
    }


def key(inputs: dict[str, Any]) -> str:
    """The cache key of some inputs (24 hex digits of their SHA-256)."""
    return _digest_json(inputs)[:24]


def unit_inputs(side: dict[str, Any], unit: Unit) -> dict[str, Any]:
    """What decides one unit's cached results: its side's key, its name, part, team folder and digest."""
    return {"side": key(side), "unit": unit.name, "part": unit.part, "team": unit.team, "digest": unit.digest}


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _folder(cache_dir: Path) -> Path:
    return Path(cache_dir) / "results"


def _write(path: Path, kind: str, inputs: dict[str, Any], payload: dict[str, Any]) -> Path:
    entry = {
        "format": FORMAT,
        "kind": kind,
        "key": key(inputs),
        "inputs": inputs,
        "recorded": _now(),
        "payload": payload,
        "payload_sha256": _digest_json(payload),
    }
    return atomic.write_text(path, json.dumps(entry, sort_keys=True) + "\n")


def _read(path: Path, kind: str, inputs: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """``(entry, "")``, or ``(None, why)``: no entry, or a doubtful one (deleted)."""
    if not path.is_file():
        return None, "no cache entry"
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
        problem = (
            "not an entry of this format"
            if not isinstance(entry, dict) or entry.get("format") != FORMAT or entry.get("kind") != kind
            else "key inputs differ"
            if entry.get("inputs") != inputs or entry.get("key") != key(inputs)
            else "payload differs from its recorded digest"
            if entry.get("payload_sha256") != _digest_json(entry.get("payload"))
            else ""
        )
    except (OSError, ValueError) as exc:
        problem, entry = f"unreadable entry ({type(exc).__name__})", None
    if problem:
        path.unlink(missing_ok=True)
        return None, f"cache entry {path.name} discarded: {problem}"
    return entry, ""


def fetch_unit(cache_dir: Path, side: dict[str, Any], unit: Unit) -> tuple[dict[str, Any] | None, str]:
    """The cached ``{"contracts", "warnings", "failed"}`` of ``unit`` with
    ``"recorded"`` added, or ``(None, why)``."""
    inputs = unit_inputs(side, unit)
    entry, why = _read(_folder(cache_dir) / f"unit-{key(inputs)}.json", "unit", inputs)
    return ({**entry["payload"], "recorded": entry["recorded"]}, "") if entry else (None, why)


def fetch_side(cache_dir: Path, side: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """The cached side header (versions, pytest plugins, hypothesis profile,
    warnings no module owns), or ``(None, why)``."""
    entry, why = _read(_folder(cache_dir) / f"side-{key(side)}.json", "side", side)
    return (entry["payload"], "") if entry else (None, why)


#: Record fields kept in a side entry beside its warnings: the versions and those of :data:`SIDE_FIELDS`.
SIDE_FIELDS = ("hypothesis_profile", "pytest_plugins")


def _owned_warnings(warnings: list[RecordedWarning], ids: set[str]) -> list[RecordedWarning]:
    out: list[RecordedWarning] = []
    for w in warnings:
        mine = [c for c in w.get("contracts") or [] if c in ids]
        if mine:
            out.append({**w, "contracts": mine})
    return out


def split(record: RunRecord, ran: list[Unit]) -> tuple[dict[str, dict[str, Any]], dict[str, Any]] | None:
    """A verified run's record cut into ``({unit name: unit payload}, side
    payload)`` (the JSON the cache's files hold); None when a contract belongs to no unit that ran (then nothing
    is stored)."""
    contracts = record.contracts
    owned: dict[str, dict[str, ContractResult]] = {u.name: {} for u in ran}
    for cid, result in contracts.items():
        unit = next((u for u in ran if u.owns(cid, result)), None)
        if unit is None:
            return None
        owned[unit.name][cid] = result
    warnings = record.fields.get("warnings") or []
    reach = record.fields.get("reach")
    payloads: dict[str, dict[str, Any]] = {}
    for unit in ran:
        mine = owned[unit.name]
        if mine:  # a module that ran no contract is run again next time
            payloads[unit.name] = {"contracts": mine, "warnings": _owned_warnings(warnings, set(mine))}
            if reach is not None and not unit.team:  # what the module executed (gate.reuse.selection)
                payloads[unit.name]["reach"] = reach["modules"].get(unit.name, [])
                if "apis" in reach:  # and what it executed outside any API's tests, and in each API's
                    payloads[unit.name]["reach_common"] = reach["common"].get(unit.name, [])
                    payloads[unit.name]["reach_apis"] = reach["apis"].get(unit.name, {})
    everything = set(contracts)
    loose = [w for w in warnings if w.get("when") == "import" or not set(w.get("contracts") or []) & everything]
    fields: Mapping[str, Any] = record.fields
    side = {"versions": record.versions, **{f: fields.get(f) for f in SIDE_FIELDS}, "warnings": loose}
    if reach is not None:
        side["reach_session"] = reach["session"]
    return payloads, side


def without_apis(payload: dict[str, Any], apis: list[str]) -> dict[str, Any]:
    """A unit payload less the contracts of ``apis`` (and the warnings only they raised)."""
    kept = {cid: r for cid, r in payload["contracts"].items() if r.get("api") not in apis}
    return {"contracts": kept, "warnings": _owned_warnings(payload.get("warnings") or [], set(kept))}


def store(
    cache_dir: Path, side: dict[str, Any], record: RunRecord, ran: list[Unit], in_part: Iterable[str] = ()
) -> int:
    """Store the units ``ran`` (and the side header) of a verified ``record``, less those that ran only
    some of their contracts (``in_part``, by name); the number of units stored (0 when the record is not
    verified or cannot be cut into units)."""
    if not record.ran:
        return 0
    parts = split(record, ran)
    if parts is None:
        return 0
    payloads, header = parts
    folder = _folder(cache_dir)
    _write(folder / f"side-{key(side)}.json", "side", side, header)
    for unit in ran:
        if unit.name in payloads and unit.name not in in_part:
            inputs = unit_inputs(side, unit)
            _write(folder / f"unit-{key(inputs)}.json", "unit", inputs, payloads[unit.name])
    return len(set(payloads) - set(in_part))


def merge_warnings(*lists: list[RecordedWarning]) -> list[RecordedWarning]:
    """Folded warning lists (``warnings_diff.fold``) joined: one entry per
    ``(when, category, message, module)`` with the contracts of all."""
    groups: dict[tuple[str, str, str, str], set[str]] = {}
    for warnings in lists:
        for w in warnings:
            groups.setdefault((w["when"], w["category"], w["message"], w["module"]), set()).update(
                w.get("contracts") or []
            )
    return [
        {"when": k[0], "category": k[1], "message": k[2], "module": k[3], "contracts": sorted(v)}
        for k, v in sorted(groups.items())
    ]


def assemble(
    label: str, header: dict[str, Any], cached: dict[str, dict[str, Any]], **extra: Unpack[RecordFields]
) -> RunRecord:
    """The run record of a side whose every unit came from the cache (``header``: its cached side header)."""
    contracts: dict[str, ContractResult] = {c: r for p in cached.values() for c, r in p["contracts"].items()}
    failing = any(r.get("outcome") in ("failed", "error") for r in contracts.values())
    kept = cast(RecordFields, {f: header.get(f) for f in SIDE_FIELDS})
    fields: RecordFields = {"exitstatus": 1 if failing else 0, "duration_s": None, **kept, **extra}  # nothing ran
    fields["warnings"] = merge_warnings(header.get("warnings") or [], *(p["warnings"] for p in cached.values()))
    return RunRecord(label, "ran", "", contracts, header.get("versions"), fields)


def join(record: RunRecord, cached: dict[str, dict[str, Any]]) -> RunRecord:
    """``record`` (a run of the units not cached) with the cached units'
    contracts and warnings added; a record that is not verified stays as it is."""
    if not record.ran or not cached:
        return record
    contracts = dict(record.contracts)
    for payload in cached.values():
        contracts.update(payload["contracts"])
    failing = any(r.get("outcome") in ("failed", "error") for r in contracts.values())
    return dataclasses.replace(
        record.with_fields(
            exitstatus=max(record.fields.get("exitstatus") or 0, 1 if failing else 0),
            warnings=merge_warnings(record.fields.get("warnings") or [], *(p["warnings"] for p in cached.values())),
        ),
        contracts=contracts,
    )


def origin(side: dict[str, Any], cached: dict[str, dict[str, Any]], total: int) -> model.FromCache:
    """The record's ``from_cache``: the side key, the oldest unit's date, and
    how many of the ``total`` units came from the cache."""
    return {
        "key": key(side),
        "recorded": min(p["recorded"] for p in cached.values()),
        "modules": len(cached),
        "of": total,
    }


# ------------------------------------------------------------------ speed readings


def speed_inputs(
    baseline_lock: Path,
    candidate_lock: Path,
    project_root: Path,
    options: SpeedOptions,
    environ: dict[str, str] | None = None,
) -> dict[str, Any]:
    """What the speed readings of a pair of environments depend on: both locks,
    the timed set-ups (``kit/environment/speed.py``, ``kit/training/models.py``) and the statistics
    (``gate/speed/readings.py``), the rounds and budget (``options``), Python, platform, environment."""
    root = Path(project_root)
    environ = dict(os.environ if environ is None else environ)
    sources = [
        root / "src/optax_gate/kit/environment/speed.py",
        root / "src/optax_gate/kit/training/models.py",
        root / "src/optax_gate/gate/speed/readings.py",
    ]
    return {
        "format": FORMAT,
        "baseline_lock_sha256": _sha256(baseline_lock),
        "candidate_lock_sha256": _sha256(candidate_lock),
        "sources_sha256": _digest_json({p.relative_to(root).as_posix(): _sha256(p) for p in sources if p.is_file()}),
        "rounds": options.rounds,
        "budget": options.budget,
        "python": platform.python_version(),
        "platform": f"{platform.system()}-{platform.machine()}",
        "environment": {
            k: v for k, v in sorted(environ.items()) if k.startswith(ENV_PREFIXES) and k not in IGNORED_ENV
        },
    }


def fetch_speed(cache_dir: Path, inputs: dict[str, Any]) -> tuple[model.Speed | None, str]:
    """The cached speed result of ``inputs`` with ``from_cache`` ({key, recorded}) added, or ``(None, why)``."""
    entry, why = _read(_folder(cache_dir) / f"speed-{key(inputs)}.json", "speed", inputs)
    if entry is None:
        return None, why
    stored: model.Speed = entry["payload"]  # what store_speed wrote: a measured result
    return {**stored, "from_cache": {"key": entry["key"], "recorded": entry["recorded"]}}, ""


def store_speed(cache_dir: Path, inputs: dict[str, Any], result: model.Speed) -> Path | None:
    """Store a measured speed result (its plot's file name left out); None when not measured."""
    if result.get("status") != "measured":
        return None
    payload = {k: v for k, v in result.items() if k not in ("plot", "plot_missing", "from_cache")}
    return _write(_folder(cache_dir) / f"speed-{key(inputs)}.json", "speed", inputs, payload)


def fetch_speed_reach(cache_dir: Path, side: dict[str, Any]) -> list[str] | None:
    """What the timed training steps executed in the environment of the side inputs ``side`` (the
    baseline's), as its speed worker recorded it (``kit.environment.speed``); None when never recorded."""
    entry, _ = _read(_folder(cache_dir) / f"speed-reach-{key(side)}.json", "speed-reach", side)
    found = entry["payload"].get("functions") if entry is not None else None
    return list(found) if isinstance(found, list) else None


def store_speed_reach(cache_dir: Path, side: dict[str, Any], functions: list[str]) -> Path | None:
    """Store what the timed training steps execute in the environment of ``side`` (:func:`fetch_speed_reach`)."""
    return _write(
        _folder(cache_dir) / f"speed-reach-{key(side)}.json", "speed-reach", side, {"functions": sorted(functions)}
    )


# ------------------------------------------------------------------ checkpoints


def _dir_files(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): _sha256(p)
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != MANIFEST
    }


def store_checkpoints(cache_dir: Path, inputs: dict[str, Any], checkpoints: Path) -> Path | None:
    """Store the resume checkpoints written in the environment of ``inputs``
    (the baseline's side inputs); a temporary folder renamed into place whole."""
    if not checkpoints.is_dir() or not any(checkpoints.iterdir()):
        return None
    entry = _folder(cache_dir) / f"checkpoints-{key(inputs)}"
    work = entry.with_name(f".{entry.name}.{secrets.token_hex(4)}.tmp")
    work.parent.mkdir(parents=True, exist_ok=True)
    try:
        shutil.copytree(checkpoints, work / "files")
        manifest = {
            "format": FORMAT,
            "key": key(inputs),
            "inputs": inputs,
            "recorded": _now(),
            "files": _dir_files(work),
        }
        atomic.write_text(work / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        shutil.rmtree(entry, ignore_errors=True)
        os.replace(work, entry)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return entry


def fetch_checkpoints(cache_dir: Path, inputs: dict[str, Any], checkpoints: Path) -> str:
    """Copy the cached checkpoints of ``inputs`` into a fresh ``checkpoints``;
    "" when done, else why not (a doubtful entry is deleted)."""
    entry = _folder(cache_dir) / f"checkpoints-{key(inputs)}"
    if not entry.is_dir():
        return "no cache entry"
    try:
        manifest = json.loads((entry / MANIFEST).read_text(encoding="utf-8"))
        problem = (
            "key inputs differ"
            if manifest.get("inputs") != inputs or manifest.get("format") != FORMAT
            else "files differ from their recorded digests"
            if manifest.get("files") != _dir_files(entry)
            else ""
        )
    except (OSError, ValueError) as exc:
        problem = f"unreadable entry ({type(exc).__name__})"
    if problem:
        shutil.rmtree(entry, ignore_errors=True)
        return f"cache entry {entry.name} discarded: {problem}"
    shutil.rmtree(checkpoints, ignore_errors=True)
    shutil.copytree(entry / "files", checkpoints)
    return ""
