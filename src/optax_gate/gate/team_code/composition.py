"""Which public Optax callables each public constructor is built from, read from
the probe run inside each environment (``optax_gate.kit.surface.composition``): the
gate half runs the probe's command and reads its JSON, nothing more.

``optax.adamw`` is built from ``optax.scale_by_adam``,
``optax.add_decayed_weights``, ...; a finding on ``optax.scale_by_adam``
reaches a team line that calls ``optax.adamw``
(``optax_gate.gate.team_code.attribution``). Both environments are probed and their
answers joined: the team's line runs on both.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: Seconds allowed to one probe (it builds about 200 constructors, no JIT).
TIMEOUT = 300


def python_of(site_packages: str | Path) -> Path:
    """An environment's interpreter from its ``site-packages`` folder (``ENV/lib/python3.12/site-packages`` ->
    ``ENV/bin/python``)."""
    return Path(site_packages).parents[2] / "bin" / "python"


def probe(python: Path, timeout: float = TIMEOUT) -> dict[str, Any]:
    """The probe's answer in the environment of ``python``:
    ``{"optax", "reached": {path: [paths]}, "passes", "built", "not_built"}``, or
    ``{"error": why}`` when it could not run (never raises)."""
    if not Path(python).exists():
        return {"error": f"no interpreter at {python}"}
    try:
        proc = subprocess.run(
            [str(python), "-m", "optax_gate.kit.surface.composition"], capture_output=True, text=True, timeout=timeout
        )
        answer: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
        return answer
    except subprocess.TimeoutExpired:
        return {"error": f"the composition probe timed out after {timeout:.0f} s"}
    except (OSError, IndexError, ValueError) as exc:
        tail = " | ".join((proc.stderr or "").strip().splitlines()[-2:]) if "proc" in locals() else ""
        return {"error": f"the composition probe failed: {tail or exc}"}


def of_records(*records: Mapping[str, Any]) -> tuple[dict[str, set[str]], list[str], dict[str, dict[str, set[str]]]]:
    """(public path -> public paths it is built from, joined over the
    environments of ``records``; the reasons of the environments that could
    not be probed; public path -> {its argument: {"part:argument" it reaches
    unchanged}}, joined the same way). A record without ``site_packages``
    cannot be probed."""
    reached: dict[str, set[str]] = {}
    passes: dict[str, dict[str, set[str]]] = {}
    errors = []
    for record in records:
        site = record.get("site_packages")
        answer: dict[str, Any] = probe(python_of(site)) if site else {"error": "no environment recorded"}
        if "error" in answer:
            errors.append(f"{record.get('label', '?')}: {answer['error']}")
            continue
        for path, parts in answer.get("reached", {}).items():
            reached.setdefault(path, set()).update(parts)
        for path, arguments in (answer.get("passes") or {}).items():
            for name, parts in arguments.items():
                passes.setdefault(path, {}).setdefault(name, set()).update(parts)
    return reached, errors, passes
