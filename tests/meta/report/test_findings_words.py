"""Issue 17, findings that read like a person wrote them: one finding per cause
across APIs, snapshot drift rows that say what drifted, fixed rows that say
what the defect was and what happens now, no raw pytest text; and the
runner's words for an exception that escaped ``pytest.raises``."""

import functools
import re
from typing import Any

import pytest

from optax_gate.gate.base import details
from optax_gate.gate.judge import causes, findings
from optax_gate.gate.report import markdown as report_markdown
from optax_gate.gate.run import outcomes
from tests.meta.support.reports import REAL, REAL_723
from tests.meta.support.rows import contract_row
from tests.meta.support.run_logs import run_log

row = functools.partial(contract_row, change="broken", api="optax.sgd", kind="golden")

pytest_plugins = ["pytester"]


def test_the_723_contract_report_is_14_failure_patterns_across_apis() -> None:
    """One finding per failure pattern: the 29 differing rows of the
    2026-12-01 gate run are 14 findings, not 23 as per API (9 of them the
    losses' input checks, one per loss and error type). The state's dtype
    changes are told apart by state field: MultiSteps' and the recipe's
    ``acc_grads``, inject_hyperparams' ``hyperparams`` with or without its
    inner ``trace``."""
    found = findings.group(REAL_723["contracts"])
    assert [(f["change"], len(f["apis"]), len(f["contracts"])) for f in found] == [
        ("broken", 6, 9),
        ("broken", 2, 5),
        ("broken", 1, 3),
        ("broken", 1, 1),
        ("broken", 1, 1),
        ("broken", 1, 1),
        ("changed", 2, 2),
        ("changed", 1, 1),
        ("changed", 1, 1),
        ("changed", 1, 1),
        ("fixed", 1, 1),
        ("fixed", 1, 1),
        ("fixed", 1, 1),
        ("fixed", 1, 1),
    ]
    losses = found[0]
    assert losses["apis"] == [
        "optax.huber_loss",
        "optax.l2_loss",
        "optax.sigmoid_binary_cross_entropy",
        "optax.softmax_cross_entropy",
        "optax.softmax_cross_entropy_with_integer_labels",
        "optax.squared_error",
    ]
    assert losses["text"] == (
        "6 APIs (`optax.huber_loss`, `optax.l2_loss`, `optax.sigmoid_binary_cross_entropy`, "
        "`optax.softmax_cross_entropy`, "
        "`optax.softmax_cross_entropy_with_integer_labels`, `optax.squared_error`): input checks now raise "
        "TypeError/ValueError instead of AssertionError: Expected the input to have a dtype that is a subdtype of "
        "<class 'numpy.floating'>, got… (9 contracts broken: float labels and bad axis are refused, integer logits or "
        "predictions raise assertion error ×6, targets of another shape raise even when broadcastable ×2)"
    )
    # every (change, cause) is one finding: no two findings share a cause
    keys = [(f["change"], f["key"], f["cause"]) for f in found]
    assert len(set(keys)) == len(keys)


def test_the_rows_of_a_merged_finding_sit_together_test_by_test() -> None:
    """The line links each test to its first row (``#fN-M``): the rows of one
    test must be consecutive even when they come from several APIs."""
    rows: Any = [
        row("a.py::test_x", "boom", api="optax.a"),
        row("a.py::test_y", "boom", api="optax.a"),
        row("b.py::test_x", "boom", api="optax.b"),
    ]
    report: Any
    for report in ({**REAL_723, "contracts": rows, "findings": findings.group(rows)}, REAL_723):
        text = report_markdown.render(report)
        for f in causes.of_report(report["contracts"]):
            names = [findings.test_name(cid)[0] for cid in f["contracts"]]
            assert names == [name for name, k in f["tests"] for _ in range(k)]
            line = next(ln for ln in text.splitlines() if ln.startswith(f'{f["number"]}. <a id="f{f["number"]}"></a>'))
            for name, anchor in re.findall(r"\[([^\]]+)\]\(#(f\d+-\d+)\)", line):  # links only to rows on the page
                (target,) = [ln for ln in text.splitlines() if f'<a id="{anchor}">' in ln]
                assert f"::test_{name.replace(' ', '_')}" in target


def test_a_snapshot_drift_row_says_what_drifted_never_passed_failed() -> None:
    for report in (REAL, REAL_723):
        text = report_markdown.render(report)
        snapshot_rows = [ln for ln in text.splitlines() if "| snapshot |" in ln]
        assert snapshot_rows and not any("passed → failed" in ln for ln in snapshot_rows)
    text = report_markdown.render(REAL_723)
    assert (
        "| snapshot | drift: dtype | dtype drift: `.acc_grads['bias']` bfloat16[2] → float32[2]; "
        "`.acc_grads['kernel']` bfloat16[3,2] → float32[3,2] — costs: `.acc_grads` bfloat16 → float32: "
        "2 → 4 bytes per parameter |"
    ) in text
    assert (
        "| snapshot | drift: value | value drift: `[0].inner_state.count` 0 → 1: off by 1, budget 0 (a "
        "counter, recorded exactly) |"
    ) in text
    shape = row(
        "t::s",
        "snapshot drift: .mu['w']: float32[3] -> float32[4]; .extra: absent -> int32[]=0",
        change="changed",
        kind="snapshot",
    )
    assert details.outcome_words(shape) == "drift: shape, added"
    assert (
        details.plain_detail(shape)
        == "shape, added drift: `.mu['w']` float32[3] → float32[4]; `.extra` added (int32[]=0)"
    )


def test_a_fixed_row_says_what_the_defect_was_and_what_happens_now_without_pytest_text() -> None:
    text = report_markdown.render(REAL_723)
    fixed = [ln for ln in text.splitlines() if "| defect no longer reproduces |" in ln]
    assert len(fixed) == 4
    for line in fixed:
        assert "; now: " in line
        assert not re.search(r"Use -v|\+ where|\+ and|assert ", line), line
    assert (
        "| adam-state-dtype-follows-gradients: adam's mu and nu take the gradients' dtype after the first step "
        "(bfloat16 params, float32 gradients: both become float32), so the optimizer state cannot be a fixed "
        "jax.lax.scan carry; now: gives bfloat16 at index 1 where the defect gave float32 |"
    ) in text
    assert "; now: gives 1 where the defect gave 0 |" in text
    assert "; now: gives float32 where the defect gave bfloat16 |" in text
    assert (
        "; now: raises ValueError: pytree structure error: different types at key path tree_map tree['bias'] At" in text
    )


def test_pytest_text_in_words() -> None:
    assert details.pytest_words("Failed: DID NOT RAISE <class 'TypeError'>") == "did not raise TypeError"
    assert (
        details.pytest_words(
            "Failed: DID NOT WARN. No warnings of type (<class 'DeprecationWarning'>,) were emitted. Emitted "
            "warnings: []."
        )
        == "did not warn (DeprecationWarning)"
    )
    assert details.pytest_words("AssertionError: assert 3 == 4 + where 3 = len([1, 2, 3])") == "got 3, expected 4"
    assert (
        details.pytest_words("AssertionError: step 1: x is 3, wanted 4") == "AssertionError: step 1: x is 3, wanted 4"
    )
    assert (
        details.pytest_words("AssertionError: step 2: count assert 3 == 4 + where 3 = f()")
        == "step 2: count: got 3, expected 4"
    )
    broken = findings.group(
        [
            row(
                "t.py::test_w",
                "Failed: DID NOT WARN. No warnings of type (<class 'FutureWarning'>,) were emitted. Emitted "
                "warnings: [].",
                api="optax.huber_loss",
            )
        ]
    )
    assert broken[0]["cause"] == "did not warn (FutureWarning)"  # no "passed → failed": a broken row implies it
    skipped = findings.group([row("t.py::test_s", "needs x64", change="changed", candidate="skipped")])
    assert skipped[0]["cause"] == "passed → skipped: needs x64"  # outcomes a change does not imply stay


def test_bare_assert_texts_merge_across_apis_only_for_the_same_test() -> None:
    rows: Any = [
        row("a.py::test_count", "assert 1 == 0", api="optax.a"),
        row("b.py::test_count", "assert 2 == 0", api="optax.b"),
        row("c.py::test_other", "assert 1 == 0", api="optax.c"),
    ]
    assert [f["apis"] for f in findings.group(rows)] == [["optax.a", "optax.b"], ["optax.c"]]


def test_many_apis_are_named_up_to_ten() -> None:
    rows: Any = [row(f"t.py::test_x[{i}]", "boom", api=f"optax.f{i:02d}") for i in range(13)]
    (f,) = findings.group(rows)
    assert f["api"] == "13 APIs" and len(f["apis"]) == 13
    assert (
        f["text"].startswith("13 APIs (`optax.f00`, ")
        and ", `optax.f09`, and 3 more): boom (13 contracts broken" in f["text"]
    )


RAISES = """
import pytest
from optax_gate.kit import guides

pytestmark = pytest.mark.contract(api="optax.sgd", guide=guides.SGD_STEP)

def check(x):
    if x < 0:
        raise TypeError(f"negative: {x}")
    return x

@pytest.mark.negative
def test_wrong_type():
    with pytest.raises(AssertionError, match="neg"):
        check(-1)

@pytest.mark.negative
def test_wrong_type_of_a_tuple():
    with pytest.raises((ValueError, KeyError)):
        check(-2)

@pytest.mark.negative
def test_right_type_wrong_message():
    with pytest.raises(TypeError, match="positive"):
        check(-3)

@pytest.mark.negative
def test_outside_the_block():
    check(-4)
    with pytest.raises(AssertionError):
        check(-5)
"""


def test_an_exception_escaping_pytest_raises_names_what_was_expected(pytester: pytest.Pytester) -> None:
    _, log = run_log(pytester, RAISES)
    got = {cid.split("::")[1]: c.detail for cid, c in log.contracts.items()}
    assert got["test_wrong_type"] == "raised TypeError instead of AssertionError: negative: -1"
    assert got["test_wrong_type_of_a_tuple"] == "raised TypeError instead of ValueError, KeyError: negative: -2"
    assert got["test_right_type_wrong_message"].startswith("AssertionError: Regex pattern did not match")
    assert got["test_outside_the_block"] == "TypeError: negative: -4"
    assert outcomes.expected_raise({}) == ""


# pytest-regressions' ndarrays_regression message for two arrays and a scalar (the generated surface
# contracts' value snapshots): the shape of the text as pytest-regressions 2.x writes it.
NDARRAYS_MESSAGE = """AssertionError: Values are not sufficiently close.
To update values, use --force-regen option.

result:
  Shape: (2,)
  Number of differences: 2 / 2 (100.0%)
  Statistics are computed for differing elements only.
  Stats for abs(obtained - expected):
    Max:     0.07051432132720947
    Mean:    0.0682058036327362
  Stats for abs(obtained - expected) / abs(expected):
    Max:     0.22222210466861725
    Mean:    0.20096755027770996
  Individual errors:
          Index              Obtained              Expected            Difference
              0            0.32185757             0.3923719           -0.07051432

loss:
  Shape: ()
  Number of differences: 1 / 1 (100.0%)
  Individual errors:
          Index              Obtained              Expected            Difference
             ()            0.10832782            0.18075344           -0.07242562
"""


def test_a_values_snapshot_drift_says_what_moved_not_passed_failed() -> None:
    detail = outcomes.values_drift(NDARRAYS_MESSAGE)
    assert detail == (
        "snapshot drift of values: `result` 2 of 2 elements, largest 0.071 (relative 0.22); `loss` 1 of 1 "
        "elements: 0.1083 where 0.1808 was recorded"
    )
    rows: Any = [
        row(
            "tests/contracts/test_surface_sweep.py::test_values[optax.losses.dice_loss]",
            detail,
            change="changed",
            api="optax.losses.dice_loss",
            kind="snapshot",
        )
    ]
    (found,) = findings.group(rows)
    assert "passed → failed" not in found["text"] and "force-regen" not in found["text"]
    assert found["text"].startswith("`optax.losses.dice_loss`: snapshot drift of values: `result` 2 of 2 elements")
    assert details.outcome_words(rows[0]) == "drift: value beyond budget"
    assert outcomes.values_drift("AssertionError: assert 1 == 2") == ""


def test_pytests_string_diff_is_not_part_of_the_expected_value() -> None:
    assert (
        details.pytest_words("AssertionError: assert 'TypeError' == 'ok' - ok + TypeError")
        == "now raises TypeError (ok in the baseline)"
    )


def test_a_values_drift_of_a_matrix_names_its_first_element_whatever_its_index() -> None:
    """A 2-d array's index is a tuple with a space (``(0, 1)``): the drift still names its first element."""
    message = (
        "AssertionError: Values are not sufficiently close.\n\nloss:\n  Shape: (2, 2)\n"
        "  Number of differences: 1 / 4 (25.0%)\n  Individual errors:\n"
        "          Index              Obtained              Expected            Difference\n"
        "         (0, 1)                   0.5                  0.25                  0.25\n"
    )
    assert (
        outcomes.values_drift(message)
        == "snapshot drift of values: `loss` 1 of 4 elements: 0.5 where 0.25 was recorded"
    )
