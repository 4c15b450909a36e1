"""The pytest plugin and the report-log folding, on real pytest runs
(``pytester``, in a subprocess so the entry-point plugin loads as in the gate)."""

from pathlib import Path
from typing import Any

import pytest

from optax_gate.gate.run import outcomes
from tests.meta.support.run_logs import run_log

pytest_plugins = ["pytester"]

CONTRACTS = """
import pytest
from optax_gate.kit import guides

pytestmark = pytest.mark.contract(api="optax.sgd", guide=guides.SGD_STEP)

@pytest.mark.golden
def test_pass():
    assert 1 + 1 == 2

@pytest.mark.golden
def test_fail():
    assert 0.1 + 0.2 == 0.3, "float sum"

@pytest.fixture
def broken():
    raise RuntimeError("setup exploded")

@pytest.mark.negative
def test_setup_error(broken):
    pass

@pytest.fixture
def bad_teardown():
    yield
    raise RuntimeError("teardown exploded")

@pytest.mark.negative
def test_teardown_error(bad_teardown):
    pass

@pytest.mark.property
def test_skipped():
    pytest.skip("needs x64")

@pytest.mark.acceptance
@pytest.mark.xfail(reason="known upstream defect", strict=True)
def test_xfailed():
    assert False
"""


def test_outcomes_metadata_and_exit_status(pytester: pytest.Pytester) -> None:
    _, log = run_log(pytester, CONTRACTS)
    got = {cid.split("::")[1]: c.outcome for cid, c in log.contracts.items()}
    assert got == {
        "test_pass": "passed",
        "test_fail": "failed",
        "test_setup_error": "error",
        "test_teardown_error": "error",
        "test_skipped": "skipped",
        "test_xfailed": "xfailed",
    }
    fail = log.contracts["test_sample.py::test_fail"]
    assert (fail.api, fail.kind) == ("optax.sgd", "golden") and "float sum" in fail.detail
    assert "setup exploded" in log.contracts["test_sample.py::test_setup_error"].detail
    assert log.contracts["test_sample.py::test_skipped"].detail.endswith("needs x64")
    assert log.exitstatus == 1 and log.collection_errors == []


def test_tests_without_contract_marker_are_not_contracts(pytester: pytest.Pytester) -> None:
    _, log = run_log(pytester, "def test_plain():\n    assert True\n")
    assert log.contracts == {} and log.exitstatus == 0


def test_collection_error_is_recorded(pytester: pytest.Pytester) -> None:
    _, log = run_log(pytester, "import no_such_module_anywhere\n")
    assert log.contracts == {} and "no_such_module_anywhere" in log.collection_errors[0]


@pytest.mark.parametrize(
    ("marks", "message"),
    [("@pytest.mark.golden\n@pytest.mark.negative\n", "exactly one kind"), ("", "exactly one kind")],
    ids=["two-kinds", "no-kind"],
)
def test_contract_without_exactly_one_kind_is_refused(pytester: pytest.Pytester, marks: Any, message: Any) -> None:
    source = (
        'import pytest\nfrom optax_gate.kit import guides\n@pytest.mark.contract(api="a", '
        f"guide=guides.SGD_STEP)\n{marks}def test_x():\n    pass\n"
    )
    result, _log = run_log(pytester, source)
    assert result.ret != 0 and message in result.stderr.str() + result.stdout.str()


def test_unknown_guide_is_a_collection_error_under_xdist_too(pytester: pytest.Pytester) -> None:
    """With ``-n 2`` (the tests session's default) a mislabelled contract is a
    collection error naming the label, not a crashed worker."""
    pytester.makepyfile(
        test_sample='import pytest\n@pytest.mark.contract(api="a", guide="nope.txt")\n@pytest.mark.golden\ndef '
        "test_x():\n    pass\n"
    )
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider")
    out = result.stdout.str() + result.stderr.str()
    assert result.ret != 0 and "INTERNALERROR" not in out and "ERROR collecting" in out and "'nope.txt'" in out


def test_contract_with_unknown_guide_is_refused(pytester: pytest.Pytester) -> None:
    source = (
        'import pytest\n@pytest.mark.contract(api="a", guide="nope.txt")\n@pytest.mark.golden\ndef test_x():\n    '
        "pass\n"
    )
    result, _ = run_log(pytester, source)
    assert result.ret != 0 and "naming a guide from optax_gate.kit.guides" in result.stderr.str() + result.stdout.str()


@pytest.mark.parametrize("label", ["paper: ", "Kingma & Ba 2015", "paper:Kingma"])
def test_source_label_needs_a_known_prefix_and_text(label: Any) -> None:
    from optax_gate.kit import guides

    assert not guides.is_source(label)


def test_contract_with_a_free_source_label_is_collected_and_reported(pytester: pytest.Pytester) -> None:
    source = (
        'import pytest\n@pytest.mark.contract(api="optax.adam", guide="team: '
        'contracts/adam.md")\n@pytest.mark.golden\ndef test_x():\n    pass\n'
    )
    result, log = run_log(pytester, source)
    assert result.ret == 0
    (contract,) = log.contracts.values()
    assert (contract.api, contract.guide, contract.outcome) == ("optax.adam", "team: contracts/adam.md", "passed")


def test_truncated_log_has_no_exit_status(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text('{"$report_type": "SessionStart", "pytest_version": "9"}\n{"$report_type": "TestRe')
    log = outcomes.parse(path)
    assert log.exitstatus is None and log.contracts == {}


def test_snapshot_diff_names_each_moved_leaf_once() -> None:
    message = (
        "FILES DIFFER:\n/a.yml\n/a.obtained.yml\n--- \n+++ \n@@ -1,7 +1,7 @@\n call1:\n   leaves:\n"
        "-    .acc_grads['bias']: bfloat16[2]\n+    .acc_grads['bias']: float32[2]\n     .mini_step: int32[]=1\n"
        " call2:\n-    .acc_grads['bias']: bfloat16[2]\n+    .acc_grads['bias']: float32[2]\n-    .gone: int32[]=0\n"
    )
    assert outcomes.snapshot_diff(message) == (
        "snapshot drift: .acc_grads['bias']: bfloat16[2] -> float32[2]; .gone: int32[]=0 -> absent"
    )
    assert outcomes.snapshot_diff("AssertionError: 1 != 2") == ""


def test_a_configuration_marker_travels_to_the_outcome_and_only_words_are_taken(pytester: pytest.Pytester) -> None:
    """``configuration(weight_decay="a schedule")`` reaches the report log and the parsed outcome (the static
    attribution reads it); a marker with a non-word value is a collection error of its module."""
    source = """
import pytest
from optax_gate.kit import guides

pytestmark = pytest.mark.contract(api="optax.add_decayed_weights", guide=guides.SGD_STEP)

@pytest.mark.golden
@pytest.mark.configuration(weight_decay="a schedule")
def test_scheduled():
    pass

@pytest.mark.golden
def test_plain():
    pass
"""
    _, log = run_log(pytester, source)
    assert log.contracts["test_sample.py::test_scheduled"].configuration == '{"weight_decay": "a schedule"}'
    assert log.contracts["test_sample.py::test_plain"].configuration == ""
    _, bad = run_log(pytester, source.replace('weight_decay="a schedule"', "weight_decay=0.1"))
    assert bad.contracts == {} and "configuration() takes keywords whose values are words" in " ".join(
        bad.collection_errors
    )


def test_snapshot_diff_joins_a_value_yaml_wrapped_over_lines() -> None:
    # a corner's record is longer than YAML's 80 columns: pytest-regressions' diff shows its wrapped lines
    message = (
        "FILES DIFFER:\n/a.yml\n/a.obtained.yml\n--- \n+++ \n@@ -1,4 +1,4 @@\n"
        "-corner.inject=bfloat16: ok u f32 |u| 0.1 u0 0.2 s f32x15,i32x2\n-  h f32x5\n"
        "+corner.inject=bfloat16: ok u f32 |u| 0.1 u0 0.2 s bf16x5,f32x10,i32x2\n+  h bf16x5\n"
        " corner.inject=python,params=f16: non-finite u f16 |u| nan u0 nan s f16x15,i32x2 h\n"
        "-  f16x5\n+  f32x5\n"
        " corner.raises: 'ValueError: Cannot compare\n   dtype'\n"
    )
    assert outcomes.snapshot_diff(message) == (
        "snapshot drift: corner.inject=bfloat16: ok u f32 |u| 0.1 u0 0.2 s f32x15,i32x2 h f32x5 -> "
        "ok u f32 |u| 0.1 u0 0.2 s bf16x5,f32x10,i32x2 h bf16x5; "
        "corner.inject=python,params=f16: non-finite u f16 |u| nan u0 nan s f16x15,i32x2 h f16x5 -> "
        "non-finite u f16 |u| nan u0 nan s f16x15,i32x2 h f32x5"
    )
