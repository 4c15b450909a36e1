"""Atomic writes (``optax_gate.gate.base.atomic``): never a half-written report."""

import os
from pathlib import Path
from typing import Any

import pytest

from optax_gate.gate.base import atomic


def test_writes_and_creates_folders(tmp_path: Path) -> None:
    path = atomic.write_text(tmp_path / "a" / "report.md", "new\n")
    assert path.read_text() == "new\n"
    assert os.listdir(tmp_path / "a") == ["report.md"]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "report.json"
    target.write_text("old")

    def boom(src: Any, dst: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        atomic.write_text(target, "new")
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["report.json"]
