"""``./noxw`` finds a Python 3.12 to build its own tool venv with: never one inside that venv (it removes the venv
to remake it), and, before that venv exists, any working one (a check written against the venv's path must not
refuse every interpreter when the folder is missing)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

NOXW = Path(__file__).resolve().parents[3] / "noxw"

pytestmark = pytest.mark.skipif(
    sys.version_info[:2] != (3, 12), reason="noxw looks for Python 3.12; this interpreter is another"
)


def _find_python(tools: Path, candidate: str) -> str:
    """``find_python`` of noxw, with its helper functions only (not the script's top level), for ``tools``."""
    text = NOXW.read_text(encoding="utf-8")
    start = text.index("in_tools() {")
    end = text.index("# The interpreter the tool venv was built with")
    script = f"tools={tools!s}\n{text[start:end]}\nfind_python\n"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tools.parent), "OPTAX_GATE_PYTHON": candidate}
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env, timeout=60)
    return out.stdout.strip()


def test_a_python_is_found_before_the_tool_venv_exists(tmp_path: Path) -> None:
    assert _find_python(tmp_path / ".noxw", sys.executable) == sys.executable


def test_a_python_inside_the_tool_venv_is_never_taken(tmp_path: Path) -> None:
    venv_bin = tmp_path / ".noxw" / "venv" / "bin"
    venv_bin.mkdir(parents=True)
    inside = venv_bin / "python3.12"
    os.symlink(sys.executable, inside)
    assert _find_python(tmp_path / ".noxw", str(inside)) != str(inside)
    assert _find_python(tmp_path / "elsewhere", str(inside)) == str(inside)  # the same file, another tool folder: taken


def _project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A copy of noxw beside a tool venv built with interpreter A (its stamp says so; its nox is a stand-in), and a
    PATH whose first python3.12 is another one, B (the same interpreter by another path, as an activated venv's)."""
    root = tmp_path / "project"
    (root / ".noxw" / "venv" / "bin").mkdir(parents=True)
    (root / "noxw").write_text(NOXW.read_text(encoding="utf-8"))
    (root / "requirements-tools.txt").write_text("nox==0\n")
    pythons = {}
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        os.symlink(sys.executable, tmp_path / name / "python3.12")
        pythons[name] = str(tmp_path / name / "python3.12")
    nox = root / ".noxw" / "venv" / "bin" / "nox"
    nox.write_text('#!/bin/sh\necho stand-in nox "$@"\n')
    nox.chmod(0o755)
    digest = subprocess.run(
        ["sha256sum", str(root / "requirements-tools.txt")], capture_output=True, text=True, check=True
    ).stdout.split()[0]
    (root / ".noxw" / "venv" / ".requirements-tools.sha256").write_text(f"{digest} {pythons['a']}\n")
    env = {"PATH": f"{tmp_path / 'b'}:/usr/bin:/bin", "HOME": str(tmp_path)}
    return root, {**env, **{f"PY_{k.upper()}": v for k, v in pythons.items()}}


def test_the_tool_venv_keeps_its_interpreter_when_another_python_comes_first_on_path(tmp_path: Path) -> None:
    root, env = _project(tmp_path)
    out = subprocess.run(["bash", str(root / "noxw"), "--version"], capture_output=True, text=True, env=env, timeout=60)
    assert "installing" not in out.stderr, out.stderr
    assert out.stdout.startswith("stand-in nox"), out.stdout + out.stderr


def test_optax_gate_python_chooses_the_interpreter_and_remakes_the_venv(tmp_path: Path) -> None:
    root, env = _project(tmp_path)
    out = subprocess.run(
        ["bash", str(root / "noxw"), "--version"],
        capture_output=True,
        text=True,
        env={**env, "OPTAX_GATE_PYTHON": env["PY_B"]},
        timeout=120,
    )
    assert f"installing nox and uv for {env['PY_B']}" in out.stderr
