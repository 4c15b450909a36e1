"""Findings (``optax_gate.gate.judge.findings``): the differing contracts of a gate
report grouped by API and cause, and details in plain words.

The main fixture, ``data/report-optax-0.2.8.json``, holds the 13 differing rows
of the real gate report for optax 0.2.8 (jax/jaxlib 0.12.0.1) against the
baseline, as the closing note of issues 2-5 quoted them;
``data/report-optax-0.2.8-2026-12-01.json`` the 29 differing rows of the same
upgrade judged by the 723-contract suite on 2026-12-01.
"""

import functools
import json
import re
from typing import Any

import numpy as np
import pytest

from optax_gate.gate.base import details, drift, plain_text
from optax_gate.gate.judge import causes, findings
from optax_gate.gate.report import json_file as report_json
from optax_gate.gate.report import markdown as report_markdown
from optax_gate.kit import tolerances
from tests.meta.support.reports import REAL
from tests.meta.support.rows import contract_row

row = functools.partial(contract_row, change="broken", api="optax.sgd", kind="golden")


def test_the_real_0_2_8_report_is_eight_failure_patterns() -> None:
    """One finding per failure pattern (``group``, before ``merge`` joins them
    by upstream cause). The optimizer state going bfloat16 → float32 is one
    pattern per state field: MultiSteps' ``acc_grads`` (its accumulator's new
    float32 default, optax 0.2.8 ``MultiSteps(accumulator_dtype=...)``) is
    another change than inject_hyperparams' ``hyperparams``; one finding
    across both APIs would read as one cause."""
    found = findings.group(REAL["contracts"])
    assert [(f["change"], f["api"], f["apis"], len(f["contracts"])) for f in found] == [
        ("broken", "optax.MultiSteps", ["optax.MultiSteps"], 4),
        ("broken", "optax.inject_hyperparams", ["optax.inject_hyperparams"], 3),
        ("changed", "optax.MultiSteps", ["optax.MultiSteps"], 1),
        ("changed", "optax.add_decayed_weights", ["optax.add_decayed_weights"], 1),
        ("changed", "optax.inject_hyperparams", ["optax.inject_hyperparams"], 1),
        ("changed", "optax.inject_hyperparams", ["optax.inject_hyperparams"], 1),
        ("fixed", "optax.add_decayed_weights", ["optax.add_decayed_weights"], 1),
        ("fixed", "optax.inject_hyperparams", ["optax.inject_hyperparams"], 1),
    ]
    assert [f["text"] for f in found] == [
        "`optax.MultiSteps`: float64 results have float32-sized errors: off by up to 4.3e-9 relative = 2e7 ULP of "
        "float64, allowed 8 to 30 ULP (4 contracts broken: result shapes dtypes and finiteness, "
        "trajectory over two full cycles ×3)",
        "`optax.inject_hyperparams`: updates come out float32 instead of bfloat16/float16 (3 contracts broken: "
        "trajectory of injected momentum sgd ×2, updates keep each leafs dtype with mixed precision params)",
        "`optax.MultiSteps`: optimizer state bfloat16 → float32: `.acc_grads` 2 → 4 bytes per parameter (1 "
        "contract changed: state snapshot)",
        "`optax.add_decayed_weights`: optimizer state holds other values: `[0].inner_state.count` 0 → 1 (1 "
        "contract changed: state snapshot)",
        "`optax.inject_hyperparams`: optimizer state bfloat16 → float32: `.hyperparams` (scalars, no cost per "
        "parameter) (1 contract changed: state snapshot)",
        "`optax.inject_hyperparams`: optimizer state bfloat16 → float32: `.inner_state[0].trace` 2 → 4 bytes per "
        "parameter; `.hyperparams` (scalars, no cost per parameter) (1 contract changed: state snapshot)",
        "`optax.add_decayed_weights`: known upstream defect `decay-schedule-count-stuck` no longer reproduces "
        "(add_decayed_weights with a scheduled weight decay never advances its step count, so the schedule stays "
        "at its step-0 value forever); now gives 1 where the defect gave 0 (1 contract fixed: scheduled weight decay "
        "stays at its first value)",
        "`optax.inject_hyperparams`: known upstream defect `inject-hyperparams-first-leaf-dtype` no longer "
        "reproduces (inject_hyperparams casts hyperparameters to the dtype of the params' first leaf, so with a "
        "bfloat16 first leaf every float32 leaf is updated with a bfloat16-rounded learning rate); now the pinned "
        "behaviour no longer holds (1 contract fixed: hyperparameters take the first leafs dtype)",
    ]
    assert sorted(c for f in found for c in f["contracts"]) == sorted(r["id"] for r in REAL["contracts"])


def test_the_real_0_2_8_report_starts_with_one_line_per_finding() -> None:
    text = report_markdown.render(REAL)
    head = text[: text.index("## Versions")].splitlines()
    assert head[0] == "# Optax upgrade gate: FAIL"
    body = [line for line in head[1:] if line]
    assert body[0].startswith("Candidate `optax==0.2.8") and "(of 265 contracts)" in body[0]
    assert body[1:3] == ["- **7 contract(s) broken**", "## Findings (3)"]  # 8 failure patterns, 3 upstream causes
    lines = body[3:]
    assert len(lines) == 3 and [int(line.split(".", 1)[0]) for line in lines] == list(range(1, 4))
    assert lines[0].startswith(
        '1. <a id="f1"></a>**broken** `optax.MultiSteps`: float64 results have float32-sized errors'
    )
    assert lines[0].endswith(
        "(5 contracts: 4 broken, 1 changed: [result shapes dtypes and finiteness](#f1-1), [trajectory over "
        "two full cycles](#f1-2) ×3, [state snapshot](#f1-5))"
    )


def test_every_finding_link_lands_on_a_row_of_that_finding() -> None:
    text = report_markdown.render(REAL)
    targets = set(re.findall(r"\]\(#(f\d+(?:-\d+)?)\)", text))
    anchors = set(re.findall(r'<a id="(f\d+(?:-\d+)?)"></a>', text))
    merged = causes.of_report(REAL["contracts"])
    assert targets <= anchors and len(anchors) == len(merged) + sum(len(report_markdown.sample(f)) for f in merged)
    for f in merged:
        for m, cid in enumerate(f["contracts"], 1):
            if cid not in report_markdown.sample(f):
                continue
            (line,) = [ln for ln in text.splitlines() if f'<a id="f{f["number"]}-{m}">' in ln]
            assert f"`{cid}`" in line and f"[F{f['number']}](#f{f['number']})" in line


def test_findings_are_in_report_json() -> None:
    data = json.loads(report_json.render({**REAL, "findings": findings.group(REAL["contracts"])}))
    assert [f["number"] for f in data["findings"]] == list(range(1, 9))
    assert set(data["findings"][0]) == {"number", "change", "api", "apis", "cause", "key", "contracts", "tests", "text"}
    assert data["findings"][0]["key"] == "numeric" and data["findings"][0]["tests"][1] == [
        "trajectory over two full cycles",
        3,
    ]


def test_same_pattern_groups_across_parameters_numbers_and_steps() -> None:
    rows: Any = [
        row("t.py::test_a[float16]", "AssertionError: step 1: x is 3, wanted 4"),
        row("t.py::test_a[bfloat16]", "AssertionError: step 7: x is 12.5, wanted 1e-3"),
        row("t.py::test_b", "AssertionError: step 12: x is np.float32(0.5), wanted 1"),
        row("t.py::test_e", "AssertionError: leaf 'kernel': x is 0, wanted 1"),  # another leaf: another pattern
        row("t.py::test_c", "ValueError: something else"),
        row("t.py::test_d", "AssertionError: step 1: x is 3, wanted 4", api="optax.adam"),
    ]
    found = findings.group(rows)
    assert [(f["apis"], [c.split("::")[1] for c in f["contracts"]]) for f in found] == [
        (
            ["optax.adam", "optax.sgd"],
            ["test_a[float16]", "test_a[bfloat16]", "test_b", "test_d"],
        ),  # one cause, two APIs
        (["optax.sgd"], ["test_e"]),
        (["optax.sgd"], ["test_c"]),
    ]
    assert found[0]["text"] == (
        "2 APIs (`optax.adam`, `optax.sgd`): AssertionError: step 1: x is 3, wanted 4 (4 contracts broken: a ×2, b, d)"
    )


def test_a_dtype_finding_names_the_subject_of_each_failure_in_its_own_words() -> None:
    """The subject is the failure's words before their first preposition (``update`` of ``update of the
    bfloat16 leaf``, ``learning rate`` of ``learning rate after init``), a dtype name whole."""
    rows: Any = [
        row(
            "t.py::test_a[x64-off]",
            "AssertionError: update of the bfloat16 leaf: expected bfloat16, got the array: float32",
        ),
        row(
            "t.py::test_b[x64-on]", "AssertionError: learning rate after init: expected float64, got the array: float32"
        ),
    ]
    (found,) = findings.group(rows)
    assert found["text"].startswith(
        "`optax.sgd`: update and learning rate come out float32 instead of bfloat16/float64 ("
    )


def test_numeric_findings_split_by_dtype_and_order_by_change() -> None:
    f64 = (
        "v: element (0,) is 1.0000001, expected 1.0 (error 1e-07, bound 8.9e-16 = 4 ULP of float64; worst error "
        "450359962.74 ULP)"
    )
    bf16 = "v: element (1,) is 1.5, expected 1.0 (error 0.5, bound 0.031 = 4 ULP of bfloat16; worst error 64.00 ULP)"
    rows: Any = [
        row("t.py::test_f[x]", "was: boom", change="fixed", baseline="failed", candidate="passed"),
        row("t.py::test_a[float64]", f64),
        row("t.py::test_a[bfloat16]", bf16),
        row("t.py::test_s", "snapshot drift: .count: int32[]=0 -> int32[]=1", change="changed", kind="snapshot"),
    ]
    found = findings.group(rows)
    assert [f["change"] for f in found] == ["broken", "broken", "changed", "fixed"]
    assert found[1]["cause"] == "bfloat16 results are off by up to 0.5 relative = 64 ULP of bfloat16, allowed 4 ULP"
    assert (
        found[0]["cause"]
        == "float64 results have float32-sized errors: off by up to 1e-7 relative = 4.5e8 ULP of float64, allowed 4 ULP"
    )
    assert found[3]["cause"] == "passes now; failed in the baseline: boom"


def test_a_candidate_that_did_not_run_is_one_gone_finding() -> None:
    rows: Any = [
        row(
            f"t.py::test_{i}",
            "ran in the baseline, did not run in the candidate",
            change="gone",
            api=f"optax.{api}",
            candidate=None,
        )
        for i, api in enumerate(["sgd", "adam", "sgd"])
    ]
    found = findings.group(rows, candidate_ran=False)
    assert [(f["api"], f["cause"], len(f["contracts"])) for f in found] == [
        ("every API", "did not run in the candidate", 3)
    ]
    (gone,) = findings.group(rows, candidate_ran=True)  # it ran: the gone contracts are one finding naming their APIs
    assert gone["api"] == "2 APIs" and gone["apis"] == ["optax.adam", "optax.sgd"]


def test_plain_detail_of_an_ulp_figure() -> None:
    detail = REAL["contracts"][3]["detail"]
    assert details.plain_detail(REAL["contracts"][3]) == (
        "AssertionError: emitted update: element (0,) is -0.11549644755374272, expected -0.1154964479961693: "
        "off by 4.4e-10 (relative 3.8e-9; worst 1.7e7 ULP of float64), allowed 8 ULP of float64 = 2.1e-16"
    )
    assert "(error 4.42e-10, bound 2.05e-16 = 8 ULP of float64" in detail  # the report.json keeps the message


def test_plain_detail_of_a_state_dtype_change_says_what_it_costs() -> None:
    ms = next(r for r in REAL["contracts"] if r["id"].endswith("test_multi_steps.py::test_state_snapshot[bfloat16]"))
    assert details.plain_detail(ms) == (
        "dtype drift: `.acc_grads['bias']` bfloat16[2] → float32[2]; `.acc_grads['kernel']` bfloat16[3,2] → "
        "float32[3,2]"
        " — costs: `.acc_grads` bfloat16 → float32: 2 → 4 bytes per parameter"
    )
    value_only = row("t::s", "snapshot drift: [0].inner_state.count: int32[]=0 -> int32[]=1", change="changed")
    assert details.plain_detail(value_only) == (
        "value drift: `[0].inner_state.count` 0 → 1: off by 1, budget 0 (a counter, recorded exactly)"
    )
    f64 = drift.parse_drift("snapshot drift: .mu['w']: float32[3] -> float64[3]; .nu['w']: float32[3] -> float64[3]")
    assert drift.state_cost(f64) == [
        "`.mu` float32 → float64: 4 → 8 bytes per parameter",
        "`.nu` float32 → float64: 4 → 8 bytes per parameter",
    ]


def test_a_fixed_defect_says_it_no_longer_reproduces_instead_of_passed_failed() -> None:
    fixed = REAL["contracts"][-2]
    assert details.outcome_words(fixed) == "defect no longer reproduces"
    assert details.plain_detail(fixed).startswith("decay-schedule-count-stuck: add_decayed_weights with a scheduled")
    assert details.outcome_words(REAL["contracts"][0]) == "passed → failed"
    text = report_markdown.render(REAL)
    assert "| negative | defect no longer reproduces | decay-schedule-count-stuck:" in text
    assert "| negative | passed → failed |" not in text


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_the_parser_reads_the_tolerance_policy_message(dtype: Any) -> None:
    """The gate parses ``kit.tolerances.assert_close``'s message; both sides
    must keep agreeing (and the gate's epsilons must be the policy's)."""
    assert drift.EPS == tolerances.EPS
    expected = np.array([0.5, -2.0, 0.25])
    actual = expected * (1 + 64 * tolerances.EPS[dtype])
    with pytest.raises(AssertionError) as info:
        tolerances.assert_close(
            actual, expected, dtype=dtype, ulps=tolerances.ELEMENTWISE, what="params at step 2, leaf 0"
        )
    ulp = drift.parse_ulp(f"AssertionError: {info.value}")
    assert ulp is not None and ulp.dtype == dtype and ulp.ulps == 4 and ulp.index == "1,"
    assert ulp.expected == -2.0 and ulp.relative == pytest.approx(64 * tolerances.EPS[dtype], rel=0.02)
    assert ulp.worst_ulps == pytest.approx(64, rel=0.02)


def test_the_line_of_a_candidate_that_did_not_run_links_once_not_per_test() -> None:
    rows: Any = [
        row(
            f"t.py::test_{i}",
            "ran in the baseline, did not run in the candidate",
            change="gone",
            api="optax.sgd",
            candidate=None,
        )
        for i in range(40)
    ]
    line = report_markdown.finding_line(findings.group(rows, candidate_ran=False)[0])
    assert line == (
        '1. <a id="f1"></a>**gone** `every API`: did not run in the candidate ([all 40 contracts, listed below](#f1-1))'
    )
    assert line.count("](#") == 1


def test_a_long_failure_message_is_cut_at_a_word_end() -> None:
    message = (
        "TypeError: Expected the input to have a dtype that is a subdtype of <class 'numpy.floating'>, "
        "got int32 instead. " + "More words follow here to pass the limit. " * 3
    )
    cut = plain_text.shorten(message)
    assert len(cut) <= 140 and cut.endswith("…")
    assert message.startswith(cut[:-1]) and message[len(cut) - 1] == " "  # the next character was a space
    assert "got int32 instead." in cut
    assert plain_text.shorten("short text") == "short text"


def test_a_public_name_no_surface_table_knows_reads_new_not_contracted() -> None:
    why = (
        "required parameter `fun` has no value by name in the generator (optax_gate.kit.surface.generated.VALUES, "
        "surface_build.by_name): a function, model or array layout of the caller's own"
    )
    rows: Any = [
        row(
            "tests/contracts/test_surface_sweep.py::test_known[optax.microbatching.micro_grad]",
            "Skipped: new, not contracted: optax.microbatching.micro_grad (other) is public in optax 0.2.8; "
            f"no contract could be generated: {why}",
            change="new",
            api="optax.microbatching.micro_grad",
            kind="acceptance",
            baseline=None,
            candidate="skipped",
        ),
        row("t.py::test_x", "", change="new", api="optax.other", baseline=None, candidate="passed"),
    ]
    found = findings.group(rows)
    assert {f["api"]: f["text"].split(": ", 1)[1].rsplit(" (1 contract", 1)[0] for f in found} == {
        "optax.microbatching.micro_grad": "new, not contracted: public in the candidate, and no "
        "contract could be generated "
        "from its signature: required parameter `fun` has no value by name in the generator",
        "optax.other": "runs only in the candidate",
    }


def test_a_drift_of_the_generated_nonfinite_snapshot_is_not_called_optimizer_state() -> None:
    rows: Any = [
        row(
            "tests/contracts/test_surface_transformations.py::test_nonfinite_and_state[optax.adan]",
            "snapshot drift: nan_param: '[''r3'']' -> none",
            change="changed",
            api="optax.adan",
            kind="snapshot",
        )
    ]
    (found,) = findings.group(rows)
    assert found["text"].startswith(
        "`optax.adan`: fewer non-finite outputs: `nan_param`: update leaves r3 non-finite in the baseline, none now"
    )
    assert details.outcome_words(rows[0]) == "drift: value" and "None → None" not in details.plain_detail(rows[0])


@pytest.mark.parametrize(
    "cid, detail, api, text",
    [
        (
            "tests/contracts/test_surface_loss_edges.py::test_loss_edge[optax.l2_loss-empty_batch]",
            "snapshot drift: loss_value: ok float32[0, 3] -> non-finite float32[] X",
            "optax.l2_loss",
            "`optax.l2_loss`: the loss differs at an edge input: `loss_value` ok float32[0, 3] → non-finite "
            "float32[] X",
        ),
        (
            "tests/contracts/test_surface_dtypes.py::test_init_update_dtype[optax.sm3-bfloat16]",
            "snapshot drift: init_update_bfloat16: IndexError -> ok",
            "optax.sm3",
            "`optax.sm3`: the update of a bfloat16 PyTree differs: IndexError → ok",
        ),
        (
            "tests/contracts/test_surface_transformations.py::test_edge_hyperparams[optax.adamw]",
            "snapshot drift: weight_decay=0/nan_inf_params/updates: r1,r3 -> none; "
            "weight_decay=0/nan_inf_params/state/[1].sum_sq_norm_grads: all -> absent",
            "optax.adamw",
            "`optax.adamw`: with `weight_decay=0` and nan inf params, fewer non-finite outputs: `updates` "
            "r1,r3 in the baseline, none now (and 1 more outputs)",
        ),
        (
            "tests/contracts/test_surface_x64.py::test_x64_dtype[optax.linear_schedule]",
            "snapshot drift: x64_int32_steps: float32[10] finite -> float64[10] finite",
            "optax.linear_schedule",
            "`optax.linear_schedule`: under x64 the output differs: `x64_int32_steps` float32[10] finite → "
            "float64[10] finite",
        ),
        (
            "tests/contracts/test_surface_corners_wrapped.py::test_wrapped_corners[optax.contrib.sophia]",
            "snapshot drift: corner.empty_pytree: raises TypeError -> ok",
            "optax.contrib.sophia",
            "`optax.contrib.sophia`: at corner `empty_pytree` the outcome differs: raises TypeError in the "
            "baseline, ok now",
        ),
        (
            "tests/contracts/test_surface_corners_wrapped.py::test_wrapped_corners[optax.adam]",
            "snapshot drift: corner.wrapped=optax.MultiSteps: same -> other values",
            "optax.adam",
            "`optax.adam`: at corner `wrapped=optax.MultiSteps` the outcome differs: same in the baseline, "
            "other values now",
        ),
        (
            "tests/contracts/test_surface_corners_ranges.py::test_hyperparameter_range[optax.scale_by_distance_over_gradients-eps]",
            "snapshot drift: eps=-1e-08: non-finite u f32 |u| nan u0 nan s f32x6 -> ok u f32 |u| 3.54e-06 u0 "
            "-1.74e-06 s f32x6",
            "optax.scale_by_distance_over_gradients",
            "`optax.scale_by_distance_over_gradients`: at corner `eps=-1e-08` the outcome differs: non-finite",
        ),
        (
            "tests/contracts/test_surface_corners_ranges.py::test_hyperparameter_range[optax.contrib.reduce_on_plateau-factor]",
            "snapshot drift: factor=0/error: 'Factor must be in the range (0, 1), got factor = 0' -> 'Factor "
            "must lie in (0, 1), got 0'",
            "optax.contrib.reduce_on_plateau",
            "`optax.contrib.reduce_on_plateau`: at corner `factor=0/error` the outcome differs",
        ),
        (
            "tests/contracts/test_surface_corners_derivatives.py::test_loss_derivatives[optax.sigmoid_focal_loss]",
            "snapshot drift: corner.grad_wrt=labels: ok -> non-finite gradient",
            "optax.sigmoid_focal_loss",
            "`optax.sigmoid_focal_loss`: at corner `grad_wrt=labels` the outcome differs: ok in the baseline, "
            "non-finite gradient now",
        ),
        (
            "tests/contracts/test_surface_transformations.py::test_edge_hyperparams[optax.adabelief]",
            "snapshot drift: weight_decay=0/nan_inf_grads/state/[0].mu: absent -> r0,r5; "
            "weight_decay=0/nan_inf_grads/updates: absent -> r0,r5",
            "optax.adabelief",
            "`optax.adabelief`: with `weight_decay=0`, recorded in the candidate only: the baseline's factory has no "
            "`weight_decay` (a parameter added, see the API surface)",
        ),
    ],
    ids=[
        "loss-edge",
        "dtype-variant",
        "edge-hyperparameter",
        "x64",
        "wrapped-empty-pytree",
        "wrapped",
        "range-value",
        "range-error",
        "derivative",
        "edge-new-parameter",
    ],
)
def test_a_drift_of_a_generated_snapshot_names_what_it_is_about(cid: Any, detail: Any, api: Any, text: Any) -> None:
    """Loss edge inputs name the loss output, dtype variants the dtype, edge hyperparameters the edge,
    x64 says so, the wrapped and derivative corners name their corner: their keys are corner keys, so
    they never read as an optimizer-state cost ('optimizer state holds other values')."""
    (found,) = findings.group([row(cid, detail, change="changed", api=api, kind="snapshot")])
    assert found["text"].startswith(text)


def test_outcomes_compared_are_one_cause_only_when_the_expected_outcome_is_the_same() -> None:
    """Outcomes compared are one cause only when the expected outcome is the same: for example, in
    the 0.2.8 gate, adaptive_grad_clip's init_update (ValueError -> ok) and three no_recompile
    contracts (recompiled 1 time(s) -> ok) are not one finding 'expected ValueError'."""
    rows: Any = [
        row(
            f"tests/contracts/test_surface_transformations.py::test_protocol[{api}-{prop}]",
            f"AssertionError: assert 'ok' == '{want}' - {want} + ok",
            change="changed",
            api=api,
            kind="snapshot",
        )
        for api, prop, want in (
            ("optax.adaptive_grad_clip", "init_update", "ValueError"),
            ("optax.contrib.reduce_on_plateau", "no_recompile", "recompiled 1 time(s)"),
            ("optax.contrib.simplified_ademamix", "no_recompile", "recompiled 1 time(s)"),
        )
    ]
    found = findings.group(rows)
    assert sorted(f["apis"] if "apis" in f else [f["api"]] for f in found) == [
        ["optax.adaptive_grad_clip"],
        ["optax.contrib.reduce_on_plateau", "optax.contrib.simplified_ademamix"],
    ]
    assert all("ValueError" not in f["text"] for f in found if "adaptive" not in f["text"])
