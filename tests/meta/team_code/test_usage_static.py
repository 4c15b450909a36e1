"""``--usage`` alone (issue 39): what a call's literal form decides, and the one rule for what it cannot.

The team programs are small excerpts in the style of public code (Flax's examples, nanodo, big_vision);
the findings come from two run records built here, as ``compare`` would read them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from optax_gate.gate import assemble
from optax_gate.gate.base.run_record import RunRecord
from optax_gate.gate.judge import compare
from optax_gate.gate.report import your_code_line
from optax_gate.gate.surface.public_api import POSITIONAL, Param
from optax_gate.gate.team_code import arguments, attribution, binding, call_sites, configuration, scope, usage

#: optax 0.2.6's adamw (optax/_src/alias.py): learning_rate, b1, b2, eps, eps_root, mu_dtype, weight_decay=1e-4, mask
ADAMW = (
    Param("learning_rate", POSITIONAL),
    Param("b1", POSITIONAL, "0.9", "0.9"),
    Param("b2", POSITIONAL, "0.999", "0.999"),
    Param("eps", POSITIONAL, "1e-08", "1e-08"),
    Param("eps_root", POSITIONAL, "0.0", "0.0"),
    Param("mu_dtype", POSITIONAL, "None", "None"),
    Param("weight_decay", POSITIONAL, "0.0001", "0.0001"),
    Param("mask", POSITIONAL, "None", "None"),
)
#: a broken contract of adamw about weight_decay=0 (building with it raises in the candidate: the keyword alone decides)
EDGE = "snapshot drift: weight_decay=0/nan_inf_params: r1 -> build ValueError"


def _record(outcome: str, detail: str, configuration: dict[str, Any] | None = None) -> dict[str, Any]:
    row = {"api": "optax.adamw", "guide": "g", "kind": "golden", "outcome": outcome, "detail": detail}
    if configuration:
        row["configuration"] = json.dumps(configuration)
    return {
        "label": "x",
        "status": "ran",
        "reason": "",
        "versions": {},
        "contracts": {"test_edges.py::test_edge[optax.adamw]": row},
    }


def _gate(
    tmp_path: Path, files: dict[str, str], detail: str = EDGE, configuration: dict[str, Any] | None = None
) -> Any:
    """The report of a --usage compare of one broken adamw contract over the team's ``files``."""
    team = tmp_path / "team"
    team.mkdir(exist_ok=True)
    for name, text in files.items():
        (team / name).write_text(text)
    scan = usage.scan([team], base=team)
    report: Any = compare.compare(
        RunRecord.from_json(_record("passed", "", configuration)),
        RunRecord.from_json(_record("failed", detail, configuration)),
    )
    assert report["verdict"] == "fail"
    report["usage"] = scan.to_json()
    report = call_sites.annotated(report, scan)
    attribution.attribute(report, scan, attribution.Known({}, {}, {"optax.adamw": ADAMW}))
    unread = ", ".join(f"`{n.path}`: {n.reason}" for n in scan.not_scanned if n.content is None)
    scope.scope_findings(report, scope.usage_decision(unread))
    return assemble.with_scope(report, scope.scoped(report, "broken", by="usage"))


def _line(report: dict[str, Any], where: str) -> dict[str, Any]:
    return report["findings"][0]["your_code_attribution"][where]


# -- 1. one rule: what cannot be told is not verified, never FAIL ------

CANNOT = {
    "not scanned": {
        "train.py": "import optax\ntx = optax.adamw(1e-3, weight_decay=0.1)\n",
        "model.py": "import optax\ndef net(x, params) -> jnp.ndarray  # missing colon\n    return optax.adamw(1e-3)\n",
    },
    "dynamic argument": {"train.py": "import optax\ndef make(wd):\n    return optax.adamw(1e-3, weight_decay=wd)\n"},
    "star-args": {"train.py": "import optax\ndef make(*args, **kw):\n    return optax.adamw(*args, **kw)\n"},
    "aliasing": {
        "train.py": "import optax\nOPT = optax.adamw\ndef make(factory):\n    return factory(1e-3)\ntx = make(OPT)\n"
    },
    "name bound twice": {
        "train.py": "import optax\nwd = 0.1\nif True:\n    wd = 0.0\ntx = optax.adamw(1e-3, weight_decay=wd)\n"
    },
}


@pytest.mark.parametrize("case", sorted(CANNOT))
def test_what_cannot_be_told_is_not_verified_never_fail(tmp_path: Path, case: Any) -> None:
    report = _gate(tmp_path, CANNOT[case])
    assert report["verdict"] == "not-verified", (case, report["reasons"])
    assert report["reasons"][0].startswith("1 contract(s) broken where your code may go: 1 in F1 (")
    assert scope.undecided(
        report["findings"][0], "usage", {n["path"]: n["reason"] for n in report["usage"]["not_scanned"]}
    )


def test_a_file_that_does_not_parse_names_itself_and_why(tmp_path: Path) -> None:
    """The issue's folder: one missing colon turned NOT-VERIFIED into FAIL, "15 contract(s) broken where your code
    goes", tied to the team only by "cannot tell for files not scanned"."""
    report = _gate(tmp_path, CANNOT["not scanned"])
    assert report["reasons"][0] == (
        "1 contract(s) broken where your code may go: 1 in F1 (a file not scanned may use its APIs: "
        "`model.py`); not scanned: `model.py` (syntax error at line 2: expected ':'); the gate with "
        "--run (your training command) decides"
    )
    assert (
        _line(report, "train.py:2")["verdict"] == "not-affected"
    )  # the file that was read is ruled out: the other decides


def test_a_line_that_meets_the_finding_fails_whatever_else_cannot_be_told(tmp_path: Path) -> None:
    report = _gate(
        tmp_path,
        {
            "train.py": "import optax\ntx = optax.adamw(1e-3, weight_decay=0.0)\n",
            "model.py": "import optax\ndef f(:\n    optax.adamw\n",
        },
    )
    assert report["verdict"] == "fail" and _line(report, "train.py:2")["verdict"] == "affected"
    assert report["reasons"] == ["1 contract(s) broken"]


def test_lines_ruled_out_beside_a_line_that_cannot_be_told_are_not_verified(tmp_path: Path) -> None:
    """A finding with a not-affected line and a cannot-tell line is not the team's for sure: not verified, never
    FAIL."""
    report = _gate(
        tmp_path,
        {
            "train.py": "import optax\na = optax.adamw(1e-3, weight_decay=0.1)\ndef make(wd):\n    return "
            "optax.adamw(1e-3, weight_decay=wd)\n"
        },
    )
    assert {w: a["verdict"] for w, a in report["findings"][0]["your_code_attribution"].items()} == {
        "train.py:2": "not-affected",
        "train.py:4": "cannot-tell",
    }
    assert report["verdict"] == "not-verified"


def test_a_surface_break_only_a_file_not_scanned_may_meet_is_not_verified() -> None:
    report: Any = {
        "verdict": "pass",
        "reasons": [],
        "findings": [],
        "contracts": [],
        "usage": {"not_scanned": [{"path": "bad.py", "reason": "syntax error at line 3: invalid syntax"}]},
        "surface": {"rows": [{"path": "optax.huber_loss", "verdict": "cannot-tell", "not_scanned": ["bad.py"]}]},
    }
    report = assemble.with_scope(report, scope.scoped(report, "broken", by="usage"))
    assert report["verdict"] == "not-verified"
    assert (
        "optax.huber_loss" in report["reasons"][0]
        and "`bad.py` (syntax error at line 3: invalid syntax)" in report["reasons"][0]
    )


# -- 2. what the literal form decides, and which argument decided it ------

DECIDED = [
    # (call, verdict, decided by, words in why)
    ("optax.adamw(1e-3)", "not-affected", "weight_decay", "does not pass weight_decay (default 0.0001)"),
    (
        "optax.adamw(1e-3, weight_decay=0)",
        "affected",
        "weight_decay",
        "passes weight_decay=0, the finding's weight_decay=0",
    ),
    ("optax.adamw(1e-3, 0.9, 0.999, 1e-8, 0.0, None, 0.0)", "affected", "weight_decay", "passes weight_decay=0.0"),
    ("optax.adamw(1e-3, 0.9, 0.999, 1e-8, 0.0, None, 0.5)", "not-affected", "weight_decay", "passes weight_decay=0.5"),
    ("optax.adamw(LR, weight_decay=WD)", "affected", "weight_decay", "passes weight_decay=WD (`WD = 0.0` (line 3))"),
    (
        "optax.adamw(1e-3, weight_decay=optax.linear_schedule(0.1, 0.0, 10))",
        "cannot-tell",
        "weight_decay",
        "a schedule; whether it takes the value 0 is known at run time",
    ),
    ("functools.partial(optax.adamw, weight_decay=0.1)", "not-affected", "weight_decay", "passes weight_decay=0.1"),
    (
        "functools.partial(optax.adamw, b1=0.8)",
        "cannot-tell",
        "weight_decay",
        "a functools.partial that does not fix weight_decay",
    ),
    ("adamw_alias(1e-3, weight_decay=0.5)", "not-affected", "weight_decay", "passes weight_decay=0.5"),
]


@pytest.mark.parametrize("call, verdict, by, words", DECIDED, ids=[c for c, *_ in DECIDED])
def test_the_literal_form_decides_and_says_which_argument(
    tmp_path: Path, call: Any, verdict: Any, by: Any, words: Any
) -> None:
    text = (
        "import functools\nimport optax\nWD = 0.0\nLR = 1e-3\nadamw_alias = optax.adamw\n\ndef make():\n    "
        f"return {call}\n"
    )
    report = _gate(tmp_path, {"train.py": text})
    got = _line(report, "train.py:8")
    assert got["verdict"] == verdict and got.get("decided_by", "") == by and words in got["why"], got
    # the alias line is no use of its own where every read of the alias is a call, named at its own line;
    # an alias never read here may be imported elsewhere: a use that cannot be told
    alias = report["findings"][0]["your_code_attribution"].get("train.py:5")
    assert alias is None if "adamw_alias(" in call else alias["verdict"] == "cannot-tell"


def test_a_schedule_is_told_from_a_number_by_the_call_that_builds_it(tmp_path: Path) -> None:
    """``adamw(1e-2, weight_decay=optax.linear_schedule(0.5, 0.0, 10))`` is exactly the configuration of the
    finding "weight_decay=a schedule": the call that builds the argument tells a schedule from a number,
    never "cannot tell (known at run time)"."""
    calls = {
        "optax.linear_schedule(0.5, 0.0, 10)": "affected",
        "SCHED": "affected",
        "lambda step: 0.1": "affected",
        "step_fn": "affected",
        "0.1": "not-affected",
        "cfg.wd": "cannot-tell",
    }
    for arg, verdict in calls.items():
        text = (
            f"import optax\nSCHED = optax.cosine_decay_schedule(0.1, 100)\ndef step_fn(step):\n    return 0.1\n"
            f"def make(cfg):\n    return optax.adamw(1e-2, weight_decay={arg})\n"
        )
        report = _gate(tmp_path, {"train.py": text}, "assert 1 == 0", {"weight_decay": "a schedule"})
        assert _line(report, "train.py:6")["verdict"] == verdict, (arg, _line(report, "train.py:6"))


def test_an_argument_not_passed_cannot_meet_a_change_to_how_it_is_passed(tmp_path: Path) -> None:
    """The issue: optax.huber_loss(pred, y) does not pass delta, so delta becoming keyword-only cannot reach it
    (tests/contracts/test_losses.py: configuration(delta="passed positionally"))."""
    config = {"keywords": {"delta": attribution.POSITIONALLY}}
    huber = (
        Param("predictions", POSITIONAL),
        Param("targets", POSITIONAL, "None", "None"),
        Param("delta", POSITIONAL, "1.0", "1.0"),
    )
    for call, verdict in (
        ("optax.huber_loss(p, y)", "not-affected"),
        ("optax.huber_loss(p, y, delta=2.0)", "not-affected"),
        ("optax.huber_loss(p, y, 2.0)", "affected"),
        ("optax.huber_loss(*a)", "cannot-tell"),
    ):
        (tmp_path / "t.py").write_text(f"import optax\ndef f(p, y, a):\n    return {call}\n")
        use = next(u for u in usage.scan([tmp_path / "t.py"], base=tmp_path).uses if u.how == "call")
        got, why, by = attribution.judge(attribution.Site(use, True, huber), config, [])
        assert (got, by) == (verdict, "delta"), (call, got, why)


def test_scopes_follow_a_name_only_where_python_would(tmp_path: Path) -> None:
    text = """import optax
LR = 1e-3
class Trainer:
    LR = 5.0
    def make(self):
        return optax.sgd(LR)
def outer():
    lr = 0.5
    def inner():
        return optax.sgd(lr)
    return inner
def loop():
    for lr in (0.1, 0.2):
        optax.sgd(lr)
def rebinds():
    global LR2
    LR2 = 1.0
LR2 = 2.0
optax.sgd(LR2)
"""
    (tmp_path / "t.py").write_text(text)
    got = {u.where: u.args[0][1] for u in usage.scan([tmp_path / "t.py"], base=tmp_path).uses if u.how == "call"}
    assert (got["t.py:6"].kind, got["t.py:6"].value) == ("literal", "0.001")  # a class body is not seen from a method
    assert (got["t.py:10"].kind, got["t.py:10"].value) == ("literal", "0.5")  # the enclosing function's name
    assert got["t.py:14"].kind == "unknown" and "loop" in got["t.py:14"].why
    assert got["t.py:19"].kind == "unknown" and "bound 2 times" in got["t.py:19"].why


def test_a_notebooks_cells_are_one_module(tmp_path: Path) -> None:
    cells = [
        {
            "cell_type": "code",
            "source": ["import optax\n", "WD = 0.5\n"],
            "metadata": {},
            "outputs": [],
            "execution_count": 1,
        },
        {
            "cell_type": "code",
            "source": ["tx = optax.adamw(1e-3, weight_decay=WD)\n"],
            "metadata": {},
            "outputs": [],
            "execution_count": 2,
        },
    ]
    (tmp_path / "nb.ipynb").write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    (call,) = [u for u in usage.scan([tmp_path], base=tmp_path).uses if u.how == "call"]
    arg = dict(call.args)["weight_decay"]
    assert (arg.kind, arg.value) == ("literal", "0.5") and "code cell 1" in arg.via


def test_an_api_the_baseline_lacks_called_by_the_team_does_not_crash_the_surface_match() -> None:
    """Optax's own examples call optax.microbatching.microbatch, new in 0.2.8: the gate failed with a KeyError."""
    from optax_gate.gate.surface import public_api

    entry = public_api.Entry(
        "optax.microbatching.microbatch",
        "function",
        "optax.microbatching.microbatch",
        params=(Param("fn", POSITIONAL),),
    )
    rows: list[dict[str, Any]] = [
        {"path": "optax.microbatching.microbatch", "change": "added", "param": None, "old": None, "new": "fn"}
    ]
    binding.match([usage.Use("ex.py:3", "optax.microbatching.microbatch", "call", 1)], rows, {}, {entry.path: entry})
    assert rows[0]["sites"] == []


# -- 3. a recipe's finding in the team's words ------


def test_a_recipe_finding_says_what_changes_for_a_program_that_does_what_the_recipe_does(tmp_path: Path) -> None:
    row = {
        "api": "recipe:none-gradients",
        "guide": "g",
        "kind": "golden",
        "outcome": "failed",
        "detail": "ValueError: pytree structure error: different types at key path tree_map tree['bias']",
    }
    base = {
        "label": "x",
        "status": "ran",
        "reason": "",
        "versions": {},
        "contracts": {"test_training_recipes.py::test_none": {**row, "outcome": "passed", "detail": ""}},
    }
    cand = {**base, "contracts": {"test_training_recipes.py::test_none": row}}
    (tmp_path / "train.py").write_text("import optax\ntx = optax.adamw(1e-2)\nclip = optax.clip_by_global_norm(1.0)\n")
    scan = usage.scan([tmp_path], base=tmp_path)
    report: Any = compare.compare(RunRecord.from_json(base), RunRecord.from_json(cand))
    report = call_sites.annotated(report, scan)
    attribution.attribute(report, scan, attribution.Known({}, {}, {"optax.adamw": ADAMW}))
    got = report["findings"][0]["your_code_attribution"]["train.py:2"]
    assert got["verdict"] == "cannot-tell" and got["calls"] == "builds optax.adamw"
    assert got["why"].startswith(
        "whether your run has a gradient leaf that is None where the params hold an array is known"
    ), got
    # what it changes is said once for the finding, not on each of its lines
    assert report["findings"][0]["your_code_recipe"].startswith(
        "if your run has a gradient leaf that is None where the params hold an array: the optimizer now "
        "raises ValueError"
    )
    text = your_code_line.attributed_lines(report["findings"][0])
    assert text.count("the optimizer now raises ValueError") == 1 and "`train.py:2` builds optax.adamw" in text


RECIPES = [
    # (recipe, its contract's configuration marker, the team's call, verdict)
    ("recipe:zero-clip-threshold", {"max_norm": "0"}, "optax.clip_by_global_norm(1.0)", "not-affected"),
    ("recipe:zero-clip-threshold", {"max_norm": "0"}, "optax.clip_by_global_norm(max_norm=0.0)", "affected"),
    ("recipe:scan-carry(mu-bfloat16)", {"mu_dtype": "bfloat16"}, "optax.adamw(1e-3)", "not-affected"),
    (
        "recipe:scan-carry(mu-bfloat16)",
        {"mu_dtype": "bfloat16"},
        "optax.adamw(1e-3, mu_dtype=jnp.bfloat16)",
        "cannot-tell",
    ),
]


@pytest.mark.parametrize("recipe, marker, call, verdict", RECIPES, ids=[f"{r}:{c}" for r, _, c, _ in RECIPES])
def test_a_recipe_names_a_line_only_where_its_call_matches_the_recipes_configuration(
    tmp_path: Path, recipe: Any, marker: Any, call: Any, verdict: Any
) -> None:
    """A recipe's configuration marker (tests/contracts/test_training_recipes.py) decides what the call's literal form
    decides: clip_by_global_norm(1.0) is not reached by the zero-threshold recipe; a bfloat16 moment still needs the
    state carried through lax.scan (the run decides)."""
    row = {
        "api": recipe,
        "guide": "g",
        "kind": "golden",
        "outcome": "failed",
        "detail": "assert 1 == 0",
        "configuration": json.dumps(marker),
    }
    base = {
        "label": "x",
        "status": "ran",
        "reason": "",
        "versions": {},
        "contracts": {"test_training_recipes.py::test_r": {**row, "outcome": "passed", "detail": ""}},
    }
    cand = {**base, "contracts": {"test_training_recipes.py::test_r": row}}
    (tmp_path / "train.py").write_text(f"import jax.numpy as jnp\nimport optax\ntx = {call}\n")
    scan = usage.scan([tmp_path], base=tmp_path)
    report: Any = compare.compare(RunRecord.from_json(base), RunRecord.from_json(cand))
    report = call_sites.annotated(report, scan)
    clip = (Param("max_norm", POSITIONAL),)
    attribution.attribute(
        report, scan, attribution.Known({}, {}, {"optax.adamw": ADAMW, "optax.clip_by_global_norm": clip})
    )
    got = report["findings"][0]["your_code_attribution"]["train.py:3"]
    assert got["verdict"] == verdict, got


def test_arguments_read_names_nonfinite_literals() -> None:
    import ast

    scopes = arguments.Scopes([(ast.parse("import jax.numpy as jnp\nx = jnp.nan\n"), "t.py:")], lambda node: None)
    inf, nan = ast.parse("float('inf')").body[0], ast.parse("jnp.nan").body[0]
    assert isinstance(inf, ast.Expr) and isinstance(nan, ast.Expr)
    assert scopes.read(inf.value).value == "inf"
    assert scopes.read(nan.value).value == "nan"


# -- the docs' promises ------


def _doc_rows() -> Any:
    from pathlib import Path

    text = (Path(__file__).parents[3] / "docs" / "beyond-contracts.md").read_text(encoding="utf-8")
    table = text.split("<!-- usage-decisions: begin -->", 1)[1].split("<!-- usage-decisions: end -->", 1)[0]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in table.strip().splitlines()[2:]]
    assert len(rows) >= 10
    return rows


@pytest.mark.parametrize("row", _doc_rows(), ids=lambda r: r[0])
def test_the_docs_table_of_what_usage_decides_is_what_it_decides(tmp_path: Path, row: Any) -> None:
    """docs/beyond-contracts.md, "What --usage decides from the code alone": each row run as written."""
    call, about, verdict, by = row
    code = call.split("`")[1]
    name, _, want = about.strip("`").partition("=")
    prelude = "import functools\nimport optax\n" + ("WD = 0.1\n" if "WD = 0.1" in call else "WD = None\n")
    (tmp_path / "t.py").write_text(prelude + f"def f(p, y, wd):\n    return {code}\n")
    use = next(
        u
        for u in usage.scan([tmp_path / "t.py"], base=tmp_path).uses
        if u.how == "call" and u.path != "optax.linear_schedule"
    )
    params = (
        ADAMW
        if "adamw" in code
        else (
            Param("predictions", POSITIONAL),
            Param("targets", POSITIONAL, "None", "None"),
            Param("delta", POSITIONAL, "1.0", "1.0"),
        )
    )
    got, why, decided = attribution.judge(attribution.Site(use, True, params), {"keywords": {name: want}}, [])
    assert got == verdict.replace(" ", "-").replace("cannot-tell", "cannot-tell"), (row, why)
    assert decided == by.split("`")[1], (row, decided)


def test_the_readme_says_usage_alone_never_fails_on_what_it_cannot_tell() -> None:
    from pathlib import Path

    readme = " ".join((Path(__file__).parents[3] / "README.md").read_text(encoding="utf-8").split())
    assert "with `--usage` alone, broken contracts that no line of yours is affected by" in readme
    assert "a file that could not be scanned; never 1 for those" in readme


# -- inputs of a first use ------


def test_an_import_the_team_guards_with_except_import_error_does_not_break() -> None:
    """An import guarded as in ``try: from optax import monte_carlo / except ImportError: monte_carlo =
    None`` does not break: the fallback runs instead, never FAIL with "removed in the candidate →
    ImportError"."""
    import ast

    from optax_gate.gate.surface import public_api

    text = (
        "try:\n    from optax import monte_carlo\nexcept ImportError:\n    monte_carlo = None\n"
        "import optax\nfrom optax import contrib\n\ndef f():\n    return monte_carlo.score_function_jacobians "
        "if monte_carlo else None\n"
    )
    scanner = usage.Scanner()
    tree = ast.parse(text)
    scanner.imports(tree, "misc.py:")
    scanner.scopes = arguments.Scopes([(tree, "misc.py:")], scanner._dotted)
    scanner.expressions(tree, "misc.py:")
    rows: list[dict[str, Any]] = [
        {"path": "optax.monte_carlo", "change": "removed", "param": None, "old": "module", "new": None},
        {"path": "optax.contrib", "change": "removed", "param": None, "old": "module", "new": None},
    ]
    old = {p: public_api.Entry(p, "module", p) for p in ("optax.monte_carlo", "optax.contrib")}
    binding.match(scanner.uses, rows, old, {})
    guarded, plain = rows
    assert not guarded["breaks"] and {s["verdict"] for s in guarded["sites"]} == {"affected"}, guarded["sites"]
    assert "imported under try/except ImportError" in guarded["sites"][0]["note"]
    assert plain["breaks"]  # the same removal, imported without a guard, still breaks


def test_a_removed_package_a_declared_package_of_the_team_may_bring_cannot_be_told() -> None:
    """A removed package that a package the team declares may bring cannot be told, never FAIL: for
    example big_vision imports chex in its tests and declares distrax (which requires chex), and the gate
    does not install distrax, so "broken dependency chex" cannot be told."""
    from optax_gate.gate.diffs import dependencies

    base = "chex==0.1.91 \\\n    --hash=sha256:aa\n    # via optax\noptax==0.2.6 \\\n    --hash=sha256:bb\n"
    cand = "optax==0.2.8 \\\n    --hash=sha256:cc\n"
    imported = {"chex": ["bv/utils_test.py:22"]}
    (row,) = [
        r for r in dependencies.diff(base, cand, None, imported, {"distrax": "requirements.txt"}) if r["name"] == "chex"
    ]
    assert not row["breaks"] and row["may_come_with"] == ["distrax"] and "may bring chex: cannot tell" in row["uses"][0]
    (alone,) = [r for r in dependencies.diff(base, cand, None, imported, {}) if r["name"] == "chex"]
    assert alone["breaks"]  # nothing declared that could bring it: it breaks
    report: Any = {
        "verdict": "pass",
        "reasons": [],
        "findings": [],
        "contracts": [],
        "dependencies": {"rows": [{**row, "verdict": "cannot-tell"}]},
    }
    report = assemble.with_scope(report, scope.scoped(report, "broken", by="usage"))
    assert report["verdict"] == "not-verified" and "your project declares distrax" in report["reasons"][0]


def test_a_partial_bound_once_and_called_is_judged_where_it_is_called(tmp_path: Path) -> None:
    """A partial bound once and called, as ``adamw_b1 = functools.partial(optax.adamw, b1=0.8)`` then
    ``adamw_b1(1e-3, weight_decay=0.0)``, is judged where it is called, the calls named, not "cannot tell: the
    call of the partial may pass it" at the partial's line."""
    text = (
        "import functools\nimport optax\nLR, WD = 1e-3, 0.0\nadamw_b1 = functools.partial(optax.adamw, b1=0.8)\n"
        "def make():\n    return adamw_b1(LR, weight_decay=WD), adamw_b1(LR, weight_decay=0.5)\n"
    )
    report = _gate(tmp_path, {"train.py": text})
    got = report["findings"][0]["your_code_attribution"]
    assert set(got) == {"train.py:6"} and got["train.py:6"]["verdict"] == "affected", (
        got
    )  # one line, the most severe call
    assert "`WD = 0.0` (line 3)" in got["train.py:6"]["why"]  # a tuple of literals unpacked: each name its element


def test_a_cannot_tell_says_what_the_contracts_ran_and_a_new_api_is_named_as_new(tmp_path: Path) -> None:
    """A "cannot tell" says what the contracts ran (for the lbfgs finding, update with an unknown keyword now
    raising TypeError, "its contracts ran it with `unknown_kwarg`"), and a call of an API new in the candidate is
    affected, named as new, never a bare "cannot tell"."""
    rows = [
        {
            "id": "test_surface.py::test_protocol[optax.lbfgs-unknown_kwarg]",
            "api": "optax.lbfgs",
            "change": "broken",
            "kind": "golden",
            "detail": "now raises TypeError (ok in the baseline)",
        }
    ]
    (tmp_path / "t.py").write_text("import optax\ntx = optax.lbfgs()\n")
    use = next(u for u in usage.scan([tmp_path / "t.py"], base=tmp_path).uses if u.how == "call")
    verdict, why, _ = attribution.judge(attribution.Site(use, True), configuration.configuration(rows), [])
    assert verdict == "cannot-tell" and "(its contracts ran it with `unknown_kwarg`)" in why, why
    new = configuration.configuration(
        [{**rows[0], "id": "test_surface.py::test_new_api[optax.microbatch]", "change": "new"}]
    )
    verdict, why, _ = attribution.judge(attribution.Site(use, True), new, [])
    assert (verdict, why) == ("affected", "calls an API the baseline does not have (new in the candidate)")


def test_an_import_of_a_module_gone_from_the_candidate_breaks_unless_guarded(tmp_path: Path) -> None:
    """``from optax.monte_carlo import X`` under try/except ImportError does not break: the fallback runs, as the
    surface row says, never "cannot tell (not a call)" (NOT-VERIFIED). Unguarded it breaks, and the verdict's reason
    says so, as the finding and the surface row do, never "cannot tell"."""
    row = {
        "api": "optax.monte_carlo.score_function_jacobians",
        "guide": "g",
        "kind": "golden",
        "outcome": "failed",
        "detail": "ModuleNotFoundError: No module named 'optax.monte_carlo'",
    }
    base = {
        "label": "x",
        "status": "ran",
        "reason": "",
        "versions": {},
        "contracts": {"test_mc.py::test_known": {**row, "outcome": "passed", "detail": ""}},
    }
    cand = {**base, "contracts": {"test_mc.py::test_known": row}}
    (tmp_path / "a.py").write_text(
        "try:\n    from optax.monte_carlo import score_function_jacobians\nexcept ImportError:\n    "
        "score_function_jacobians = None\n"
    )
    (tmp_path / "b.py").write_text("from optax.monte_carlo import score_function_jacobians\n")
    scan = usage.scan([tmp_path], base=tmp_path)
    report: Any = compare.compare(RunRecord.from_json(base), RunRecord.from_json(cand))
    report = call_sites.annotated(report, scan)
    attribution.attribute(report, scan, attribution.Known())
    got = report["findings"][0]["your_code_attribution"]
    assert got["a.py:2"]["verdict"] == "not-affected" and "your fallback runs" in got["a.py:2"]["why"], got
    assert got["b.py:1"]["verdict"] == "affected" and "ModuleNotFoundError" in got["b.py:1"]["why"], got


def test_a_finding_joined_to_a_surface_break_of_the_teams_line_is_decided() -> None:
    """A finding that holds a surface break of the team's line is decided: an unguarded ``from optax import
    monte_carlo`` fails the gate with a reason saying it breaks, never "broken where your code may go ... (your
    lines: cannot tell)"."""
    finding: Any = {
        "your_code": ["nb.ipynb:code cell 2 (cell 3 of the notebook):4"],
        "your_code_attribution": {},
        "parts": [{"section": "contracts", "change": "broken"}, {"section": "surface", "change": "broken"}],
    }
    assert scope.undecided(finding, "usage") == []
    assert scope.undecided({**finding, "parts": finding["parts"][:1]}, "usage") == [
        "your lines: cannot tell without --run"
    ]
