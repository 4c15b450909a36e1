"""Every finding names the team's call sites of its APIs (``--usage``,
``optax_gate.gate.team_code.call_sites``), behavioural findings from the contracts
included, and those that touch the team's code come first. The expected
``file:line`` values were read by hand off ``tests/meta/fake_team``."""

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("griffe", reason="griffe comes with the tools lock (requirements-tools.txt)")

from optax_gate.gate.inputs.options import ScopeOptions
from optax_gate.gate.report import markdown as report_markdown
from optax_gate.gate.team_code import call_sites, usage
from tests.meta.support.call_site_runs import traced_runs
from tests.meta.support.records import judged

TEAM = Path(__file__).parents[1] / "fake_team"


@pytest.mark.parametrize(
    "label, apis",
    [
        ("optax.adamw", ["optax.adamw"]),
        ("jax.shard_map+optax.sgd", ["jax.shard_map", "optax.sgd"]),
        ("optax.MultiSteps@shard_map", ["optax.MultiSteps"]),
        ("jax.pmap:axis-name", ["jax.pmap"]),
        ("nnx:Optimizer", ["flax.nnx.Optimizer"]),
        ("resume:across-devices", []),
    ],
)
def test_a_contract_label_names_its_public_paths(label: Any, apis: Any) -> None:
    assert call_sites.apis_of(label) == apis


def test_findings_list_the_teams_call_sites_and_come_first() -> None:
    base, cand = traced_runs()
    report = judged(base, cand, ScopeOptions(usage_scan=usage.scan([TEAM], base=TEAM)))
    got = [(f["number"], f["api"], f["your_code"]) for f in report["findings"]]
    # findings.group orders them jax.jit+optax.swap, optax.adamw, optax.clip (by API): adamw, untouched, goes last
    assert got == [
        (1, "jax.jit+optax.swap", ["teamlib/model.py:8"]),  # two calls on one line: one site
        (2, "optax.clip", ["train.py:8"]),
        (3, "optax.adamw", []),
    ]
    text = report_markdown.render(report)
    line = next(ln for ln in text.splitlines() if ln.startswith("2. "))
    assert "`optax.clip`" in line and line.endswith("— **your code**: `train.py:8`")
    assert '<a id="f3-1"></a>[F3](#f3) `golden_a`' in text  # the rows follow the new numbers


def test_a_finding_whose_api_may_sit_in_a_file_not_scanned_says_so(tmp_path: Path) -> None:
    team = tmp_path / "team"
    team.mkdir()
    (team / "a.py").write_text("import optax\noptax.adamw(1e-3\n")  # does not parse; names adamw
    (team / "gone.py").symlink_to("missing.py")  # listed; no file behind it, so no code (not per finding)
    base, cand = traced_runs()
    report = judged(base, cand, ScopeOptions(usage_scan=usage.scan([team], base=team)))
    by_api = {f["api"]: f for f in report["findings"]}
    assert by_api["optax.adamw"]["your_code_not_scanned"] == ["a.py"]
    assert by_api["optax.clip"]["your_code_not_scanned"] == []  # clip is nowhere in a.py
    assert "cannot tell for files not scanned: `a.py`" in report_markdown.render(report)


def test_without_usage_findings_keep_their_order_and_carry_no_sites() -> None:
    base, cand = traced_runs()
    report = judged(base, cand)
    assert "your_code" not in report["findings"][0]
    assert "your code" not in report_markdown.render(report)


def test_a_use_through_another_public_path_of_the_same_function_counts(tmp_path: Path) -> None:
    """``optax.renamed_clip`` is ``clip`` re-exported under a second name in the
    tiny package of test_surface: the team's ``ox.clip(...)`` is a call of it."""
    from tests.meta.support.surface_sites import BASE_INIT, BASE_SRC, CAND_INIT, CAND_SRC, build

    base, cand = traced_runs()
    for run, site in (
        (base, build(tmp_path / "b", BASE_INIT, BASE_SRC, False)),
        (cand, build(tmp_path / "c", CAND_INIT, CAND_SRC, True)),
    ):
        run["contracts"]["golden_b"]["api"] = "optax.renamed_clip"
        run["site_packages"] = str(site)
    report = judged(base, cand, ScopeOptions(usage_scan=usage.scan([TEAM], base=TEAM)), packages=("optax",))
    assert {f["api"]: f["your_code"] for f in report["findings"]}["optax.renamed_clip"] == ["train.py:8"]


def test_report_json_lists_every_finding_of_report_md_and_a_surface_finding_only_the_calls_it_breaks(
    tmp_path: Path,
) -> None:
    """The tiny optax of test_surface makes ``losses.loss``'s ``delta`` keyword-only: fake_team's train.py:9
    passes it positionally (breaks), train.py:10 by keyword (unaffected). The broken surface rows are findings
    in report.json as in report.md; the surface row's finding names train.py:9 only; the contract finding on
    the same API names both calls, each with the surface diff's word on it."""
    import json

    jsonschema = pytest.importorskip(
        "jsonschema", reason="jsonschema comes with the tools lock (requirements-tools.txt)"
    )
    from optax_gate.gate.report import json_file as report_json
    from tests.meta.support.schema_and_locks import SCHEMA
    from tests.meta.support.surface_sites import BASE_INIT, BASE_SRC, CAND_INIT, CAND_SRC, build

    base, cand = traced_runs()
    for run, site in (
        (base, build(tmp_path / "b", BASE_INIT, BASE_SRC, False)),
        (cand, build(tmp_path / "c", CAND_INIT, CAND_SRC, True)),
    ):
        run["contracts"]["golden_b"]["api"] = "optax.losses.loss"
        run["site_packages"] = str(site)
    report = judged(base, cand, ScopeOptions(usage_scan=usage.scan([TEAM], base=TEAM)), packages=("optax",))
    found = report["findings"]
    text = report_markdown.render(report)
    lines = text.split(f"## Findings ({len(found)})\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert (
        [ln.split(". ", 1)[0] for ln in lines]
        == [str(f["number"]) for f in found]
        == [str(k) for k in range(1, len(found) + 1)]
    )
    kinds = {
        r["change"] for r in report["surface"]["rows"] if r["verdict"] == "broken"
    }  # one finding per kind of change
    assert {f["section"] for f in found} == {"contracts", "surface"} and len(found) == 3 + len(kinds)
    # the keyword-only rows of the tiny optax (``optax.losses.loss`` and its re-export) are one finding
    delta = next(f for f in found if f["section"] == "surface" and "optax.losses.loss" in f.get("apis", [f["api"]]))
    assert delta["change"] == "broken" and delta["cause"].startswith("keyword-only")
    # train.py:10 passes delta by keyword: unaffected, not named (teamlib/model.py:12 breaks another keyword-only row)
    assert "train.py:9" in delta["your_code"] and "train.py:10" not in delta["your_code"]
    line = lines[delta["number"] - 1]
    assert (
        "(see API surface below) — **your code**: " in line and "`train.py:9`" in line and "`train.py:10`" not in line
    )
    contract = next(f for f in found if f["section"] == "contracts" and f["api"] == "optax.losses.loss")
    assert contract["your_code"] == ["train.py:9", "train.py:10"]
    assert contract["your_code_notes"] == {
        "train.py:9": "breaks: delta is keyword-only in the candidate",
        "train.py:10": "passes delta by keyword; does not pass axis",
    }
    assert lines[contract["number"] - 1].endswith(
        "— **your code**: `train.py:9` (API surface: breaks: delta is keyword-only in the candidate), "
        "`train.py:10` (API surface: passes delta by keyword; does not pass axis)"
    )
    jsonschema.validate(json.loads(report_json.render(report)), json.loads(SCHEMA.read_text()))


def test_a_type_annotation_names_an_api_but_is_a_call_site_only_when_nothing_else_uses_it(tmp_path: Path) -> None:
    """An annotation such as nanodo's ``def get_optimizer(...) -> optax.MultiSteps:`` runs none of the API:
    like an import, it is listed among the lines a finding reaches ("uses this API: cannot tell") only when
    nothing else uses the API. The API surface still sees it (a removed class in an annotation fails at
    import)."""
    team = tmp_path / "team"
    team.mkdir()
    (team / "opt.py").write_text(
        "import optax\n\n\ndef make(k: optax.Schedule) -> optax.MultiSteps:\n"
        "    tx: optax.GradientTransformation = optax.adam(1e-3)\n"
        "    return optax.MultiSteps(tx, every_k_schedule=k)\n\n\n"
        "def kind() -> optax.OptState:\n    return None\n"
    )
    scan = usage.scan([team], base=team)
    hows = {(u.where, u.path): u.how for u in scan.uses}
    assert hows[("opt.py:4", "optax.MultiSteps")] == hows[("opt.py:4", "optax.Schedule")] == "annotation"
    assert (
        hows[("opt.py:5", "optax.GradientTransformation")] == "annotation"
        and hows[("opt.py:6", "optax.MultiSteps")] == "call"
    )
    assert call_sites.sites(scan, ["optax.MultiSteps"]) == ["opt.py:6"]
    assert call_sites.sites(scan, ["optax.OptState"]) == [
        "opt.py:9"
    ]  # only an annotation: named, as an import would be
