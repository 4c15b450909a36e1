"""A whole gate run with its late phases stubbed, in process."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from tests.meta.support.gate_cli import fake_gate
from tests.meta.support.paths import ROOT


def gate_with(tmp_path: Path, patch: Any = "", extra: Any = ()) -> Any:
    """The fake gate's command with ``patch`` (Python) run before ``cli.entry``."""
    cmd = fake_gate(tmp_path, pause=0, extra=extra)
    assert "\ncli.entry(" in cmd[2], "the fake gate's driver changed: the patch would not run"
    cmd[2] = cmd[2].replace("\ncli.entry(", "\n" + patch + "\ncli.entry(")
    return cmd


def run_gate(tmp_path: Path, patch: Any = "", extra: Any = ()) -> Any:
    return subprocess.run(gate_with(tmp_path, patch, extra), cwd=ROOT, capture_output=True, text=True, timeout=120)
