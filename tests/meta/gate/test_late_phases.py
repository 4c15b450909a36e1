"""Late phases keep earlier evidence, and an output folder that cannot be
written at any point keeps the previous report linked and whole
(``optax_gate.gate.late``, ``optax_gate.gate.run.evidence``), through the gate's
command line with the fake environment of ``test_cli``.

The tests run as root in CI, where ``chmod`` stops no write: a folder is made
"unwritable" by patching the gate process's file-system calls (``os.open``,
``open``, ``os.mkdir``, ``os.symlink``, ``os.replace``, ``os.unlink``, ...) to
raise ``PermissionError`` for paths under it, from the moment the gate prints
a chosen progress line on. The fake environment's own processes are not
patched."""

import json
import os
from pathlib import Path
from typing import Any

import pytest

from optax_gate.gate.run import evidence
from tests.meta.support.gate_cli import FAKE_CONTRACTS, FAKE_ID, snapshot
from tests.meta.support.late_phases import run_gate
from tests.meta.support.paths import ROOT

SCHEMA = ROOT / "src" / "optax_gate" / "gate" / "report" / "report.schema.json"

DENY = """
import builtins, errno, io, os
from optax_gate.gate.base import progress
_ROOT = os.path.realpath({root!r})
_ONLY_TOP = {only_top!r}
_state = {{"on": {phase!r} == ""}}
_say = progress.Progress.__call__
def _said(self, message):
    if {phase!r} and {phase!r} in message:
        _state["on"] = True
    return _say(self, message)
progress.Progress.__call__ = _said
def _denied(path):
    if not _state["on"] or isinstance(path, int):
        return False
    real = os.path.realpath(os.fspath(path))
    return os.path.dirname(real) == _ROOT if _ONLY_TOP else real == _ROOT or real.startswith(_ROOT + os.sep)
def _guard(fn, *where, write_flags=False, write_mode=False):
    def guarded(*args, **kwargs):
        for i in where:
            if i < len(args) and _denied(args[i]):
                if write_flags and not (args[1] & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)):
                    continue
                if write_mode and not any(c in (args[1] if len(args) > 1 else kwargs.get("mode", "r")) for c in "wax+"):
                    continue
                raise PermissionError(errno.EACCES, "Permission denied (simulated)", os.fspath(args[i]))
        return fn(*args, **kwargs)
    return guarded
os.open = _guard(os.open, 0, write_flags=True)
builtins.open = io.open = _guard(builtins.open, 0, write_mode=True)
for _name in ("mkdir", "unlink", "remove", "rmdir"):
    setattr(os, _name, _guard(getattr(os, _name), 0))
for _name in ("symlink", "replace", "rename"):
    setattr(os, _name, _guard(getattr(os, _name), 1))
"""


def links(out: Path) -> dict[str, str]:
    return {name: os.readlink(out / name) for name in (evidence.LATEST, *evidence.CURRENT)}


# (progress line from which the folder is unwritable, which folder, only its direct entries, extra options);
# the baseline is cached by the first run: --no-cache makes the second run it again
UNWRITABLE = {
    "runs/ from the start": ("", "runs", False, ()),
    "the output folder from the start": ("", "", False, ()),
    "everything from the input checks": ("checking the inputs", "", False, ()),
    "everything from the cache lookup": ("baseline: building", "", False, ()),
    "everything from the environments": ("baseline: building", "", False, ("--no-cache",)),
    "everything from the checkpoints": ("writing the resume checkpoints", "", False, ("--no-cache",)),
    "everything from the contract runs": ("running the contracts", "", False, ("--no-cache",)),
    "everything from the speed readings": ("speed:", "", False, ("--no-cache",)),
    "everything from the report": ("comparing and writing the report", "", False, ("--no-cache",)),
    "the links only, from the report": ("comparing and writing the report", "", True, ("--no-cache",)),
}


@pytest.mark.parametrize("case", list(UNWRITABLE))
def test_an_output_folder_unwritable_at_any_phase_keeps_the_previous_report_linked_and_whole(
    tmp_path: Path, case: Any
) -> None:
    phase, under, only_top, extra = UNWRITABLE[case]
    out = tmp_path / "out"
    assert run_gate(tmp_path).returncode == 0
    previous = (out / evidence.LATEST).resolve()
    before, linked, report_md = snapshot(previous), links(out), (out / "report.md").read_bytes()
    top = sorted(p.name for p in out.iterdir())

    proc = run_gate(tmp_path, DENY.format(root=str(out / under), phase=phase, only_top=only_top), extra)

    assert proc.returncode == 2, proc.stderr
    assert "optax-gate:" in proc.stderr and (
        "not writable" in proc.stderr or "Permission denied (simulated)" in proc.stderr
    )
    assert links(out) == linked, "the links moved to a run that could not be written"
    assert snapshot(previous) == before and (out / "report.md").read_bytes() == report_md
    assert sorted(p.name for p in out.iterdir()) == top, "a file was left beside the links"
    for run in (out / "runs").iterdir():
        if run != previous:
            assert (run / evidence.MARKER).exists(), f"{run.name} is not marked incomplete"
    if case == "runs/ from the start":
        assert "Traceback" not in proc.stderr and "no run folder can be made under" in proc.stderr


def _raise_in(module: str, message: str) -> str:
    """Patch code (``module`` below ``optax_gate.gate``, e.g. ``diffs.unseen``): ``module.NAME`` raises
    ``RuntimeError(message)`` from within ``module`` (its globals)."""
    return f"""
import types, importlib
def _boom(*args, **kwargs):
    raise RuntimeError({message!r})
_module = importlib.import_module("optax_gate.gate.{module}")
_boom = types.FunctionType(_boom.__code__, vars(_module), "_boom")
"""


LATE = {
    "surface and dependency diff": (
        _raise_in("diffs.unseen", "surface boom") + "_module.beyond = _boom\n",
        (),
        "gate error in the API surface, warnings and dependency diff: RuntimeError: surface boom",
    ),
    # the --usage files are scanned before anything runs (a bad file is listed, never fatal); what runs
    # late is matching the uses against the surface diff and naming the call sites on each finding
    "usage matching": (
        _raise_in("team_code.usage", "match boom") + "_module.imported_modules = _boom\n",
        ("--usage", "tests/meta/fake_team"),
        "gate error in the API surface, warnings and dependency diff: usage matching (--usage): RuntimeError: "
        "match boom",
    ),
    "call sites": (
        _raise_in("team_code.call_sites", "sites boom") + "_module.annotated = _boom\n",
        ("--usage", "tests/meta/fake_team"),
        "gate error in the API surface, warnings and dependency diff: call sites on findings (--usage): "
        "RuntimeError: sites boom",
    ),
    "speed readings": (
        _raise_in("speed.readings", "timer boom") + "_module.measure = _boom\n",
        (),
        "gate error in the speed readings: RuntimeError: timer boom",
    ),
    "report writing": (
        _raise_in("report.markdown", "render boom") + "_module.render = _boom\n",
        (),
        "gate error in the report writing: RuntimeError: render boom",
    ),
    # report.html fails alone: report.md is rendered again with the verdict not verified, report.html is the plain page
    "report.html writing": (
        _raise_in("report.html_page", "html boom") + "_module.render = _boom\n",
        (),
        "gate error in the report writing (report.html): RuntimeError: html boom",
    ),
}


@pytest.mark.parametrize("case", list(LATE))
def test_a_late_error_keeps_both_sides_contracts_and_names_its_phase(tmp_path: Path, case: Any) -> None:
    import jsonschema

    patch, extra, reason = LATE[case]
    proc = run_gate(tmp_path, patch, extra)
    assert proc.returncode == 2, proc.stderr
    out = tmp_path / "out"
    run = (out / evidence.LATEST).resolve()
    assert not (run / evidence.MARKER).exists()
    report = json.loads((out / "report.json").read_text())
    assert report["verdict"] == "not-verified" and report["reasons"][0] == reason
    assert [e["phase"] for e in report["gate_errors"]] == [
        reason.split(": RuntimeError")[0].removeprefix("gate error in the ")
    ]
    assert report["baseline"]["status"] == report["candidate"]["status"] == "ran"
    assert len(report["contracts"]) == FAKE_CONTRACTS
    assert all(r["baseline"] == r["candidate"] == "passed" for r in report["contracts"])
    jsonschema.validate(report, json.loads(SCHEMA.read_text()))
    md = (out / "report.md").read_text()
    assert md.startswith("# Optax upgrade gate: NOT-VERIFIED") and reason in md
    # every row: in report.html, and in report.md's plain form when the renderer itself failed
    page = (out / "report.html").read_text()
    if "html boom" in reason:  # the plain page says where the report is
        assert (
            "could not be rendered in full" in page
            and "NOT-VERIFIED" in page
            and f"## Unchanged ({FAKE_CONTRACTS})" in md
        )
    else:
        assert FAKE_ID in (md if "render boom" in reason else page)
    assert reason.split(": RuntimeError")[0] in proc.stderr


def test_a_crash_after_the_report_was_written_never_writes_over_it_nor_over_the_links(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_gate(tmp_path).returncode == 0
    linked, report_md = links(out), (out / "report.md").read_bytes()
    patch = _raise_in("run.evidence", "link boom") + "_module.complete = _boom\n"
    proc = run_gate(tmp_path, patch, ("--no-cache",))
    assert proc.returncode == 2 and "the gate itself failed: RuntimeError: link boom" in proc.stderr
    assert links(out) == linked and (out / "report.md").read_bytes() == report_md
    new = [run for run in (out / "runs").iterdir() if (run / evidence.MARKER).exists()]
    assert len(new) == 1
    report = json.loads((new[0] / "report.json").read_text())
    assert report["verdict"] == "pass" and len(report["contracts"]) == FAKE_CONTRACTS, (
        "the run's own report was replaced"
    )


def _signal_in(module: str, name: str, sig: str) -> str:
    """Patch code: ``module.name`` sends ``sig`` to the gate itself and waits (a late phase interrupted by Ctrl-C
    (SIGINT) or by a SIGTERM, e.g. from noxw passing Ctrl-C on)."""
    return f"""
import importlib, os, signal, time
def _stop(*args, **kwargs):
    os.kill(os.getpid(), signal.{sig})
    time.sleep(30)
setattr(importlib.import_module("optax_gate.gate.{module}"), {name!r}, _stop)
"""


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
@pytest.mark.parametrize(("module", "name"), [("speed.readings", "measure"), ("diffs.unseen", "beyond")])
def test_an_interruption_in_a_late_phase_is_an_interruption_not_a_phase_error(
    tmp_path: Path, module: Any, name: Any, sig: Any
) -> None:
    out = tmp_path / "out"
    assert run_gate(tmp_path).returncode == 0
    linked, report_md = links(out), (out / "report.md").read_bytes()
    proc = run_gate(tmp_path, _signal_in(module, name, sig))
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "gate error" not in proc.stderr, proc.stderr
    said = {"SIGINT": "SIGINT, Ctrl-C", "SIGTERM": "SIGTERM"}[sig]
    assert f"interrupted ({said}): not verified; its folder" in proc.stderr and evidence.MARKER in proc.stderr
    assert links(out) == linked and (out / "report.md").read_bytes() == report_md


@pytest.mark.parametrize("module", ["team_code.usage", "team_code.binding", "team_code.call_sites"])
def test_an_error_in_a_usage_module_names_the_usage_phase(module: Any) -> None:
    """An error raised from any module of the ``--usage`` matching (``usage``, ``binding``, ``call_sites``) is named
    by its phase, whichever of them holds the code. The fake environments of the test above have no surface diff, so
    ``binding.match`` never runs there."""
    import importlib
    import types

    from optax_gate.gate import late

    def boom() -> None:
        raise RuntimeError("boom")

    raising = types.FunctionType(boom.__code__, vars(importlib.import_module(f"optax_gate.gate.{module}")), "boom")
    phases = late.LatePhases()
    assert phases.run("API surface, warnings and dependency diff", raising, default="kept") == "kept"
    want = "call sites on findings (--usage)" if module.endswith("call_sites") else "usage matching (--usage)"
    assert phases.errors == [
        {"phase": f"API surface, warnings and dependency diff: {want}", "error": "RuntimeError: boom"}
    ]
