"""``judge/verdict.py``: a verdict only gets heavier (pass < fail < not-verified), except where the
findings are scoped to the team's code; reasons go where they are asked to."""

from typing import Any

import pytest

from optax_gate.gate.judge import verdict


def test_the_contracts_verdict() -> None:
    assert verdict.of_contracts([], 0) == ("pass", [])
    assert verdict.of_contracts([], 3) == ("fail", ["3 contract(s) broken"])
    assert verdict.of_contracts(["candidate not verified: zero contracts ran"], 3) == (
        "not-verified",
        ["candidate not verified: zero contracts ran"],
    )


@pytest.mark.parametrize(
    ("before", "asked", "after"),
    [
        ("pass", "fail", "fail"),
        ("fail", "fail", "fail"),
        ("not-verified", "fail", "not-verified"),
        ("pass", "not-verified", "not-verified"),
        ("fail", "not-verified", "not-verified"),
        ("fail", "pass", "fail"),
    ],
)
def test_a_verdict_only_gets_heavier(before: Any, asked: Any, after: Any) -> None:
    report = verdict.at_least({"verdict": before, "reasons": ["r0"]}, asked, "why")
    assert report["verdict"] == after
    assert report["reasons"] == ["r0", "why"]  # the reason is kept whatever the verdict was


def test_reasons_go_where_asked() -> None:
    report: Any = {"verdict": "fail", "reasons": ["a", "b"]}
    report = verdict.at_least(report, "not-verified", ["e1", "e2"], at=1)
    assert report["reasons"] == ["a", "e1", "e2", "b"]
    report = verdict.at_least(report, "fail", "first", at=0)
    assert report == {"verdict": "not-verified", "reasons": ["first", "a", "e1", "e2", "b"]}
    assert dict(verdict.at_least({"verdict": "pass"}, "fail")) == {"verdict": "fail"}  # no reason: none added
    with pytest.raises(ValueError, match="unknown verdict 'failed'"):
        verdict.at_least(report, "failed")


def test_the_scoped_verdict_may_fall_and_its_reasons_are_replaced() -> None:
    report: Any = {"verdict": "fail", "reasons": ["3 contract(s) broken"]}
    assert dict(verdict.rescoped(report, [], "pass")) == {"verdict": "pass", "reasons": []}
    report = {"verdict": "fail", "reasons": ["3 contract(s) broken"]}
    assert dict(verdict.rescoped(report, ["1 contract(s) broken where your code goes"])) == {
        "verdict": "fail",
        "reasons": ["1 contract(s) broken where your code goes"],
    }


def test_the_speed_verdict_fails_only_for_a_step_over_the_budget() -> None:
    """``of_speed`` reads the section alone: a ``changed`` reading is said in the report, never judged."""
    changed: Any = {"setup": "scan-20", "metric": "step_s", "change": "changed", "ratio": 1.4, "detail": ""}
    assert verdict.of_speed({"status": "measured", "reason": "", "summary": {}, "readings": [changed]}) == ("pass", [])
    assert verdict.of_speed({"status": "not-measured", "reason": "x", "summary": {}, "readings": []}) == ("pass", [])
    broken: Any = {**changed, "change": "broken", "ratio": 1.83}
    assert verdict.of_speed(
        {"status": "measured", "reason": "", "budget": 1.5, "summary": {}, "readings": [changed, broken]}
    ) == (
        "fail",
        ["1 training step(s) slower than the speed budget x1.5: scan-20 x1.83"],
    )


def test_the_sections_beyond_the_contracts_fail_for_a_broken_row() -> None:
    assert verdict.of_beyond({"surface": 0, "dependencies": 0, "warnings": 0}) == ("pass", [])
    assert verdict.of_beyond({"surface": 2, "dependencies": 1, "warnings": 0}) == (
        "fail",
        ["beyond the contracts: 2 API surface rows and 1 dependency row broken"],
    )


def test_the_team_runs_verdict_is_read_from_its_section() -> None:
    from optax_gate.gate.team_run import judging

    assert judging.of_team_run({"outcome": "not-verified", "reason": "it timed out"}) == (
        "not-verified",
        ["--run not verified: it timed out"],
    )
    assert judging.of_team_run({"outcome": "same", "reason": ""}) == ("pass", [])
    assert judging.of_team_run({"outcome": "broke", "reason": "ValueError at train.py:9"}) == (
        "fail",
        ["ValueError at train.py:9"],
    )


def test_the_verdict_functions_return_a_copy_and_leave_the_report_as_it_was() -> None:
    """``at_least`` and ``rescoped`` return a new report (``assemble`` builds each version from the last); the
    report and its reasons list they were given are not changed."""
    import copy

    report: Any = {"verdict": "pass", "reasons": ["a"], "notes": []}
    kept = copy.deepcopy(report)
    assert dict(verdict.at_least(report, "fail", "b", at=0)) == {"verdict": "fail", "reasons": ["b", "a"], "notes": []}
    assert dict(verdict.rescoped(report, ["c"], "not-verified")) == {
        "verdict": "not-verified",
        "reasons": ["c"],
        "notes": [],
    }
    assert report == kept
