"""Honest static attribution (``optax_gate.gate.team_code.attribution``): a finding's
configuration comes from its contract cases' labels; each line of the team's
code is affected, not affected or "cannot tell without --run" by its literal
arguments; APIs reached through composition count
(``optax_gate.kit.surface.composition``, probed in the tests' environment, optax 0.2.6).
The expected verdicts were worked out by hand from the team file below."""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from optax_gate.gate import assemble
from optax_gate.gate.base.run_record import RunRecord
from optax_gate.gate.judge import compare
from optax_gate.gate.report import your_code_line
from optax_gate.gate.surface.public_api import POSITIONAL, Param
from optax_gate.gate.team_code import attribution, configuration, scope, usage

TEAM = """import optax

def make(wd, mu):
    a = optax.adamw(1e-3, weight_decay=0.1)
    b = optax.adamw(1e-3, weight_decay=0.0)
    c = optax.adamw(1e-3, weight_decay=wd)
    d = optax.adamw(1e-3)
    e = optax.adam(1e-3)
    f = optax.scale_by_adam(mu_dtype="float32")
    loss = optax.softmax_cross_entropy_with_integer_labels(mu, wd)
    return a, b, c, d, e, f, loss
"""
CATCHING = """import optax

def check(x, y):
    try:
        return optax.softmax_cross_entropy_with_integer_labels(x, y)
    except AssertionError:
        return None
"""
#: optax 0.2.6's adamw: weight_decay defaults to 1e-4 (read in optax/_src/alias.py)
SIGNATURES = {
    "optax.adamw": (Param("learning_rate", POSITIONAL), Param("weight_decay", POSITIONAL, "0.0001", "0.0001"))
}
#: what the composition probe reports for these two (checked by the probe test below)
REACHED = {"optax.adamw": {"optax.scale_by_adam", "optax.add_decayed_weights"}, "optax.adam": {"optax.scale_by_adam"}}


def _record(contracts: Any) -> Any:
    return {
        "label": "x",
        "status": "ran",
        "reason": "",
        "versions": {},
        "contracts": {
            cid: {"api": api, "guide": "g", "kind": kind, "outcome": outcome, "detail": detail}
            for cid, (api, kind, outcome, detail) in contracts.items()
        },
    }


def _report(tmp_path: Path, team_text: Any = TEAM) -> Any:
    base = _record(
        {
            "test_edges.py::test_edge[optax.adamw]": ("optax.adamw", "snapshot", "passed", ""),
            "test_dtypes.py::test_state[optax.scale_by_adam]": ("optax.scale_by_adam", "snapshot", "passed", ""),
            "test_losses.py::test_bad_labels": (
                "optax.softmax_cross_entropy_with_integer_labels",
                "negative",
                "passed",
                "",
            ),
        }
    )
    cand = _record(
        {
            "test_edges.py::test_edge[optax.adamw]": (
                "optax.adamw",
                "snapshot",
                "failed",
                "snapshot drift: weight_decay=0/nan_inf_params: build ValueError -> r1,r3",
            ),
            "test_dtypes.py::test_state[optax.scale_by_adam]": (
                "optax.scale_by_adam",
                "snapshot",
                "failed",
                "snapshot drift: [0].mu['r1']: bfloat16[3] -> float32[3]",
            ),
            "test_losses.py::test_bad_labels": (
                "optax.softmax_cross_entropy_with_integer_labels",
                "negative",
                "failed",
                "raised TypeError instead of AssertionError: labels must be integers",
            ),
        }
    )
    team = tmp_path / "team"
    team.mkdir(exist_ok=True)
    (team / "train.py").write_text(team_text)
    scan = usage.scan([team], base=team)  # call sites named from the team's folder, as if the gate started there
    report: Any = compare.compare(RunRecord.from_json(base), RunRecord.from_json(cand))
    from optax_gate.gate.team_code import call_sites

    report = call_sites.annotated(report, scan)
    attribution.attribute(report, scan, attribution.Known(REACHED, {}, SIGNATURES))
    return report, scan


def _by_api(report: Any) -> Any:
    return {f["api"]: f for f in report["findings"]}


def test_a_finding_carries_the_configuration_of_its_cases(tmp_path: Path) -> None:
    found = _by_api(_report(tmp_path)[0])
    assert found["optax.adamw"]["configuration"] == {"keywords": {"weight_decay": "0"}}
    assert found["optax.scale_by_adam"]["configuration"] == {"dtypes": ["bfloat16"], "leaves": ["[0].mu['r1']"]}
    assert found["optax.softmax_cross_entropy_with_integer_labels"]["configuration"] == {
        "raises": "AssertionError",
        "negative": True,
    }


def test_literal_arguments_decide_where_they_can_and_only_there(tmp_path: Path) -> None:
    found = _by_api(_report(tmp_path)[0])
    edge = {w: a["verdict"] for w, a in found["optax.adamw"]["your_code_attribution"].items()}
    # 0.1 is not 0; 0.0 is; a variable is known at run time; the default 1e-4 is not 0
    assert edge == {
        "train.py:4": "not-affected",
        "train.py:5": "affected",
        "train.py:6": "cannot-tell",
        "train.py:7": "not-affected",
    }
    assert (
        "weight_decay=0.1; the finding is about weight_decay=0"
        in found["optax.adamw"]["your_code_attribution"]["train.py:4"]["why"]
    )
    state = found["optax.scale_by_adam"]["your_code_attribution"]
    # adamw and adam are built from scale_by_adam: reached through composition, the params' dtype decides
    assert state["train.py:8"] == {
        "verdict": "cannot-tell",
        "calls": "calls optax.adam, built from optax.scale_by_adam",
        "why": "the finding is about bfloat16 state; the params' dtype is known at run time: cannot tell without --run",
    }
    assert state["train.py:4"]["calls"] == "calls optax.adamw, built from optax.scale_by_adam"
    # mu_dtype= sets the dtype of the .mu entry the finding is about
    assert state["train.py:9"]["verdict"] == "not-affected" and "mu_dtype" in state["train.py:9"]["why"]
    assert set(found["optax.scale_by_adam"]["your_code"]) >= {"train.py:4", "train.py:8", "train.py:9"}
    loss = found["optax.softmax_cross_entropy_with_integer_labels"]["your_code_attribution"]
    assert loss == {
        "train.py:10": {"verdict": "not-affected", "calls": "calls this API", "why": loss["train.py:10"]["why"]}
    }
    assert "catches AssertionError nowhere" in loss["train.py:10"]["why"]


def test_a_team_that_catches_the_old_exception_cannot_be_told(tmp_path: Path) -> None:
    found = _by_api(_report(tmp_path, CATCHING)[0])
    (a,) = found["optax.softmax_cross_entropy_with_integer_labels"]["your_code_attribution"].values()
    assert a["verdict"] == "cannot-tell" and "train.py:6" in a["why"]


def test_findings_whose_every_line_is_not_affected_are_elsewhere(tmp_path: Path) -> None:
    report, _scan = _report(tmp_path)
    scope.scope_findings(report, scope.usage_decision(unread=False))
    report = assemble.with_scope(report, scope.scoped(report, "broken", by="usage"))
    got = {f["api"]: f["scope"] for f in report["findings"]}
    assert got == {
        "optax.adamw": "yours",
        "optax.scale_by_adam": "yours",
        "optax.softmax_cross_entropy_with_integer_labels": "elsewhere",
    }
    assert report["verdict"] == "pass"  # the one broken finding (the negative contract) is not the team's
    text = your_code_line.attributed_lines(next(f for f in report["findings"] if f["api"] == "optax.adamw"))
    assert (
        text.index("`train.py:5` calls this API: **affected**")
        < text.index("`train.py:6`")
        < text.index("`train.py:4`")
    )
    assert "`train.py:4` calls this API: not affected (passes weight_decay=0.1" in text


def test_the_scanner_keeps_arguments_as_source_text_and_except_clauses(tmp_path: Path) -> None:
    scan = _report(tmp_path, CATCHING)[1]
    (call,) = [u for u in scan.uses if u.how == "call"]
    assert call.arguments == (("0", "x"), ("1", "y"))
    assert [(u.where, u.path) for u in scan.uses if u.how == "catch"] == [("train.py:6", "AssertionError")]


def test_the_composition_probe_finds_what_adamw_and_a_schedule_are_built_from() -> None:
    pytest.importorskip("optax")
    proc = subprocess.run(
        [sys.executable, "-m", "optax_gate.kit.surface.composition"], capture_output=True, text=True, timeout=300
    )
    reached = json.loads(proc.stdout.strip().splitlines()[-1])["reached"]
    assert {"optax.scale_by_adam", "optax.add_decayed_weights", "optax.scale_by_learning_rate"} <= set(
        reached["optax.adamw"]
    )
    assert "optax.add_decayed_weights" not in reached["optax.adam"]
    assert {"optax.cosine_decay_schedule", "optax.linear_schedule", "optax.join_schedules"} <= set(
        reached["optax.warmup_cosine_decay_schedule"]
    )
    assert "optax.adamw" not in reached["optax.adamw"]  # itself (and its aliases) left out


def _row(detail: Any) -> Any:
    return {
        "id": "tests/contracts/test_x.py::test_y",
        "api": "optax.huber_loss",
        "change": "changed",
        "detail": detail,
        "kind": "snapshot",
        "baseline": "passed",
        "candidate": "failed",
    }


def test_a_misuse_finding_does_not_take_the_cause_of_a_line_that_breaks_for_another() -> None:
    """huber_loss(pred, y, 1.0) breaks in optax 0.2.8 (delta keyword-only), but not because a misuse's
    exception type changed: that finding says not affected and names the other cause."""
    use = usage.Use(
        "finetune.py:12", "optax.huber_loss", "call", 3, (), False, (("0", "pred"), ("1", "y"), ("2", "1.0"))
    )
    site = attribution.Site(use, True, (), "breaks: delta is keyword-only in the candidate")
    verdict, why, _ = attribution.judge(site, {"raises": "AssertionError", "negative": True}, [])
    assert verdict == "not-affected" and why.endswith(
        "this line breaks for another cause (API surface: breaks: delta is keyword-only in the candidate)"
    )
    # a finding about the signature itself (its rows name parameter kinds): the break is its cause
    assert attribution.judge(site, {"signature": True}, [])[0] == "affected"
    assert configuration.configuration(
        [_row("did not warn (DeprecationWarning); got ('delta', 'KEYWORD_ONLY', 1.0) at index 2")]
    )["signature"]


def test_another_finding_on_the_api_does_not_take_the_cause_of_a_line_that_breaks() -> None:
    """A line that breaks first for another finding's cause, as huber_loss(pred, y, 1.0) does (API
    surface: breaks: delta is keyword-only), is "cannot tell" under another finding on the API (for
    example "at corner int_inputs the outcome differs", huber_loss among 17 losses), naming the other
    cause first, so that cause is not said twice; the finding about the signature keeps the line
    affected."""
    use = usage.Use(
        "finetune.py:12", "optax.huber_loss", "call", 3, (), False, (("0", "pred"), ("1", "y"), ("2", "1.0"))
    )
    site = attribution.Site(use, True, (), "breaks: delta is keyword-only in the candidate")
    corner = configuration.configuration([_row("snapshot drift: corner.int_inputs/error: 'a' -> b")])
    assert "signature" not in corner
    verdict, why, _ = attribution.judge(site, corner, [])
    assert verdict == "cannot-tell" and why.startswith(
        "this line breaks first for another cause (API surface: breaks: delta"
    ), why


def test_a_call_over_several_lines_is_one_call_and_a_loss_passed_on_is_judged_too(tmp_path: Path) -> None:
    """A call whose arguments run over several lines is one call, never also an attribute use of
    its function (the scanner sees the call before its own ``func``), as in nanodo's
    optimizer.py:176."""
    team = """import optax

def make(wd):
    loss_fn = optax.softmax_cross_entropy_with_integer_labels
    return optax.adamw(
        1e-3,
        weight_decay=wd,
    ), loss_fn
"""
    report, scan = _report(tmp_path, team)
    assert [(u.where, u.how) for u in scan.uses if u.path == "optax.adamw"] == [("train.py:5", "call")]
    found = _by_api(report)
    (a,) = found["optax.adamw"]["your_code_attribution"].values()
    assert (
        a["calls"] == "calls this API"
        and a["why"] == "passes weight_decay=wd: `wd` is a parameter of `make`: cannot tell without --run"
    )
    (loss,) = found["optax.softmax_cross_entropy_with_integer_labels"]["your_code_attribution"].values()
    assert loss["verdict"] == "not-affected" and loss["calls"] == "uses this API"


#: what the composition probe reports of adamw's arguments (checked by the probe test below)
PASSES = {
    "optax.adamw": {
        "weight_decay": {"optax.add_decayed_weights:weight_decay"},
        "learning_rate": {"optax.scale_by_learning_rate:learning_rate"},
    }
}


def _decay_report(tmp_path: Path, configuration: Any = None, passes: Any = PASSES) -> Any:
    """A finding on ``optax.add_decayed_weights`` (the part adamw is built from): an edge snapshot about
    ``weight_decay=0``, or a hand-written contract whose configuration marker says what it fixes."""
    cid = "test_decay.py::test_scheduled" if configuration else "test_decay.py::test_edge[optax.add_decayed_weights]"
    detail = (
        "assert 1 == 0" if configuration else "snapshot drift: weight_decay=0/nan_inf_params: build ValueError -> r1"
    )
    base, cand = (
        _record({cid: ("optax.add_decayed_weights", "snapshot", outcome, d)})
        for outcome, d in (("passed", ""), ("failed", detail))
    )
    if configuration:
        for record in (base, cand):
            record["contracts"][cid]["configuration"] = json.dumps(configuration)
    team = tmp_path / "team"
    team.mkdir(exist_ok=True)
    (team / "train.py").write_text(TEAM)
    scan = usage.scan([team], base=team)
    report: Any = compare.compare(RunRecord.from_json(base), RunRecord.from_json(cand))
    from optax_gate.gate.team_code import call_sites

    report = call_sites.annotated(report, scan)
    attribution.attribute(report, scan, attribution.Known(REACHED, {}, SIGNATURES, passes))
    (finding,) = report["findings"]
    return {w: a["verdict"] for w, a in finding["your_code_attribution"].items() if "adamw" in a["calls"]}, finding


def test_an_argument_the_constructor_hands_on_unchanged_decides_for_its_part(tmp_path: Path) -> None:
    """adamw hands weight_decay to add_decayed_weights unchanged (the probe's "passes"): a finding about the
    part's weight_decay=0 is judged by the adamw line's own literal; without that knowledge it cannot be told."""
    verdicts, _ = _decay_report(tmp_path)
    assert verdicts == {
        "train.py:4": "not-affected",
        "train.py:5": "affected",
        "train.py:6": "cannot-tell",
        "train.py:7": "not-affected",
    }
    blind, _ = _decay_report(tmp_path, passes={})
    assert set(blind.values()) == {"cannot-tell"}, blind


def test_a_literal_that_meets_the_keyword_still_cannot_tell_what_else_the_finding_needs(tmp_path: Path) -> None:
    """Issue 39: an edge snapshot is about weight_decay=0 *and* a NaN or inf parameter: a literal 0.0
    meets the first, the run decides the second. (Building with the value raising is the keyword's alone.)"""
    rows = [
        {
            "id": "test_edges.py::test_edge[optax.adamw]",
            "api": "optax.adamw",
            "change": "changed",
            "kind": "snapshot",
            "detail": "snapshot drift: weight_decay=0/nan_inf_params/updates: r1,r3 -> none",
        }
    ]
    config = configuration.configuration(rows)
    assert config == {"keywords": {"weight_decay": "0"}, "condition": "a parameter that is NaN or inf"}
    team = tmp_path / "team"
    team.mkdir()
    (team / "train.py").write_text("import optax\ntx = optax.adamw(1e-3, weight_decay=0.0)\n")
    use = next(u for u in usage.scan([team], base=team).uses if u.how == "call")
    verdict, why, _ = attribution.judge(attribution.Site(use, True, SIGNATURES["optax.adamw"]), config, [])
    assert verdict == "cannot-tell" and why.startswith(
        "passes weight_decay=0.0, the finding's weight_decay=0; it also needs a parameter that is NaN or inf"
    ), why


def test_a_contract_configuration_marker_rules_out_a_literal_that_is_not_it(tmp_path: Path) -> None:
    """The scheduled weight decay contract (test_add_decayed_weights_mask.py) declares
    configuration(weight_decay="a schedule"): a literal 0.1, 0.0 or the default 1e-4 is not a schedule;
    a variable may hold one."""
    verdicts, finding = _decay_report(tmp_path, configuration={"weight_decay": "a schedule"})
    assert finding["configuration"] == {"keywords": {"weight_decay": "a schedule"}}
    assert (
        finding["contract_rows"][0]["configuration"] == {"weight_decay": "a schedule"}
        if "contract_rows" in finding
        else True
    )
    assert verdicts == {
        "train.py:4": "not-affected",
        "train.py:5": "not-affected",
        "train.py:6": "cannot-tell",
        "train.py:7": "not-affected",
    }, verdicts


def test_the_composition_probe_says_which_arguments_reach_a_part_unchanged() -> None:
    pytest.importorskip("optax")
    proc = subprocess.run(
        [sys.executable, "-m", "optax_gate.kit.surface.composition"], capture_output=True, text=True, timeout=300
    )
    passes = json.loads(proc.stdout.strip().splitlines()[-1])["passes"]
    for path, arguments in PASSES.items():
        for name, parts in arguments.items():
            assert parts <= set(passes[path][name]), (path, name, passes[path])
    assert "b1" not in passes.get("optax.sgd", {})  # only arguments the constructor takes


def test_a_recipes_cannot_tell_names_what_the_run_would_need(tmp_path: Path) -> None:
    """A training recipe's finding says what it needs of the run (``call_sites.RECIPE_CONDITIONS``), for
    example a None gradient leaf where the params hold an array for Adam's None-gradient change, so that a
    team reading "cannot tell without --run" knows what to look for in its code."""
    from optax_gate.gate.team_code import call_sites

    rows = [
        {
            "id": "tests/contracts/test_training_recipes.py::test_a_none_gradient_leaf_gives_a_none_update",
            "api": "recipe:none-gradients",
            "change": "broken",
            "kind": "golden",
            "baseline": "passed",
            "candidate": "failed",
            "detail": "ValueError: pytree structure error: different types at key path tree_map tree['bias']",
        }
    ]
    config = configuration.configuration(rows)
    assert config["condition"] == call_sites.RECIPE_CONDITIONS["recipe:none-gradients"]
    (tmp_path / "train.py").write_text("import optax\ntx = optax.adam(1e-3)\n")
    use = next(u for u in usage.scan([tmp_path], base=tmp_path).uses if u.how == "call")
    verdict, why, _ = attribution.judge(attribution.Site(use, direct=True), config, [])
    assert verdict == "cannot-tell" and "a gradient leaf that is None" in why and "without --run" in why, why
    assert set(call_sites.RECIPE_CONDITIONS) <= set(call_sites.RECIPE_APIS)  # every condition is a recipe's


def test_a_derivative_corner_needs_a_derivative_with_respect_to_that_argument() -> None:
    """A finding about a derivative with respect to one argument (sigmoid_focal_loss's gradient with respect to
    ``labels`` turning non-finite, 0.2.8 -> main) needs that derivative of the team's call: the line names the
    argument and what decides it, never "not in its contracts' labels"."""
    use = usage.Use("train.py:20", "optax.sigmoid_focal_loss", "call", 2, (), False, (("0", "logits"), ("1", "y")))
    site = attribution.Site(use, True, (), "")
    config = configuration.configuration([_row("snapshot drift: corner.grad_wrt=labels: ok -> non-finite gradient")])
    verdict, why, _ = attribution.judge(site, config, [])
    assert verdict == "cannot-tell"
    assert "a derivative taken with respect to `labels` (jax.grad or jax.jvp over that argument)" in why, why
