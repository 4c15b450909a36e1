"""Rendering of the gate report (``report_markdown``, ``report_json``)."""

import json
from typing import Any

from optax_gate.gate.base.run_record import RunRecord
from optax_gate.gate.judge import compare
from optax_gate.gate.report import json_file as report_json
from optax_gate.gate.report import markdown as report_markdown
from tests.meta.support.records import record


def sample() -> Any:
    base = record(golden_a="passed", golden_b="passed", snapshot_c="passed", golden_d="failed")
    cand = record(golden_a="passed", golden_b="failed", snapshot_c="failed", golden_d="passed")
    for i, cid in enumerate(
        ("snapshot_c", "golden_d")
    ):  # three APIs: one API's changes would be one finding (causes.merge)
        for rec in (base, cand):
            rec["contracts"][cid]["api"] = f"optax.api_{'cd'[i]}"
    base["versions"] = {"optax": "0.2.6", "jax": "0.11.2"}
    cand["versions"] = {"optax": "0.2.8", "jax": "0.11.2"}
    base["requirements"], cand["requirements"] = ["lock file requirements-lock.txt"], ["optax==0.2.8"]
    return compare.compare(RunRecord.from_json(base), RunRecord.from_json(cand))


def test_markdown_puts_the_verdict_first_then_broken_changed_fixed() -> None:
    text = report_markdown.render(sample())
    assert text.startswith("# Optax upgrade gate: FAIL\n")
    assert "`optax==0.2.8`" in text.splitlines()[2] and "1 broken, 1 changed, 1 fixed" in text
    positions = [text.index(h) for h in ("## Versions", "## Broken", "## Changed", "## Fixed", "## Unchanged")]
    assert positions == sorted(positions)
    assert "| optax | 0.2.6 | 0.2.8 **←** |" in text and "| jax | 0.11.2 | 0.11.2 |" in text


def test_findings_come_after_the_verdict_and_in_the_json() -> None:
    report = sample()
    assert [(f["change"], len(f["contracts"])) for f in report["findings"]] == [
        ("broken", 1),
        ("changed", 1),
        ("fixed", 1),
    ]
    text = report_markdown.render(report)
    assert text.index("- **1 contract(s) broken**") < text.index("## Findings (3)") < text.index("## Versions")
    assert '1. <a id="f1"></a>**broken** `optax.sgd`: failed detail (1 contract broken: [golden b](#f1-1))' in text
    assert '| <a id="f1-1"></a>[F1](#f1) `golden_b` |' in text
    assert json.loads(report_json.render(report))["findings"][0]["contracts"] == ["golden_b"]


def test_a_report_without_findings_still_renders_them() -> None:
    report = sample()
    del report["findings"]  # written before findings existed (compare_runs of old records is fine too)
    assert "## Findings (3)" in report_markdown.render(report)


def test_markdown_escapes_pipes_in_details() -> None:
    r = sample()
    r["contracts"][0]["detail"] = "a | b"
    assert "a \\| b" in report_markdown.render(r)


def test_json_has_the_schema_2_fields() -> None:
    data = json.loads(report_json.render(sample()))
    assert data["schema"] == 3 and data["verdict"] == "fail"
    assert set(data) >= {"baseline", "candidate", "contracts", "summary", "reasons"}
    row = data["contracts"][0]
    assert set(row) == {"id", "api", "guide", "kind", "defect", "baseline", "candidate", "change", "detail"}
    assert data["candidate"]["versions"]["optax"] == "0.2.8" and "contracts" not in data["candidate"]


def test_installed_pytest_plugins_that_were_not_loaded_are_named() -> None:
    report = sample()
    report["candidate"]["pytest_plugins"] = {"loaded": ["xdist.plugin"], "left_out": ["jaxtyping"]}
    report["baseline"]["pytest_plugins"] = {"loaded": ["xdist.plugin"], "left_out": []}
    lines = [line for line in report_markdown.render(report).splitlines() if "not loaded" in line]
    assert len(lines) == 1 and lines[0].startswith("- candidate:") and "not loaded: `jaxtyping`" in lines[0]


def test_a_page_that_judged_nothing_names_the_side_that_did_not_run_and_where_its_surface_rows_are() -> None:
    """A page that judged nothing names the side that did not run: a candidate that cannot be imported (optax
    0.2.7 with jax 0.12) beside a baseline that ran (from the cache) reads "the candidate's contracts did not
    run", not "both sides"; and its broken surface rows, which have no section on the page, are said to be in
    the .json."""
    from tests.meta.support.reports import REAL

    report: Any = {
        **REAL,
        "verdict": "not-verified",
        "findings": [],
        "baseline": {**REAL["baseline"], "status": "ran"},
        "candidate": {**REAL["candidate"], "status": "not-verified", "reason": "import failed: AttributeError"},
        "reasons": [
            "candidate not verified: import failed: AttributeError",
            "beyond the contracts: 20 API surface rows broken",
        ],
    }
    text = report_markdown.render(report)
    assert "nothing was compared (the candidate's contracts did not run)" in text and "both sides" not in text
    assert (
        "- **beyond the contracts: 20 API surface rows broken (read from the installed packages, without running "
        "them; the rows are in the .json beside this file)**"
    ) in text
    both = report_markdown.render({**report, "baseline": {**report["baseline"], "status": "not-verified"}})
    assert "nothing was compared (the contracts of both sides did not run)" in both
