"""A side's run record in memory (``RunRecord``) and in its file (``evidence/<label>.json``) say the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from optax_gate.gate.base.run_record import NotARunRecord, RunRecord
from optax_gate.gate.run import runner
from optax_gate.gate.sides import load, save_run

#: a record as a gate writes it, with a key this gate does not know (a newer gate's)
WRITTEN = {
    "label": "candidate",
    "status": "ran",
    "reason": "",
    "versions": {"optax": "0.2.8"},
    "exitstatus": 1,
    "duration_s": None,
    "warnings": [],
    "selection": {"changed": ["optax/_src/alias.py::lion"], "ran": [], "taken": [], "reached": {}},
    "a_newer_field": {"kept": True},
    "contracts": {"t.py::a": {"api": "optax.lion", "guide": "g", "kind": "golden", "outcome": "failed", "detail": "d"}},
}


def test_a_record_read_from_its_file_is_written_back_unchanged(tmp_path: Path) -> None:
    record = RunRecord.from_json(WRITTEN)
    assert record.ran and record.versions == {"optax": "0.2.8"} and record.fields.get("exitstatus") == 1
    save_run(record, tmp_path)
    assert json.loads((tmp_path / "candidate.json").read_text()) == WRITTEN
    assert load(tmp_path / "candidate.json") == record


def test_what_a_builder_did_not_know_stays_out_of_the_file() -> None:
    """A record without versions (a side derived from a baseline that did not run) or exit status (one that never
    ran pytest) has no such key, not a null one."""
    written = runner.not_verified("baseline", "import failed: X", requirements=["optax==0.2.6"]).to_json()
    assert written == {
        "label": "baseline",
        "status": "not-verified",
        "reason": "import failed: X",
        "versions": {},
        "requirements": ["optax==0.2.6"],
        "contracts": {},
    }
    assert "versions" not in RunRecord("candidate", "not-verified", "not run").to_json()


def test_with_fields_copies_and_keeps_the_record_it_came_from() -> None:
    record = RunRecord.from_json(WRITTEN)
    later = record.with_fields(from_cache={"key": "k", "recorded": "2026-12-07"}, exitstatus=0)
    assert later.fields.get("exitstatus") == 0 and later.fields.get("from_cache") == {
        "key": "k",
        "recorded": "2026-12-07",
    }
    assert record.fields.get("exitstatus") == 1 and "from_cache" not in record.fields


@pytest.mark.parametrize("text", ['{"label": "x", "status": "ran"}', "[]", '"a string"'])
def test_a_file_that_is_not_a_run_record_is_refused(tmp_path: Path, text: str) -> None:
    (tmp_path / "r.json").write_text(text)
    with pytest.raises(NotARunRecord, match="label, status and contracts"):
        load(tmp_path / "r.json")
