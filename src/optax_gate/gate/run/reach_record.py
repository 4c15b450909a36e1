"""The record of what each contract module executed, as a contract run's pytest processes wrote it
(``kit.environment.reach``); read by the runner, used by ``selection``."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from optax_gate.gate.base.run_record import Reach
from optax_gate.kit.environment import reach_names as reach_plugin

#: The pytest arguments that load the recorder and the deselection of the APIs a selection does not run.
PLUGIN_ARGS = ("-p", "optax_gate.kit.environment.reach", "-p", "optax_gate.kit.environment.select_apis")


def reach_file(out_dir: Path, name: str) -> Path:
    """The file a pytest process named ``name`` is told to write (``$OPTAX_GATE_REACH``);
    each process (the pytest-xdist controller, each worker) writes it with its process id added."""
    return out_dir / f"{name}.reach.json"


def forget(out_dir: Path, name: str) -> None:
    """Remove the record files an earlier process of that name left."""
    for old in out_dir.glob(f"{name}.reach.json*"):
        old.unlink(missing_ok=True)


def read(out_dir: Path, name: str) -> Reach | None:
    """The record of the pytest process ``name`` (its workers' files joined, :func:`join`);
    None when it wrote none, or one unreadable or of another format."""
    parts: list[dict[str, Any]] = []
    for path in sorted(out_dir.glob(f"{name}.reach.json*")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("format") != reach_plugin.FORMAT:
            return None
        parts.append(data)
    return join(parts) if parts else None


def join(records: Sequence[Mapping[str, Any]]) -> Reach:
    """Records of several processes as one (a function that ran in a module in either ran in it):
    ``{"session": [FUNCTION, ...], "modules": {module: [FUNCTION, ...]}}``, and where every process that ran
    a module recorded per API, ``"common": {module: [FUNCTION, ...]}`` (what ran in the module outside any
    API's tests) and ``"apis": {module: {api: [FUNCTION, ...]}}``."""
    session: set[str] = set()
    modules: dict[str, set[str]] = {}
    common: dict[str, set[str]] = {}
    apis: dict[str, dict[str, set[str]]] = {}
    per_api = True
    for data in records:
        session.update(data.get("session") or [])
        for module, found in (data.get("modules") or {}).items():
            modules.setdefault(module, set()).update(found)
        if data.get("modules"):
            per_api = per_api and isinstance(data.get("apis"), dict) and isinstance(data.get("common"), dict)
        if per_api:
            for module, found in (data.get("common") or {}).items():
                common.setdefault(module, set()).update(found)
            for module, by_api in (data.get("apis") or {}).items():
                for api, found in by_api.items():
                    apis.setdefault(module, {}).setdefault(api, set()).update(found)
    out: Reach = {"session": sorted(session), "modules": {m: sorted(f) for m, f in sorted(modules.items())}}
    if per_api:
        out["common"] = {m: sorted(f) for m, f in sorted(common.items())}
        out["apis"] = {m: {a: sorted(f) for a, f in sorted(by.items())} for m, by in sorted(apis.items())}
    return out
