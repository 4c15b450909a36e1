"""The record of what each contract module executed, as a contract run's pytest processes wrote it (``kit.environment.reach``); read by the runner, used by ``selection``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from optax_gate.kit.environment import reach_names as reach_plugin

#: The pytest argument that loads the recorder.
PLUGIN_ARGS = ("-p", "optax_gate.kit.environment.reach")


def reach_file(out_dir: Path, name: str) -> Path:
    """The file a pytest process named ``name`` is told to write (``$OPTAX_GATE_REACH``);
    each process (the pytest-xdist controller, each worker) writes it with its process id added."""
    return out_dir / f"{name}.reach.json"


def forget(out_dir: Path, name: str) -> None:
    """Remove the record files an earlier process of that name left."""
    for old in out_dir.glob(f"{name}.reach.json*"):
        old.unlink(missing_ok=True)


def read(out_dir: Path, name: str) -> dict[str, Any] | None:
    """The record of the pytest process ``name`` (its workers' files joined):
    ``{"session": [FUNCTION, ...], "modules": {module: [FUNCTION, ...]}}``;
    None when it wrote none, or one unreadable or of another format."""
    parts = []
    for path in sorted(out_dir.glob(f"{name}.reach.json*")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("format") != reach_plugin.FORMAT:
            return None
        parts.append(data)
    return join(parts) if parts else None


def join(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Records of several processes as one (a function that ran in a module in either ran in it)."""
    session: set[str] = set()
    modules: dict[str, set[str]] = {}
    for data in records:
        session.update(data.get("session") or [])
        for module, found in (data.get("modules") or {}).items():
            modules.setdefault(module, set()).update(found)
    return {"session": sorted(session), "modules": {m: sorted(f) for m, f in sorted(modules.items())}}
