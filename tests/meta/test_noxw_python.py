"""``./noxw`` finds a Python 3.12 to build its own tool venv with: never one inside that venv (it removes the venv
to remake it), and, before that venv exists, any working one (a check written against the venv's path must not
refuse every interpreter when the folder is missing)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

NOXW = Path(__file__).resolve().parents[2] / "noxw"

pytestmark = pytest.mark.skipif(sys.version_info[:2] != (3, 12), reason="noxw looks for Python 3.12; this interpreter is another")


def _find_python(tools: Path, candidate: str) -> str:
    """``find_python`` of noxw, with its helper functions only (not the script's top level), for ``tools``."""
    text = NOXW.read_text(encoding="utf-8")
    start = text.index("in_tools() {")
    end = text.index('if ! py="$(find_python)"')
    script = f"tools={tools!s}\n{text[start:end]}\nfind_python\n"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tools.parent), "OPTAX_GATE_PYTHON": candidate}
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=60)
    return out.stdout.strip()


def test_a_python_is_found_before_the_tool_venv_exists(tmp_path):
    assert _find_python(tmp_path / ".noxw", sys.executable) == sys.executable


def test_a_python_inside_the_tool_venv_is_never_taken(tmp_path):
    venv_bin = tmp_path / ".noxw" / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    inside = venv_bin / "python3.12"
    os.symlink(sys.executable, inside)
    assert _find_python(tmp_path / ".noxw", str(inside)) != str(inside)
    assert _find_python(tmp_path / "elsewhere", str(inside)) == str(inside)  # the same file, another tool folder: taken
