"""The mutants check's runner: a pytest process that a signal kills is run
again, up to twice, and a third crash stops the check with where it crashed."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from optax_gate.mutants import __main__ as runner

CRASH_ONCE = """
import os
from pathlib import Path

import pytest

pytestmark = [pytest.mark.contract(api="optax.sgd", guide="team: a module that crashes its pytest process"), pytest.mark.acceptance]

def test_runs_after_one_crash():
    marker = Path(__file__).with_suffix(".crashed")
    if not marker.exists():
        marker.write_text("")
        os.abort()
    assert marker.exists()
"""

CRASH_ALWAYS = """
import os

import pytest

pytestmark = [pytest.mark.contract(api="optax.sgd", guide="team: a module that crashes its pytest process"), pytest.mark.acceptance]

def test_always_crashes():
    os.abort()
"""


def _module(tmp_path: Path, text: str) -> str:
    path = tmp_path / "test_crashing.py"
    path.write_text(text)
    return str(path)


def test_a_crash_is_run_again_once(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(Path(__file__).parents[2])  # the project's pyproject.toml, as the check runs
    failed, contracts = runner._failed_contracts(_module(tmp_path, CRASH_ONCE), None, tmp_path)
    assert (failed, len(contracts)) == (set(), 1)
    assert "crashed (SIGABRT)" in capsys.readouterr().out


def test_a_third_crash_stops_the_check_and_says_where(tmp_path, monkeypatch):
    monkeypatch.chdir(Path(__file__).parents[2])
    with pytest.raises(RuntimeError, match=r"crashed \(SIGABRT\) at File .*test_crashing.py.*test_always_crashes"):
        runner._failed_contracts(_module(tmp_path, CRASH_ALWAYS), None, tmp_path)


def test_crash_words_without_a_fault_handler_dump():
    assert runner.crash_words(-signal.SIGKILL, "") == "crashed (SIGKILL)"
    assert runner.crash_words(-99, "") == "crashed (signal 99)"
