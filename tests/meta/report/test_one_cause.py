"""One upstream cause, one finding (issue 25, item 2): ``causes.merge``
joins the findings of one cause across evidence kinds (hand-written
contracts, the generated sweep, the API surface, warnings) and across APIs.

The rows are shaped as the optax 0.2.8 gate wrote them (2026-12-01): the
removal of ``optax.monte_carlo`` (four findings: two broken, one changed, one
API surface), ``recipe:none-gradients`` (broken, now raises ValueError, and
fixed, its pinned defect no longer reproducing - the same ValueError), and
one API's several changes."""

import functools
import json
from pathlib import Path
from typing import Any, cast

from optax_gate.gate.base.model import Finding
from optax_gate.gate.diffs import unseen
from optax_gate.gate.judge import causes, findings
from optax_gate.gate.report import markdown as report_markdown
from tests.meta.support.rows import contract_row

REAL_723 = json.loads((Path(__file__).parents[1] / "data" / "report-optax-0.2.8-2026-12-01.json").read_text())
MC = "optax.monte_carlo"
GONE = f"ModuleNotFoundError: No module named '{MC}'"


row = functools.partial(contract_row, change="broken", api="optax.sgd", kind="acceptance")


def monte_carlo_report() -> Any:
    sweep = "tests/contracts/test_surface_sweep.py"
    apis = [
        f"{MC}.{n}"
        for n in ("control_delta_method", "moving_avg_baseline", "pathwise_jacobians", "score_function_jacobians")
    ]
    rows = [row(f"{sweep}::test_known[{a}]", GONE, api=a) for a in apis]
    rows += [
        row(
            f"{sweep}::test_called[{a}]",
            f"AssertionError: {a} raised ModuleNotFoundError: No module named '{MC}' assert "
            "'ModuleNotFoundError' == 'ok'",
            api=a,
        )
        for a in apis[:2]
    ]
    rows.append(
        row(
            f"{sweep}::test_called[{MC}.measure_valued_jacobians]",
            f"AssertionError: {MC}.measure_valued_jacobians raised ModuleNotFoundError: No module named "
            f"'{MC}' assert 'ModuleNotFoundError' == 'TypeError'",
            change="changed",
            api=f"{MC}.measure_valued_jacobians",
            kind="snapshot",
        )
    )
    rows.append(
        row(
            "tests/contracts/test_sgd.py::test_golden",
            "element (0) is 1.5, expected 1.25 (error 0.25, bound 1e-7 = 8 ULP of float32; worst error 2e6 ULP)",
            kind="golden",
        )
    )
    removed = [f"{MC}.{n}" for n in ("control_delta_method", "moving_avg_baseline", "pathwise_jacobians")] + [
        "optax.old_alias"
    ]
    surface = {
        "status": "compared",
        "rows": [
            {
                "path": p,
                "change": "removed",
                "kind": "function",
                "old": "def f()",
                "new": "",
                "where": "",
                "verdict": "broken",
                "uses": [],
            }
            for p in removed
        ],
    }
    return {"contracts": rows, "surface": surface}


def gate_findings(report: Any) -> Any:
    """As the gate forms them: the contract findings, the broken rows beyond the contracts, merged
    (``optax_gate.gate.diffs.unseen.beyond``)."""
    contract: Any = [{**f, "section": "contracts"} for f in findings.group(report["contracts"])]
    return contract, causes.merge(contract + unseen.broken_findings(report), report["contracts"])


def test_the_removal_of_a_module_is_one_finding_across_the_sweep_and_the_api_surface() -> None:
    report = monte_carlo_report()
    before, after = gate_findings(report)
    beyond = unseen.broken_findings(report)
    about_mc = [f for f in before + beyond if any(MC in a for a in f.get("apis") or [f["api"]])]
    assert sorted(f["change"] for f in about_mc) == ["broken", "broken", "broken", "changed"]  # as read on 0.2.8: four
    (mc,) = [f for f in after if any(MC in a for a in f.get("apis") or [f["api"]])]
    assert mc["change"] == "broken" and mc["section"] == "contracts" and len(mc["contracts"]) == 7
    assert mc["cause"] == (
        f"`{MC}` is gone from the candidate: importing or calling it raises ModuleNotFoundError; API surface: "
        "3 names removed"
    )
    assert mc["changes"] == {"broken": 6, "changed": 1}
    assert {p["section"] for p in mc["parts"]} == {"contracts", "surface"} and "removed/optax.monte_carlo" in mc[
        "causes"
    ]
    assert mc["text"].endswith("(7 contracts: 6 broken, 1 changed: known ×4, called ×3)")
    # the unrelated removal and the unrelated numeric finding stay their own
    rest = [f for f in after if f is not mc]
    assert sorted(f.get("section") for f in rest) == ["contracts", "surface"]
    assert [f["apis"] if "apis" in f else [f["api"]] for f in rest if f["section"] == "surface"] == [
        ["optax.old_alias"]
    ]
    assert [f["number"] for f in after] == [1, 2, 3]


def none_gradients_rows() -> Any:
    now = (
        "ValueError: pytree structure error: different types at key path tree_map tree['bias'] At that key "
        "path, the prefix "
        "pytree tree_map tree has a subtree of type"
    )
    defect = (
        "adam-none-gradient-drops-moments: adam/adamw given a None gradient leaf replace that leaf's mu and nu by None"
    )
    recipe = "tests/contracts/test_training_recipes.py"
    return [
        row(f"{recipe}::test_a_none_gradient_leaf_gives_a_none_update", now, api="recipe:none-gradients"),
        row(
            f"{recipe}::test_a_none_gradient_leaf_drops_its_moments_and_breaks_the_next_step",
            f"known upstream defect no longer reproduces ({defect}); now: {now}",
            change="fixed",
            api="recipe:none-gradients",
            defect=defect,
            baseline="passed",
            candidate="failed",
        ),
    ]


def test_a_defect_that_now_fails_otherwise_is_one_broken_finding_leading_with_the_new_failure() -> None:
    rows: Any = none_gradients_rows()
    assert sorted(f["change"] for f in findings.group(rows)) == ["broken", "fixed"]  # as read on 0.2.8
    (f,) = causes.of_report(rows)
    assert f["change"] == "broken" and f["changes"] == {"broken": 1, "fixed": 1}
    assert f["cause"].startswith("now raises ValueError: pytree structure error")
    assert (
        "where the baseline had the known upstream defect `adam-none-gradient-drops-moments` (it no longer reproduces)"
        in f["cause"]
    )
    assert f["cause"].count("pytree structure error") == 1  # said once, not once per part
    line = report_markdown.finding_line(f)
    assert "**broken**" in line and "**fixed**" not in line and "**changed" not in line
    assert "(2 contracts: 1 broken, 1 fixed: " in line
    from optax_gate.gate.report import html_page

    rows_by_id: Any = {r["id"]: r for r in rows}
    page = html_page.finding_html(report_markdown.Page({"findings": [f], "contracts": rows}), f, rows_by_id)
    assert '<span class="change broken">broken</span> 1.' in page, page[page.find("finding") :][:600]


def test_a_defect_that_now_changes_otherwise_without_breaking_is_one_changed_finding() -> None:
    rows = none_gradients_rows()
    rows[0] = {**rows[0], "change": "changed", "baseline": "passed", "candidate": "passed"}
    (f,) = causes.of_report(rows)
    assert f["change"] == "changed" and f["changes"] == {"changed": 1, "fixed": 1}
    assert f["cause"].startswith(
        "known upstream defect `adam-none-gradient-drops-moments` no longer reproduces; it now raises ValueError"
    )


def test_a_heading_says_the_broken_contracts_a_changed_finding_holds() -> None:
    f = {"change": "changed", "changes": {"changed": 2, "broken": 1}}
    assert findings.heading(f) == "changed, 1 broken"
    assert findings.heading({"change": "broken", "changes": {"broken": 1, "fixed": 1}}) == "broken"


def test_one_apis_changes_across_the_sweep_and_its_contracts_are_one_finding() -> None:
    api = "optax.apply_if_finite"
    gen = "tests/contracts/test_surface_transformations.py"
    rows: Any = [
        row(
            f"{gen}::test_nonfinite_and_state[{api}]",
            "snapshot drift: notfinite_count: int32[]=0 -> int32[]=1",
            change="changed",
            api=api,
            kind="snapshot",
        ),
        row(
            f"{gen}::test_nonfinite_and_state[{api}-classes]",
            "snapshot drift: nan_inf_grads: '[''r0'']' -> none",
            change="changed",
            api=api,
            kind="snapshot",
        ),
        row(
            f"{gen}::test_edge_hyperparams[{api}]",
            "snapshot drift: max_consecutive_errors=0/nan_inf_params/updates: r1 -> none",
            change="changed",
            api=api,
            kind="snapshot",
        ),
        row(
            "tests/contracts/test_apply_if_finite.py::test_counters",
            "AssertionError: assert 2 == 1",
            api=api,
            kind="golden",
        ),
        row(
            "tests/contracts/test_x.py::test_state[a]",
            "snapshot drift: .count: int32[]=0 -> int32[]=1",
            change="changed",
            api="optax.a",
            kind="snapshot",
        ),
        row(
            "tests/contracts/test_x.py::test_state[b]",
            "snapshot drift: .count: int32[]=0 -> int32[]=1",
            change="changed",
            api="optax.b",
            kind="snapshot",
        ),
    ]
    assert len(findings.group(rows)) == 5
    found = causes.of_report(rows)
    assert [(f["change"], f["api"], len(f["contracts"])) for f in found] == [
        ("broken", api, 4),
        ("changed", "2 APIs", 2),
    ]
    assert len(found[0]["parts"]) == 4 and "fewer non-finite outputs" in found[0]["cause"]


def test_one_apis_other_change_is_not_folded_into_a_finding_of_many_apis() -> None:
    """0.2.8: `multiclass_generalized_dice_loss`'s value moved by 40 % (0.1808 -> 0.1083), and its input
    checks raise ValueError as 22 other losses' do. The value drift is a finding of its own, not a line
    inside the 23-API finding of the input checks; one API's findings still join where it is alone."""
    corners = "tests/contracts/test_surface_corners_losses.py"
    moved = (
        "corner.broadcast/error: '[Chex] Assertion assert_equal_shape failed' -> 'Shape mismatch - got (2, 3) and (2,)'"
    )
    losses = ("optax.dice", "optax.l2_loss", "optax.huber_loss")
    rows: Any = [
        row(
            f"{corners}::test_loss_corners[{a}]",
            f"snapshot drift: {moved}"
            + (
                "; corner.int_inputs/error: '[Chex] Error in type' -> 'Expected a float dtype'"
                if a == "optax.dice"
                else ""
            ),
            change="changed",
            api=a,
            kind="snapshot",
        )
        for a in losses
    ]
    rows.append(
        row(
            "tests/contracts/test_surface_sweep.py::test_values[optax.dice]",
            "snapshot drift of values: `result` 1 of 1 elements: 0.1083 where 0.1808 was recorded",
            change="changed",
            api="optax.dice",
            kind="snapshot",
        )
    )
    found = causes.of_report(rows)
    assert sorted((f["api"], len(f["contracts"])) for f in found) == [("3 APIs", 3), ("optax.dice", 1)], [
        (f["api"], f["cause"]) for f in found
    ]
    alone = causes.of_report([rows[0], rows[-1]])  # the loss alone: its two changes are one finding
    assert [(f["api"], len(f["contracts"])) for f in alone] == [("optax.dice", 2)]


def test_the_723_contract_report_is_7_findings_one_per_upstream_cause() -> None:
    before = findings.group(REAL_723["contracts"])
    after = causes.of_report(REAL_723["contracts"])
    assert (len(before), len(after)) == (14, 7)
    joined = {f["api"]: (f["change"], sorted(p["change"] for p in f["parts"])) for f in after if "parts" in f}
    assert joined == {
        "3 APIs": ("broken", ["broken", "changed"]),  # MultiSteps' float32 accumulator (dtype-now)
        "optax.inject_hyperparams": ("broken", ["broken", "changed", "changed", "fixed"]),
        "optax.huber_loss": ("broken", ["broken", "broken"]),
        "recipe:none-gradients": ("broken", ["broken", "fixed"]),
        "optax.add_decayed_weights": ("changed", ["changed", "fixed"]),
    }
    assert sorted(c for f in after for c in f["contracts"]) == sorted(r["id"] for r in REAL_723["contracts"])
    assert [f["change"] for f in after if f["api"] == "recipe:none-gradients"] == [
        "broken"
    ]  # one finding, not broken and fixed


def test_merging_twice_changes_nothing_and_new_or_gone_never_join() -> None:
    rows = [
        *none_gradients_rows(),
        row("t.py::test_new", "", change="new", api="recipe:none-gradients", baseline=None, candidate="passed"),
    ]
    once = causes.of_report(rows)
    twice = causes.merge([cast(Finding, dict(f)) for f in once], rows)
    assert [(f["change"], f["contracts"]) for f in once] == [(f["change"], f["contracts"]) for f in twice]
    assert [f["change"] for f in once] == ["broken", "new"]


def test_a_warning_naming_a_removed_module_joins_its_removal() -> None:
    report = monte_carlo_report()
    report["warnings"] = {
        "rows": [
            {
                "verdict": "broken",
                "category": "DeprecationWarning",
                "message": f"{MC} is deprecated and will be removed",
                "your_code": [],
            }
        ]
    }
    _, after = gate_findings(report)
    (mc,) = [f for f in after if MC in f["cause"]]
    assert "warning: " + f"{MC} is deprecated" in mc["cause"] and not any(f["section"] == "warnings" for f in after)


def test_a_joined_finding_validates_against_the_schema() -> None:
    jsonschema = __import__("pytest").importorskip("jsonschema", reason="jsonschema comes with the tools lock")
    schema = json.loads(
        (Path(__file__).parents[3] / "src" / "optax_gate" / "gate" / "report" / "report.schema.json").read_text()
    )
    _, after = gate_findings(monte_carlo_report())
    jsonschema.validate(after, schema["properties"]["findings"])
    assert after[0]["key"] == "merged"


def test_a_joined_finding_never_drops_a_part_that_failed_otherwise() -> None:
    """The defect's twin says its failure once; another change of the same API keeps its own words."""
    rows = [
        *none_gradients_rows(),
        row(
            "tests/contracts/test_training_recipes.py::test_trajectory[none]",
            "element (0) is 1.5, expected 1.25 (error 0.25, bound 1e-7 = 8 ULP of float32; worst error 2e6 ULP)",
            api="recipe:none-gradients",
            kind="golden",
        ),
    ]
    (f,) = causes.of_report(rows)
    assert f["cause"].count("pytree structure error") == 1 and "element (0) is 1.5, expected 1.25" in f["cause"]
    assert f["changes"] == {"broken": 2, "fixed": 1}


def multisteps_rows() -> Any:
    """MultiSteps' accumulator turned float32 whatever the parameters' dtype (optax 0.2.8,
    ``MultiSteps(accumulator_dtype=jnp.float32)``), as three kinds of evidence read it."""
    ms, wrappers = "tests/contracts/test_multi_steps.py", "tests/contracts/test_surface_corners_wrappers.py"
    return [
        row(
            f"{ms}::test_trajectory_over_two_full_cycles[float64-constant]",
            "AssertionError: params at step 2, leaf 0: element (0,) "
            "is np.float64(0.73643460), expected np.float64(0.73643460274) (error 1.81e-09, bound 8.88e-15 = "
            "20 ULP of float64; "
            "worst error 8575679.62 ULP)",
            api="optax.MultiSteps",
            kind="golden",
        ),
        row(
            f"{ms}::test_state_snapshot[bfloat16]",
            "snapshot drift: .acc_grads['bias']: bfloat16[2] -> float32[2]",
            change="changed",
            api="optax.MultiSteps",
            kind="snapshot",
        ),
        row(
            f"{wrappers}::test_wrapper_corners[optax.MultiSteps]",
            "snapshot drift: corner.adam/bfloat16: ok params bfloat16 state bfloat16,int32 -> ok params "
            "bfloat16 state bfloat16,float32,int32",
            change="changed",
            api="optax.MultiSteps",
            kind="snapshot",
        ),
        row(
            "tests/contracts/test_inject_hyperparams.py::test_state_snapshot[bfloat16]",
            "snapshot drift: .hyperparams['learning_rate']: bfloat16[] -> float32[]",
            change="changed",
            api="optax.inject_hyperparams",
            kind="snapshot",
        ),
        row(
            "tests/contracts/test_x.py::test_corner[optax.sgd]",
            "snapshot drift: corner.sgd/bfloat16: ok params bfloat16 state bfloat16 -> ok params bfloat16 "
            "state bfloat16",
            change="changed",
            api="optax.sgd",
            kind="snapshot",
        ),
    ]


def test_a_dtype_one_api_now_computes_in_is_one_finding_across_state_trajectories_and_corners() -> None:
    """MultiSteps' new dtype, said by its state snapshot, its wrapper corners and its float64 trajectories, is
    one finding (``dtype-now``). inject_hyperparams' state moving bfloat16 → float32 too is another change, not
    one finding with MultiSteps' (state dtype findings are per state field)."""
    rows = multisteps_rows()
    assert len(findings.group(rows)) == 5
    found = causes.of_report(rows)
    (ms,) = [f for f in found if "optax.MultiSteps" in f["apis"]]
    assert ms["apis"] == ["optax.MultiSteps"] and ms["change"] == "broken" and len(ms["contracts"]) == 3
    assert "dtype-now/optax.MultiSteps/float32" in ms["causes"]
    assert (
        ms["cause"].startswith("float64 results have float32-sized errors")
        and "`.acc_grads` 2 → 4 bytes" in ms["cause"]
    )
    assert "at corner `adam/bfloat16`" in ms["cause"]
    assert [f["apis"] for f in found if f is not ms] == [["optax.inject_hyperparams"], ["optax.sgd"]]


def test_a_transformation_corner_whose_state_gains_a_dtype_joins_that_apis_state_dtype_finding() -> None:
    """A transformation corner's record (``s bf16x2,i32x1``) says the state's dtypes as the wrapper
    grid's ``state`` does: a state now holding float32 is ``dtype-now`` for its API, and joins that API's state
    snapshot moving to float32; the hyperparameters' ``h`` are not the state's leaves per parameter."""
    corners = "tests/contracts/test_surface_corners_transformations.py"
    gained = row(
        f"{corners}::test_transformation_corners[optax.adam]",
        "snapshot drift: corner.mu_dtype=bfloat16: ok u f32 |u| 0.03 u0 0.01 s bf16x2,i32x1 -> ok u f32 |u| "
        "0.03 u0 0.01 s bf16x1,f32x1,i32x1",
        change="changed",
        api="optax.adam",
        kind="snapshot",
    )
    assert ("dtype-now", "optax.adam", "float32") in causes.behaviour_keys(gained)
    hyper_only = dict(gained, detail=gained["detail"].replace("s bf16x1,f32x1,i32x1", "s bf16x2,i32x1 h f32x3"))
    assert not [k for k in causes.behaviour_keys(hyper_only) if k[0] == "dtype-now"]
    state = row(
        "tests/contracts/test_adam.py::test_state_snapshot[bfloat16]",
        "snapshot drift: [0].mu['w']: bfloat16[3] -> float32[3]",
        change="changed",
        api="optax.adam",
        kind="snapshot",
    )
    assert len(findings.group([gained, state])) == 2
    (joined,) = causes.of_report([gained, state])
    assert "dtype-now/optax.adam/float32" in joined["causes"] and len(joined["contracts"]) == 2


def test_a_corner_that_gains_no_dtype_or_a_recorded_message_joins_nothing() -> None:
    assert not [k for k in causes.behaviour_keys(multisteps_rows()[-1]) if k[0] == "dtype-now"]
    message = row(
        "w.py::test_c[optax.MultiSteps]",
        "snapshot drift: corner.adam/error: 'state float32' -> 'state float64'",
        change="changed",
        api="optax.MultiSteps",
        kind="snapshot",
    )
    assert causes.behaviour_keys(message) == []  # an exception's text, not a state summary


def params_nonfinite_rows(direction_of_c: Any = "fewer") -> Any:
    gen = "tests/contracts/test_surface_transformations.py"
    new_c = "none" if direction_of_c == "fewer" else "r1,r3,r4"
    return [
        row(
            f"{gen}::test_nonfinite_and_state[optax.a]",
            "snapshot drift: nan_param: '[''r3'']' -> none",
            change="changed",
            api="optax.a",
            kind="snapshot",
        ),
        row(
            f"{gen}::test_nonfinite_and_state[optax.b]",
            "snapshot drift: nan_param: '[''r3'']' -> none",
            change="changed",
            api="optax.b",
            kind="snapshot",
        ),
        row(
            f"{gen}::test_edge_hyperparams[optax.a]",
            "snapshot drift: weight_decay=0/nan_inf_params/updates: r1,r3 -> none",
            change="changed",
            api="optax.a",
            kind="snapshot",
        ),
        row(
            f"{gen}::test_edge_hyperparams[optax.c]",
            "snapshot drift: learning_rate=0/nan_inf_params/state/[1].e_g: r1,r3 -> absent; "
            f"learning_rate=0/nan_inf_params/updates: r1,r3 -> {new_c}",
            change="changed",
            api="optax.c",
            kind="snapshot",
        ),
        row(
            f"{gen}::test_nonfinite_and_state[optax.d]",
            "snapshot drift: nan_inf_grads: '[''r1'']' -> none",
            change="changed",
            api="optax.d",
            kind="snapshot",
        ),
    ]


def test_a_nonfinite_parameter_reaching_fewer_outputs_is_one_finding_across_records_and_apis() -> None:
    """optax 0.2.8 skips a zero weight decay, so a NaN parameter no longer reaches the update: across the records
    and APIs that show it (the ``nan_param`` record of 7 APIs, the ``weight_decay=0`` and ``learning_rate=0``
    records of others, ``add_decayed_weights`` in two of them) it is one finding, one sentence
    (``params-nonfinite``); NaN gradients are another input and stay apart."""
    rows = params_nonfinite_rows()
    assert len(findings.group(rows)) == 4
    found = causes.of_report(rows)
    assert [(f["apis"], len(f["contracts"])) for f in found] == [
        (["optax.a", "optax.b", "optax.c"], 4),
        (["optax.d"], 1),
    ]
    assert found[0]["cause"] == (
        "fewer non-finite outputs when a parameter is NaN or inf: the update and the state entries "
        "`e_g` (records `nan_param`, `learning_rate=0` and `weight_decay=0` with nan inf params)"
    )
    assert found[0]["causes"] == ["params-nonfinite/fewer"]


def test_more_and_fewer_nonfinite_outputs_are_two_findings() -> None:
    found = causes.of_report(params_nonfinite_rows(direction_of_c="more"))
    assert [f["apis"] for f in found] == [["optax.a", "optax.b"], ["optax.c"], ["optax.d"]]


def test_a_value_the_detail_cut_short_says_no_direction() -> None:
    """The detail of a row is cut near ``outcomes.MESSAGE_LIMIT`` characters: a value cut short, such
    as ``absent…``, says no direction (not "more non-finite outputs"), so it does not split a finding
    such as adadelta's from the others'."""
    cut = row(
        "g.py::test_edge_hyperparams[optax.c]",
        "snapshot drift: learning_rate=0/nan_inf_params/updates: r1,r3 -> none; "
        "weight_decay=0/nan_inf_params/state/[1].e_g: r1,r3 -> absent…",
        change="changed",
        api="optax.c",
        kind="snapshot",
    )
    assert causes.behaviour_keys(cut) == [("params-nonfinite", "fewer")]


def snap(cid: Any, detail: Any, api: Any) -> Any:
    return row(cid, f"snapshot drift: {detail}", change="changed", api=api, kind="snapshot")


def test_one_corner_moving_alike_for_several_apis_is_one_finding_said_once() -> None:
    """One corner transition is one finding (``corner-moved``) across the APIs it moves alike, said once,
    numbers aside, even where the other corners that moved with it differ: for example in 0.2.8 three
    schedules' ``base/int`` corner (a Python float64 → a float32 array) and the tree reductions'
    ``empty_leaf`` corner (ValueError → a value). Another transition of the same corner stays apart."""
    sched, trees = "tests/contracts/test_surface_corners_schedules.py", "tests/contracts/test_surface_corners_trees.py"
    rows = [
        snap(
            f"{sched}::test_schedule_corners[optax.a]",
            "corner.base/int: ok py float64 0.04 0.1 -> ok float32 0.04 0.1",
            "optax.a",
        ),
        snap(
            f"{sched}::test_schedule_corners[optax.b]",
            "corner.base/int: ok py float64 1 0.95 -> ok float32 1 0.95; corner.peak/bf16: ok bfloat16 1 -> "
            "ok float32 1",
            "optax.b",
        ),
        snap(
            f"{sched}::test_schedule_corners[optax.c]",
            "corner.base/int: ok py float64 1 -> raises TypeError",
            "optax.c",
        ),
        snap(
            f"{sched}::test_schedule_corners[optax.d]",
            "corner.base/int: ok py float64 0.5 -> ok float32 0.5",
            "optax.d",
        ),
        snap(
            f"{trees}::test_tree_corners[optax.tree.max]",
            "corner.empty_leaf: raises ValueError -> ok float32[] -0.92",
            "optax.tree.max",
        ),
        snap(
            f"{trees}::test_tree_corners[optax.tree.norm]",
            "corner.empty_leaf: raises ValueError -> ok float32[] 1.05; corner.nan_leaf: ok float32[] nan -> "
            "ok float32[] nan",
            "optax.tree.norm",
        ),
    ]
    assert len(findings.group(rows)) == 5  # a and d: one corner moved alike; c: the same corner moved otherwise
    found = causes.of_report(rows)
    assert [f["apis"] for f in found] == [
        ["optax.a", "optax.b", "optax.d"],
        ["optax.c"],
        ["optax.tree.max", "optax.tree.norm"],
    ]
    assert found[0]["cause"].count("at corner `base/int`") == 1 and "at corner `peak/bf16`" not in found[0]["cause"]
    assert found[2]["causes"] == ["corner-moved/empty_leaf/raises ValueError/ok float32[] #"]
    assert "raises TypeError" in found[1]["cause"] and "ok float32" not in found[1]["cause"]


def test_the_same_outputs_values_in_float32_and_under_x64_are_one_finding() -> None:
    vals, x64 = "tests/contracts/test_surface_losses.py", "tests/contracts/test_surface_x64.py"
    rows: Any = [
        row(
            f"{f}::test_{k}[optax.{a}]",
            f"snapshot drift of values: `{p}result` 2 of 2 elements, largest 0.071 (relative 0.22)",
            change="changed",
            api=f"optax.{a}",
            kind="snapshot",
        )
        for f, k, p in ((vals, "values", ""), (x64, "x64_values", "x64_"))
        for a in ("dice_loss", "binary_dice_loss")
    ]
    rows.append(
        row(
            f"{vals}::test_values[optax.sgd]",
            "snapshot drift of values: `loss` 1 of 1 elements: 0.5 where 0.4 was recorded",
            change="changed",
            api="optax.sgd",
            kind="snapshot",
        )
    )
    assert len(findings.group(rows)) == 3
    found = causes.of_report(rows)
    assert [(f["apis"], len(f["contracts"])) for f in found] == [
        (["optax.binary_dice_loss", "optax.dice_loss"], 4),
        (["optax.sgd"], 1),
    ]
    assert "`result`" in found[0]["cause"] and "`x64_result`" in found[0]["cause"]


def test_one_apis_dtype_variants_moving_alike_are_one_finding() -> None:
    gen = "tests/contracts/test_surface_dtypes.py"
    rows = [
        snap(
            f"{gen}::test_init_update_dtype[optax.adaptive_grad_clip-complex64]",
            "init_update_complex64: ValueError -> ok",
            "optax.adaptive_grad_clip",
        ),
        snap(
            f"{gen}::test_init_update_dtype[optax.contrib.muon-complex64]",
            "init_update_complex64: ValueError -> ok",
            "optax.contrib.muon",
        ),
        snap(
            f"{gen}::test_init_update_dtype[optax.adaptive_grad_clip-bfloat16]",
            "init_update_bfloat16: ValueError -> ok",
            "optax.adaptive_grad_clip",
        ),
        snap(
            f"{gen}::test_init_update_dtype[optax.sgd-bfloat16]", "init_update_bfloat16: ok -> TypeError", "optax.sgd"
        ),
    ]
    found = causes.of_report(rows)
    assert [f["apis"] for f in found] == [["optax.adaptive_grad_clip", "optax.contrib.muon"], ["optax.sgd"]]
    assert "variant-moved/optax.adaptive_grad_clip/ValueError/ok" in found[0]["causes"]
    # each move said once, for both dtypes
    assert found[0]["cause"] == "the update of a complex64 or bfloat16 PyTree differs: ValueError → ok", found[0][
        "cause"
    ]


def test_one_new_error_message_is_one_finding_across_contracts_and_corner_grids() -> None:
    """optax 0.2.8 replaces the losses' chex assertions by checks of its own. The same new message, an error
    before and after, is one cause (``error-now``) across the negative contracts now raising
    TypeError/ValueError, the ``int_inputs`` corners and the ``broadcast`` corners whose recorded messages
    changed; a corner that raised nothing before is not."""
    neg, corners = "tests/contracts/test_losses.py", "tests/contracts/test_surface_corners_losses.py"
    dtype_msg = "Expected the input to have a dtype that is a subdtype of <class 'numpy.floating'>, got int32"
    rows = [
        row(
            f"{neg}::test_integer_logits_raise[l2_loss]",
            f"raised TypeError instead of AssertionError: {dtype_msg}",
            api="optax.l2_loss",
            kind="negative",
        ),
        row(
            f"{neg}::test_targets_of_another_shape_raise[l2_loss]",
            "raised ValueError instead of AssertionError: Shape mismatch: got (4, 5) and (5,).",
            api="optax.l2_loss",
            kind="negative",
        ),
        snap(
            f"{corners}::test_loss_corners[optax.log_cosh]",
            "corner.int_inputs/error: '[Chex] Assertion assert_type failed - Error in typ' -> Expected the "
            "input to have a dtype that is a subdt",
            "optax.log_cosh",
        ),
        snap(
            f"{corners}::test_loss_corners[optax.dice_loss]",
            "corner.broadcast/error: '[Chex] Assertion assert_equal_shape failed - Array' -> Shape mismatch - "
            "got (2, 3) and (1, 3).",
            "optax.dice_loss",
        ),
        snap(
            f"{corners}::test_loss_corners[optax.perceptron_loss]",
            "corner.broadcast/error: '[Chex] Assertion assert_equal_shape failed - Array' -> Shape mismatch - "
            "got (2,) and (1,).",
            "optax.perceptron_loss",
        ),
        snap(
            f"{corners}::test_loss_corners[optax.hinge_loss]",
            "corner.int_inputs/error: absent -> Expected the input to have a dtype that is a subdt",
            "optax.hinge_loss",
        ),
    ]
    assert len(findings.group(rows)) == 5
    found = causes.of_report(rows)
    assert [(f["change"], f["apis"]) for f in found] == [
        ("broken", ["optax.dice_loss", "optax.l2_loss", "optax.log_cosh", "optax.perceptron_loss"]),
        ("changed", ["optax.hinge_loss"]),
    ]
    cause = found[0]["cause"]
    assert cause.startswith("input checks now raise TypeError/ValueError instead of AssertionError")
    assert cause.count("at corner `broadcast/error`") == 1 and cause.count("at corner `int_inputs/error`") == 1


def test_a_corner_move_of_dtypes_leads_in_words_and_is_said_once_across_apis() -> None:
    """0.2.8's inject_hyperparams rule at 83 transformations: the finding opens with what moved ("the
    optimizer state now holds bfloat16 leaves, and the hyperparameters are now bfloat16"), said once, not
    once per API whose records read otherwise (non-finite here, ok there)."""
    assert (
        findings.corner_lead("= u f32 s +bf16 h +bf16")
        == "the optimizer state now holds bfloat16 leaves, and the hyperparameters are now bfloat16"
    )
    assert findings.corner_lead("= u f32 h -f16") == "the hyperparameters are no longer float16"
    assert findings.corner_lead("ok u f32") == "" and findings.corner_lead("raises TypeError") == ""
    grid = "tests/contracts/test_surface_corners_injected.py"

    def moved(api: Any, status: Any, s_old: Any, s_new: Any, norm: Any) -> Any:
        return row(
            f"{grid}::test_injected_hyperparameters[{api}]",
            f"snapshot drift: corner.inject=bfloat16: {status} u f32 |u| {norm} u0 0.1 s {s_old} h f32x3 -> "
            f"{status} u f32 |u| {norm} u0 0.1 s {s_new} h bf16x3",
            change="changed",
            api=api,
            kind="snapshot",
        )

    rows = [
        moved("optax.adam", "ok", "f32x4,i32x1", "bf16x2,f32x2,i32x1", "1.5"),
        moved("optax.lion", "ok", "f32x2,i32x1", "bf16x2,i32x1", "2.5"),
    ]
    sgd = moved(
        "optax.sgd", "non-finite", "f32x2", "bf16x2", "nan"
    )  # another corner moved too: a finding of its own, joined
    rows.append(
        dict(
            sgd,
            detail=sgd["detail"]
            + "; corner.inject=float16: ok u f32 |u| 1 u0 0.1 s f32x2 h f32x3 -> ok u f32 |u| 1 u0 0.1 s f16x2 h f16x3",
        )
    )
    assert len(findings.group(rows)) == 2
    (found,) = causes.of_report(rows)
    lead = (
        "the optimizer state now holds bfloat16 leaves, and the hyperparameters are now bfloat16: at corner "
        "`inject=bfloat16`"
    )
    assert found["cause"].startswith(lead) and found["cause"].count("at corner `inject=bfloat16`") == 1, found["cause"]
    assert found["cause"].endswith("(and 1 more record of other APIs moving so)"), found["cause"]
