"""Whose finding is it (``optax_gate.gate.team_code.scope``): with ``--usage`` a broken
finding on an API the team's code does not use is listed under "Optax changed
elsewhere" and does not set the verdict; ``--fail-on all`` keeps the old
verdict; without a scope every finding is the team's. The fake team
(``tests/meta/fake_team``) calls ``optax.clip`` and ``optax.swap`` and never
``optax.adamw`` (read by hand)."""

import copy
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("griffe", reason="griffe comes with the tools lock (requirements-tools.txt)")

from optax_gate.gate import assemble
from optax_gate.gate.inputs.options import ScopeOptions
from optax_gate.gate.judge import compare
from optax_gate.gate.report import markdown as report_markdown
from optax_gate.gate.surface import public_api
from optax_gate.gate.team_code import scope, usage
from tests.meta.support.call_site_runs import traced_runs
from tests.meta.support.records import judged

ROOT = Path(__file__).resolve().parents[3]

TEAM = Path(__file__).parents[1] / "fake_team"


def _report(only_adamw: bool = False, scan: bool = True, fail_on: str | None = None, team: Path = TEAM) -> Any:
    base, cand = traced_runs()
    if only_adamw:  # the two contracts of the APIs the team calls pass again: only adamw's is broken
        for cid in ("golden_b", "golden_c"):
            cand["contracts"][cid]["outcome"] = "passed"
    the_scan = usage.scan([team]) if scan else None
    report = judged(base, cand, ScopeOptions(usage_scan=the_scan))
    return assemble.with_scope(
        report,
        scope.apply_options(
            report, ScopeOptions(fail_on=fail_on or "broken", usage_scan=the_scan), public_api.DEFAULT_PACKAGES
        ),
    )


def test_a_broken_finding_the_team_does_not_reach_is_elsewhere_and_does_not_fail_the_gate() -> None:
    report = _report(only_adamw=True)
    (f,) = report["findings"]
    assert (
        f["api"] == "optax.adamw" and f["scope"] == "elsewhere" and f["scope_why"] == "your code does not use its APIs"
    )
    assert report["verdict"] == "pass" and report["reasons"] == []
    assert report["scope"] == {"by": "usage", "fail_on": "broken", "elsewhere": 1, "broken_elsewhere": 1}
    assert any("1 broken contract(s) where your code does not go (usage)" in n for n in report["notes"])
    text = report_markdown.render(report)
    assert text.startswith("# Optax upgrade gate: PASS")
    assert "## Findings" not in text
    section = text.split("## Optax changed elsewhere (1)\n\n", 1)[1].split("\n## ", 1)[0]
    assert "do not set the verdict" in section and "**broken** `optax.adamw`" in section
    # "Your code does not reach these" also heads a finding whose line calls the API but is not affected
    assert "it calls none of their APIs, or every call's arguments rule the change out" in section, section


def test_the_teams_findings_set_the_verdict_and_come_before_those_elsewhere() -> None:
    report = _report()
    got = [(f["number"], f["api"], f["scope"]) for f in report["findings"]]
    assert got == [(1, "jax.jit+optax.swap", "yours"), (2, "optax.clip", "yours"), (3, "optax.adamw", "elsewhere")]
    # every line of the team's is "cannot tell without --run": no evidence either way, so not verified, not fail
    assert report["verdict"] == "not-verified"
    assert report["reasons"] == [
        "2 contract(s) broken where your code may go: 1 in F1 (your lines: cannot tell "
        "without --run), 1 in F2 (your lines: cannot tell without --run); the gate with --run "
        "(your training command) decides"
    ]
    text = report_markdown.render(report)
    assert text.index("## Findings (2)") < text.index("## Optax changed elsewhere (1)") < text.index("## Versions")
    assert '<a id="f3-1"></a>[F3](#f3) `golden_a`' in text  # the rows follow the numbers


def test_fail_on_all_keeps_todays_verdict() -> None:
    report = _report(only_adamw=True, fail_on="all")
    assert report["findings"][0]["scope"] == "elsewhere"  # still listed as elsewhere...
    assert report["verdict"] == "fail" and report["reasons"] == ["1 contract(s) broken"]  # ...but it sets the verdict
    assert report["scope"]["fail_on"] == "all" and report["scope"]["broken_elsewhere"] == 0


def test_without_usage_every_finding_is_the_teams() -> None:
    report = _report(only_adamw=True, scan=False)
    assert [f["scope"] for f in report["findings"]] == ["yours"]
    assert report["verdict"] == "fail" and report["scope"]["by"] is None
    assert "Optax changed elsewhere" not in report_markdown.render(report)


def test_a_file_that_could_not_be_read_may_use_anything_so_every_finding_is_not_verified(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file under --usage that cannot be read may use any API: every finding is not verified, the reason
    naming the file and why. (A dangling symlink does not serve here: there is no file behind it, so no
    code.)"""
    from optax_gate.gate.inputs import usage_files

    team = tmp_path / "team"
    team.mkdir()
    (team / "secret.py").write_text("import optax\n")
    read = usage_files.read_file
    monkeypatch.setattr(
        usage_files,
        "read_file",
        lambda path: "unreadable: permission denied" if path.name == "secret.py" else read(path),
    )
    report = _report(only_adamw=True, team=team)
    # issue 39: what cannot be read cannot be told: not verified, never FAIL, with the file and why
    assert report["findings"][0]["scope"] == "yours" and report["verdict"] == "not-verified"
    assert "a file under --usage could not be read: it may use any API (`" in report["reasons"][0]
    assert "secret.py`: unreadable: permission denied)" in report["reasons"][0]


def test_not_verified_is_never_scoped_into_a_pass() -> None:
    report: Any = {
        "verdict": "not-verified",
        "reasons": ["candidate not verified: x"],
        "findings": [{"number": 1, "change": "broken", "contracts": ["a"], "section": "contracts"}],
    }
    scope.set_scope(report["findings"][0], "elsewhere", "not reached")
    report = assemble.with_scope(report, scope.scoped(report, "broken", by="run"))
    assert report["verdict"] == "not-verified" and report["reasons"] == ["candidate not verified: x"]


def test_another_source_of_evidence_sets_the_scope_first() -> None:
    """The traced run (``--run``) scopes each finding itself; ``--usage`` is then not consulted."""
    base, cand = traced_runs()
    the_scan = usage.scan([TEAM])
    report = judged(base, cand, ScopeOptions(usage_scan=the_scan))
    for f in report["findings"]:
        scope.set_scope(f, "elsewhere" if f["api"] != "optax.clip" else "yours", "the run")
    given, kept = report, copy.deepcopy(report)
    report = assemble.with_scope(
        given, scope.apply_options(given, ScopeOptions(usage_scan=the_scan), public_api.DEFAULT_PACKAGES, by="run")
    )
    assert given == kept and report != kept  # a copy with the scope: the report it was given is as it was
    assert [(f["api"], f["scope"]) for f in report["findings"]] == [
        ("optax.clip", "yours"),
        ("jax.jit+optax.swap", "elsewhere"),
        ("optax.adamw", "elsewhere"),
    ]
    assert report["reasons"] == ["1 contract(s) broken where your code goes (run): 1 in F1"]
    with pytest.raises(ValueError):
        scope.set_scope(report["findings"][0], "mine")


def test_report_json_with_scopes_follows_the_schema() -> None:
    jsonschema = pytest.importorskip(
        "jsonschema", reason="jsonschema comes with the tools lock (requirements-tools.txt)"
    )
    from optax_gate.gate.report import json_file as report_json
    from tests.meta.support.schema_and_locks import SCHEMA

    jsonschema.validate(json.loads(report_json.render(_report())), json.loads(SCHEMA.read_text()))


def test_the_gate_and_the_action_take_fail_on_all(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from optax_gate.action import run
    from optax_gate.gate import cli_parser

    assert cli_parser.parser().parse_args(["gate", "--fail-on", "all"]).fail_on == "all"
    assert cli_parser.parser().parse_args(["gate"]).fail_on == "broken"
    assert cli_parser.parser().parse_args(["compare", "a.json", "b.json", "--fail-on", "all"]).fail_on == "all"
    monkeypatch.setenv("INPUT_FAIL_ON", "all")
    assert run.gate_args(tmp_path)[-2:] == ["--fail-on", "all"]
    monkeypatch.setenv("INPUT_FAIL_ON", "broken")
    assert "--fail-on" not in run.gate_args(tmp_path)


def _verdict_of(found: list[dict[str, Any]], by: str = "usage") -> Any:
    report: Any = {"verdict": "fail", "reasons": ["3 contract(s) broken"], "notes": [], "findings": found}
    return assemble.with_scope(report, scope.scoped(report, "broken", by))


def test_the_broken_row_of_a_joined_changed_finding_sets_the_verdict_and_is_counted_once() -> None:
    """A known defect that now raises is one ``changed`` finding holding a broken and a fixed row
    (``causes.merge``): its broken row counts where the team's code goes, and only the broken rows
    are counted (never "2 + 37 broken of 34")."""
    joined = {
        "section": "contracts",
        "change": "changed",
        "contracts": ["a", "b"],
        "changes": {"broken": 1, "fixed": 1},
        "scope": "yours",
        "api": "optax.adam",
    }
    other = {
        "section": "contracts",
        "change": "broken",
        "contracts": ["c", "d"],
        "scope": "elsewhere",
        "api": "optax.lion",
    }
    report = _verdict_of([joined, other])
    assert report["verdict"] == "fail"
    # the number matches the findings: the joined finding reads "changed", its broken row is named
    assert report["reasons"] == [
        "1 contract(s) broken where your code goes (usage): 1 in F1 (1 of its 2 contracts broke, 1 fixed)"
    ]
    assert report["scope"]["broken_elsewhere"] == 2
    joined["scope"], other["scope"] = "elsewhere", "yours"
    report = _verdict_of([joined, other])
    assert report["scope"]["broken_elsewhere"] == 1
    assert report["reasons"] == ["2 contract(s) broken where your code goes (usage): 2 in F1"]


def test_a_recipe_finding_reaches_the_code_that_uses_what_the_recipe_is_built_from() -> None:
    """A contract pinning a training recipe (``recipe:none-gradients``: adamw, clip and a schedule
    together) reaches the code through the recipe's APIs (``call_sites.RECIPE_APIS``): code using none
    of them is elsewhere (a file calling only ``optax.sgd`` does not FAIL from Adam's None-gradient
    change); code using one is the team's, its lines named (``your_code``, from the same table). A
    recipe the table lacks stays the team's, fail closed. ``optax.adam`` is in the table, so an adam
    user with a None gradient leaf does not PASS."""
    from optax_gate.gate.team_code import call_sites

    decide: Any = scope.usage_decision(unread=False)  # a finding's (scope, why), never None here
    recipe: Any = {
        "section": "contracts",
        "change": "changed",
        "api": "recipe:none-gradients",
        "apis": ["recipe:none-gradients"],
        "contracts": ["a"],
        "your_code": [],
    }
    got = decide(recipe)
    assert got[0] == "elsewhere" and "optax.adamw" in got[1], got
    assert decide({**recipe, "your_code": ["train.py:3"]}) == ("yours", "your code uses its APIs")
    unknown = decide({**recipe, "api": "recipe:new-recipe", "apis": ["recipe:new-recipe"]})
    assert unknown[0] == "yours" and "cannot be told without --run" in unknown[1]
    assert decide({**recipe, "api": "optax.adam", "apis": ["optax.adam"]}) == (
        "elsewhere",
        "your code does not use its APIs",
    )
    assert {"optax.adam", "optax.adamw"} <= set(call_sites.apis_of("recipe:none-gradients"))


def test_a_recipe_reaches_code_through_what_it_adds_to_the_base_recipe(tmp_path: Path) -> None:
    """A recipe reaches code through what it adds to the base recipe (MultiSteps; the transformations
    a None gradient leaf goes through), and the sites it names are the team's uses of those APIs
    only. Teams the 0.2.8 upgrade does not change are not failed by recipes: a float32 team calling
    ``clip_by_global_norm`` and ``adam`` (it trains bit for bit the same) is not reached by the
    MultiSteps recipe, nor a file calling only ``optax.sgd`` and ``optax.apply_updates`` by the
    None-gradient recipe."""
    from optax_gate.gate.team_code import call_sites

    decide: Any = scope.usage_decision(unread=False)  # a finding's (scope, why), never None here
    team = tmp_path / "team"
    team.mkdir()
    (team / "train.py").write_text(
        "import optax\n\ntx = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-3))\np = "
        "optax.apply_updates({}, {})\ns = optax.sgd(0.1)\n"
    )
    scan = usage.scan([team], base=team)
    for label, uses in [
        ("recipe:multisteps(adamw+warmup-cosine+clip)", []),
        ("recipe:scan-carry(multisteps)", []),
        ("recipe:none-gradients", ["train.py:3"]),
        ("recipe:zero-clip-threshold", ["train.py:3"]),
        ("recipe:adamw+warmup-cosine+clip", ["train.py:3"]),
    ]:
        sites = call_sites.sites(scan, call_sites.apis_of(label))
        assert sites == uses, (label, sites)
        finding: Any = {
            "section": "contracts",
            "change": "broken",
            "api": label,
            "apis": [label],
            "contracts": ["a"],
            "your_code": sites,
        }
        assert decide(finding)[0] == ("yours" if uses else "elsewhere"), label
    assert "optax.apply_updates" not in call_sites.apis_of("recipe:none-gradients")
    assert call_sites.apis_of("recipe:multisteps(adamw+warmup-cosine+clip)") == ["optax.MultiSteps"]


def test_each_recipe_contract_carries_the_label_of_what_it_runs() -> None:
    """``test_state_snapshot[multi-steps]`` snapshots MultiSteps' state but carried the module's
    base-recipe label: MultiSteps' 0.2.8 accumulator change then reached every adam user through it.
    Each contract of the recipes' module that runs MultiSteps (its id says multi-steps) carries a label
    naming ``optax.MultiSteps``, and no other contract does (read from the collected contracts)."""
    import subprocess
    import sys

    from optax_gate.gate.team_code import call_sites

    plugin = (
        "def pytest_collection_modifyitems(items):\n"
        "    for it in items:\n"
        "        m = it.get_closest_marker('contract')\n"
        "        print('LABEL', it.nodeid, m.kwargs.get('api') if m else None)\n"
    )
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import pytest, sys, types\n"
            "m = types.ModuleType('labels'); exec(sys.argv[1], m.__dict__)\n"
            "sys.exit(pytest.main(['-q', '--collect-only', '-p', 'no:cacheprovider', sys.argv[2]], plugins=[m]))",
            plugin,
            "tests/contracts/test_training_recipes.py",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    labels = dict(line.split(" ", 2)[1:] for line in out.stdout.splitlines() if line.startswith("LABEL "))
    assert len(labels) > 20, out.stdout[-2000:]
    for nodeid, label in labels.items():
        runs_multisteps = "multi-steps" in nodeid or "multi_steps" in nodeid
        assert ("optax.MultiSteps" in call_sites.apis_of(label)) == runs_multisteps, (nodeid, label)


def test_every_training_recipe_names_the_apis_it_is_built_from() -> None:
    """Each ``recipe:`` label of the contracts has its APIs in ``call_sites.RECIPE_APIS``, and each
    of those APIs appears in the recipes' module (the table follows the contracts)."""
    import re

    from optax_gate.gate.team_code import call_sites

    source = (ROOT / "tests" / "contracts" / "test_training_recipes.py").read_text()
    labels = set(re.findall(r'"(recipe:[^"]+)"', source))
    assert labels and labels == set(call_sites.RECIPE_APIS), labels ^ set(call_sites.RECIPE_APIS)
    for label, apis in call_sites.RECIPE_APIS.items():
        assert apis and all(re.search(rf"\b{re.escape(api)}\b", source) for api in apis), label


def test_a_finding_joining_an_api_and_a_recipe_is_scoped_by_the_api() -> None:
    """A finding that joins an API's contracts and a recipe that wraps it (0.2.8's "MultiSteps,
    recipe:multisteps(adamw+warmup-cosine+clip): float64 results have float32-sized errors") is scoped by the
    API it names: a team that never calls MultiSteps does not get FAIL from it."""
    decide: Any = scope.usage_decision(unread=False)  # a finding's (scope, why), never None here
    joined: Any = {
        "section": "contracts",
        "change": "broken",
        "api": "optax.MultiSteps",
        "apis": ["optax.MultiSteps", "recipe:multisteps(adamw+warmup-cosine+clip)"],
        "contracts": ["a", "b"],
        "your_code": [],
    }
    got = decide(joined)
    assert got[0] == "elsewhere" and "optax.MultiSteps" in got[1], got
    assert decide({**joined, "your_code": ["train.py:3"]})[0] == "yours"


def test_the_verdicts_count_says_where_the_teams_lines_cannot_be_told() -> None:
    """A finding whose every line is "cannot tell" (Adam's None-gradient change for a float32 team calling
    ``adam``) says so where the verdict counts it, and how to decide; one with an affected line does not."""
    told = {"a.py:3": {"verdict": "cannot-tell", "why": "cannot tell without --run", "calls": "optax.adam(...)"}}
    cannot: Any = {
        "change": "changed",
        "number": 1,
        "contracts": ["x"],
        "changes": {"broken": 1, "fixed": 1},
        "your_code_attribution": told,
    }
    affected: Any = {
        "change": "broken",
        "number": 2,
        "contracts": ["y"],
        "changes": {"broken": 1},
        "your_code_attribution": {**told, "b.py:4": {"verdict": "affected", "why": "", "calls": ""}},
    }
    assert scope.where_counted([cannot, affected]) == (
        "1 in F1 (1 of its 1 contracts broke, 1 fixed; your lines: cannot tell without --run), 1 in F2"
    )
    assert scope.where_counted([cannot], "run") == "1 in F1 (1 of its 1 contracts broke, 1 fixed)"  # --run decided it


def test_broken_contracts_whose_every_line_cannot_be_told_make_the_verdict_not_verified_not_fail() -> None:
    """Broken contracts whose every line "cannot tell" make the verdict not verified (exit 2, fail closed),
    never FAIL, with the reason saying --run decides: "cannot tell" is no evidence either way, as for a
    float32 Adam team gated with --usage alone under Adam's None-gradient change (its gradients come from
    jax.value_and_grad and are never None). Beside a finding that does reach the team's code, FAIL stands."""
    told = {"a.py:3": {"verdict": "cannot-tell", "why": "cannot tell without --run", "calls": "optax.adam(...)"}}
    cannot = {
        "change": "changed",
        "contracts": ["x", "x2"],
        "changes": {"broken": 1, "fixed": 1},
        "api": "optax.adam",
        "your_code": ["a.py:3"],
        "scope": "yours",
        "your_code_attribution": told,
    }
    affected = {
        "change": "broken",
        "contracts": ["y"],
        "api": "optax.sgd",
        "your_code": ["b.py:4"],
        "scope": "yours",
        "your_code_attribution": {"b.py:4": {"verdict": "affected", "why": "", "calls": ""}},
    }
    elsewhere = {"change": "broken", "contracts": ["z"], "api": "optax.lion", "scope": "elsewhere"}

    def verdict(*found: Any, reasons: Any = ("3 contract(s) broken",)) -> Any:
        report: Any = {"verdict": "fail", "reasons": list(reasons), "notes": [], "findings": [dict(f) for f in found]}
        return assemble.with_scope(report, scope.scoped(report, "broken", "usage"))

    report: Any = verdict(cannot, elsewhere)
    assert report["verdict"] == "not-verified", report
    assert report["reasons"] == [
        "1 contract(s) broken where your code may go: 1 in F1 (1 of its 2 contracts broke, 1 fixed; "
        "your lines: cannot tell without --run); the gate with --run (your training command) decides"
    ]
    assert compare.EXIT_STATUS[report["verdict"]] == 2
    assert verdict(cannot)["verdict"] == "not-verified"  # nothing left elsewhere: the same
    report = verdict(cannot, affected, elsewhere)
    assert report["verdict"] == "fail" and report["reasons"][0].startswith(
        "1 contract(s) broken where your code goes (usage): 1 in F2"
    )
    assert report["reasons"][1].startswith("1 contract(s) broken where your code may go: 1 in F1"), report["reasons"]
    report = verdict(cannot, reasons=("3 contract(s) broken", "beyond the contracts: 1 API surface row broken"))
    assert report["verdict"] == "fail", report  # another reason fails the gate: fail stands
    report = {"verdict": "fail", "reasons": ["1 contract(s) broken"], "notes": [], "findings": [dict(cannot)]}
    assert (
        assemble.with_scope(report, scope.scoped(report, "all", "usage"))["verdict"] == "fail"
    )  # --fail-on all: as before
    report = {"verdict": "fail", "reasons": ["1 contract(s) broken"], "notes": [], "findings": [dict(cannot)]}
    assert (
        assemble.with_scope(report, scope.scoped(report, "broken", "run"))["verdict"] == "fail"
    )  # --run decided the scope: no "cannot tell" there
    own: Any = {
        "verdict": "fail",
        "reasons": ["1 contract(s) broken"],
        "notes": [],
        "findings": [dict(cannot)],
        "contracts": [{"id": "x", "team": "contracts"}],
    }  # the team's own contract broke: its word on its code
    assert assemble.with_scope(own, scope.scoped(own, "broken", "usage"))["verdict"] == "fail"


def test_the_verdict_names_the_findings_that_hold_the_broken_rows_beyond_the_contracts() -> None:
    """The verdict's reason about broken rows beyond the contracts names the findings that hold them, so one
    cause is not counted twice (as "2 in F2" and "beyond the contracts: 1 API surface finding broken" for a
    surface row joined to F2)."""
    joined = {
        "change": "broken",
        "section": "contracts",
        "contracts": ["a"],
        "api": "optax.huber_loss",
        "parts": [{"section": "contracts", "change": "broken"}, {"section": "surface", "change": "broken"}],
    }
    alone = {"change": "broken", "section": "dependencies", "contracts": [], "api": "jaxlib"}
    other: Any = {"change": "changed", "section": "contracts", "contracts": ["b"], "api": "optax.sgd"}
    report: Any = {
        "verdict": "fail",
        "reasons": ["1 contract(s) broken", "beyond the contracts: 1 API surface row and 1 dependency row broken"],
        "notes": [],
        "findings": [other, joined, alone],
    }
    report = assemble.with_scope(report, scope.scoped(report))
    numbers: Any = [f["number"] for f in report["findings"] if f["api"] != other["api"]]  # the scoped copies
    assert report["reasons"][1] == (
        f"beyond the contracts: 1 API surface row and 1 dependency row broken (in F{numbers[0]}, F{numbers[1]})"
    ), report["reasons"]
    report = assemble.with_scope(report, scope.scoped(report))  # said once, whatever runs it again
    assert report["reasons"][1].count("(in F") == 1


def test_the_note_of_a_run_scope_does_not_say_the_code_does_not_go_where_the_run_calls() -> None:
    """With ``--run`` the note on broken contracts elsewhere says the run
    does not diverge for them, never "where your code does not go (run)"
    above findings saying "your run calls it here"."""
    finding: Any = {
        "change": "broken",
        "section": "contracts",
        "api": "optax.l2_loss",
        "contracts": [{"change": "broken"}],
    }
    report: Any = {"findings": [finding], "verdict": "fail", "reasons": []}
    scope.set_scope(finding, "elsewhere", "your run does not diverge at a call of its APIs")
    report = assemble.with_scope(report, scope.scoped(report, "broken", "run"))
    note = next(n for n in report.get("notes") or [] if "broken contract(s)" in n)
    assert "your run does not diverge for" in note and "does not go" not in note, note
