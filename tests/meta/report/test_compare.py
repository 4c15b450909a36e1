"""The change and verdict logic of ``optax_gate.gate.judge.compare``."""

from typing import Any

import pytest

from optax_gate.gate.base.run_record import RunRecord
from optax_gate.gate.judge import compare
from tests.meta.support.records import record


@pytest.mark.parametrize(
    ("base", "cand", "kind", "change"),
    [
        ("passed", "passed", "golden", "unchanged"),
        ("failed", "failed", "golden", "unchanged"),
        ("passed", "failed", "golden", "broken"),
        ("passed", "error", "negative", "broken"),
        ("passed", "failed", "snapshot", "changed"),
        ("failed", "passed", "golden", "fixed"),
        ("error", "passed", "golden", "fixed"),
        ("xfailed", "passed", "golden", "fixed"),
        ("passed", "skipped", "golden", "changed"),
        ("skipped", "passed", "golden", "changed"),
        ("passed", "xfailed", "golden", "changed"),
        (None, "passed", "golden", "new"),
        ("passed", None, "golden", "gone"),
    ],
)
def test_classify(base: Any, cand: Any, kind: Any, change: Any) -> None:
    assert compare.classify(base, cand, kind) == change


@pytest.mark.parametrize(
    ("base", "cand", "change"),
    [
        ("passed", "failed", "fixed"),
        ("passed", "error", "fixed"),
        ("passed", "passed", "unchanged"),
        ("passed", "skipped", "changed"),
    ],
)
def test_classify_known_defect(base: Any, cand: Any, change: Any) -> None:
    assert compare.classify(base, cand, "negative", defect=True) == change


def test_all_unchanged_passes() -> None:
    r = compare.compare(RunRecord.from_json(record(golden_a="passed")), RunRecord.from_json(record(golden_a="passed")))
    assert r["verdict"] == "pass" and r["reasons"] == [] and r["summary"]["unchanged"] == 1


def test_a_broken_contract_fails_and_carries_the_candidate_detail() -> None:
    r = compare.compare(
        RunRecord.from_json(record(golden_a="passed", golden_b="passed")),
        RunRecord.from_json(record(golden_a="passed", golden_b="failed")),
    )
    assert r["verdict"] == "fail"
    assert r["contracts"][0] == {
        "id": "golden_b",
        "api": "optax.sgd",
        "guide": "g",
        "kind": "golden",
        "defect": "",
        "baseline": "passed",
        "candidate": "failed",
        "change": "broken",
        "detail": "failed detail",
    }


def test_snapshot_drift_is_changed_not_a_failure() -> None:
    r = compare.compare(
        RunRecord.from_json(record(snapshot_a="passed")), RunRecord.from_json(record(snapshot_a="failed"))
    )
    assert r["verdict"] == "pass" and r["summary"]["changed"] == 1


def test_a_known_defect_that_stops_reproducing_is_fixed_not_broken() -> None:
    base, cand = record(golden_a="passed"), record(golden_a="failed")
    for rec in (base, cand):
        rec["contracts"]["golden_a"]["defect"] = "clip-index-error: raises IndexError"
    r = compare.compare(RunRecord.from_json(base), RunRecord.from_json(cand))
    assert r["verdict"] == "pass" and r["contracts"][0]["change"] == "fixed"
    assert r["contracts"][0]["detail"] == (
        "known upstream defect no longer reproduces (clip-index-error: raises IndexError); now: failed detail"
    )


def test_fixed_keeps_the_baseline_failure_as_detail() -> None:
    r = compare.compare(RunRecord.from_json(record(golden_a="failed")), RunRecord.from_json(record(golden_a="passed")))
    assert r["verdict"] == "pass" and r["contracts"][0]["detail"] == "was: failed detail"
    assert r["notes"] == ["1 contract(s) already fail in the baseline"]


@pytest.mark.parametrize(
    ("baseline", "candidate", "reason"),
    [
        (
            record(golden_a="passed"),
            record("not-verified", "import failed: boom"),
            "candidate not verified: import failed: boom",
        ),
        (
            record("not-verified", "install failed: x"),
            record(golden_a="passed"),
            "baseline not verified: install failed: x",
        ),
        (record(golden_a="passed"), record(), "candidate not verified: zero contracts ran"),
        (
            record(golden_a="passed", golden_b="passed"),
            record(golden_a="passed"),
            "candidate not verified: 1 contract(s) of the baseline did not run",
        ),
    ],
    ids=["import", "baseline-install", "zero-contracts", "gone"],
)
def test_missing_evidence_is_not_verified(baseline: Any, candidate: Any, reason: Any) -> None:
    r = compare.compare(RunRecord.from_json(baseline), RunRecord.from_json(candidate))
    assert r["verdict"] == "not-verified" and reason in r["reasons"]
    assert compare.EXIT_STATUS[r["verdict"]] == 2


def test_not_verified_wins_over_broken() -> None:
    r = compare.compare(
        RunRecord.from_json(record(golden_a="passed", golden_b="passed")),
        RunRecord.from_json(record(golden_a="failed")),
    )
    assert r["verdict"] == "not-verified" and r["summary"]["broken"] == 1


def test_rows_are_ordered_by_severity() -> None:
    r = compare.compare(
        RunRecord.from_json(record(golden_a="passed", golden_b="passed", golden_c="failed")),
        RunRecord.from_json(record(golden_a="passed", golden_b="failed", golden_c="passed", golden_d="passed")),
    )
    assert [row["change"] for row in r["contracts"]] == ["broken", "fixed", "new", "unchanged"]


def _failing_both(base_detail: Any, cand_detail: Any, outcome: Any = "failed") -> Any:
    base, cand = record(golden_a=outcome), record(golden_a=outcome)
    base["contracts"]["golden_a"]["detail"], cand["contracts"]["golden_a"]["detail"] = base_detail, cand_detail
    return compare.compare(RunRecord.from_json(base), RunRecord.from_json(cand))["contracts"][0]


@pytest.mark.parametrize(
    "base_detail, cand_detail",
    [
        ("TypeError: bad dtype", "ValueError: bad dtype"),  # another exception type
        ("ValueError: shapes (2,) and (3,)", "ValueError: rank mismatch"),  # another message
        (
            "element (0) is 1.5, expected 1.0 (error 0.5)",
            "element (0) is 2.5, expected 1.0 (error 1.5)",
        ),  # other values
    ],
)
def test_a_contract_failing_in_both_with_another_failure_is_changed(base_detail: Any, cand_detail: Any) -> None:
    row = _failing_both(base_detail, cand_detail)
    assert row["change"] == "changed"
    assert row["baseline_detail"] == base_detail
    assert row["detail"] == f"fails differently: {cand_detail} (baseline: {base_detail})"


@pytest.mark.parametrize(
    "base_detail, cand_detail",
    [
        ("TypeError: bad dtype", "TypeError:   bad  dtype"),
        ("AssertionError: <object at 0x7f3a2b1c0d90> != 1", "AssertionError: <object at 0x7f99aa11bb22> != 1"),
        (
            "ImportError: /e/.nox/gate-envs/aa11/lib/python3.12/site-packages/optax/x.py: y",
            "ImportError: /e/.nox/gate-envs/bb22/lib/python3.12/site-packages/optax/x.py: y",
        ),
        ("Timeout after 12.5 s", "Timeout after 13.1 s"),
    ],
)
def test_the_same_failure_in_both_stays_unchanged(base_detail: Any, cand_detail: Any) -> None:
    row = _failing_both(base_detail, cand_detail, "error")
    assert row["change"] == "unchanged" and "baseline_detail" not in row


def test_a_finding_of_contracts_that_fail_differently_says_so_once() -> None:
    base, cand = record(golden_a="failed"), record(golden_a="failed")
    base["contracts"]["golden_a"]["detail"] = "ValueError: Shape mismatch: got (4, 5) and (5,)."
    cand["contracts"]["golden_a"]["detail"] = "ValueError: Shapes differ: got (4, 5) and (5,)."
    (finding,) = compare.compare(RunRecord.from_json(base), RunRecord.from_json(cand))["findings"]
    assert finding["change"] == "changed"
    assert (
        finding["cause"].startswith("fails differently: ValueError: Shapes differ")
        and "failed → failed" not in finding["cause"]
    )


def test_a_contract_of_an_api_absent_on_one_side_is_new_not_changed() -> None:
    """The microbatching contracts skip where optax has no ``optax.microbatching``, saying
    ``findings.ABSENT_API`` (the 0.2.6 -> 0.2.8 gate read them "changed: skipped -> passed"): such a
    skip counts as not run, so the contract reads ``new`` (``gone`` the other way); another skip
    still reads ``changed``, and a contract absent on both sides is no row."""
    from optax_gate.gate.judge import findings

    absent = f"Skipped: optax.microbatching {findings.ABSENT_API} (public after 0.2.6)"
    base, cand = (
        record(golden_a="skipped", golden_b="skipped", golden_c="skipped"),
        record(golden_a="passed", golden_b="passed", golden_c="skipped"),
    )
    base["contracts"]["golden_a"]["detail"] = absent
    for side in (base, cand):
        side["contracts"]["golden_c"]["detail"] = absent
    rows = {r["id"]: r for r in compare.compare(RunRecord.from_json(base), RunRecord.from_json(cand))["contracts"]}
    assert rows["golden_a"]["change"] == "new" and rows["golden_a"]["baseline"] is None
    assert rows["golden_b"]["change"] == "changed"
    assert "golden_c" not in rows
    rows = {r["id"]: r for r in compare.compare(RunRecord.from_json(cand), RunRecord.from_json(base))["contracts"]}
    assert rows["golden_a"]["change"] == "gone"
