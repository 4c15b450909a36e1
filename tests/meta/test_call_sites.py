"""Every finding names the team's call sites of its APIs (``--usage``,
``optax_gate.gate.call_sites``), behavioural findings from the contracts
included, and those that touch the team's code come first. The expected
``file:line`` values were read by hand off ``tests/meta/fake_team``."""

from pathlib import Path

import pytest

pytest.importorskip("griffe", reason="griffe comes with the tools lock (requirements-tools.txt)")

from optax_gate.gate import call_sites, compare, report_markdown, unseen, usage  # noqa: E402
from tests.meta.test_compare import record  # noqa: E402

TEAM = Path(__file__).parent / "fake_team"


@pytest.mark.parametrize("label, apis", [
    ("optax.adamw", ["optax.adamw"]),
    ("jax.shard_map+optax.sgd", ["jax.shard_map", "optax.sgd"]),
    ("optax.MultiSteps@shard_map", ["optax.MultiSteps"]),
    ("jax.pmap:axis-name", ["jax.pmap"]),
    ("nnx:Optimizer", ["flax.nnx.Optimizer"]),
    ("resume:across-devices", []),
])
def test_a_contract_label_names_its_public_paths(label, apis):
    assert call_sites.apis_of(label) == apis


def _runs():
    """Three broken contracts: one API the team never uses, two it calls."""
    base = record(golden_a="passed", golden_b="passed", golden_c="passed")
    cand = record(golden_a="failed", golden_b="failed", golden_c="failed")
    for run in (base, cand):
        run["contracts"]["golden_a"]["api"] = "optax.adamw"
        run["contracts"]["golden_b"]["api"] = "optax.clip"
        run["contracts"]["golden_c"]["api"] = "jax.jit+optax.swap"
    # three causes, so that findings.group (one finding per cause, across APIs) keeps three findings
    for cid, why in (("golden_a", "KeyError: mu"), ("golden_b", "TypeError: max_delta"), ("golden_c", "ValueError: donated")):
        cand["contracts"][cid]["detail"] = why
    return base, cand


def test_findings_list_the_teams_call_sites_and_come_first():
    base, cand = _runs()
    report = unseen.attach(compare.compare(base, cand), base, cand, usage_scan=usage.scan([TEAM]))
    got = [(f["number"], f["api"], f["your_code"]) for f in report["findings"]]
    # findings.group orders them jax.jit+optax.swap, optax.adamw, optax.clip (by API): adamw, untouched, goes last
    assert got == [(1, "jax.jit+optax.swap", ["teamlib/model.py:8"]),  # two calls on one line: one site
                   (2, "optax.clip", ["train.py:8"]),
                   (3, "optax.adamw", [])]
    text = report_markdown.render(report)
    line = next(ln for ln in text.splitlines() if ln.startswith("2. "))
    assert "`optax.clip`" in line and line.endswith("— **your code**: `train.py:8`")
    assert '<a id="f3-1"></a>[F3](#f3) `golden_a`' in text  # the rows follow the new numbers


def test_a_finding_whose_api_may_sit_in_a_file_not_scanned_says_so(tmp_path):
    team = tmp_path / "team"
    team.mkdir()
    (team / "a.py").write_text("import optax\noptax.adamw(1e-3\n")  # does not parse; names adamw
    (team / "gone.py").symlink_to("missing.py")  # unread: may use anything, said once in the notes, not per finding
    base, cand = _runs()
    report = unseen.attach(compare.compare(base, cand), base, cand, usage_scan=usage.scan([team]))
    by_api = {f["api"]: f for f in report["findings"]}
    assert by_api["optax.adamw"]["your_code_not_scanned"] == ["a.py"]
    assert by_api["optax.clip"]["your_code_not_scanned"] == []  # clip is nowhere in a.py
    assert "cannot tell for files not scanned: `a.py`" in report_markdown.render(report)


def test_without_usage_findings_keep_their_order_and_carry_no_sites():
    base, cand = _runs()
    report = unseen.attach(compare.compare(base, cand), base, cand)
    assert "your_code" not in report["findings"][0]
    assert "your code" not in report_markdown.render(report)


def test_a_use_through_another_public_path_of_the_same_function_counts(tmp_path):
    """``optax.renamed_clip`` is ``clip`` re-exported under a second name in the
    tiny package of test_surface: the team's ``ox.clip(...)`` is a call of it."""
    from tests.meta.test_surface import BASE_INIT, BASE_SRC, CAND_INIT, CAND_SRC, build
    base, cand = _runs()
    for run, site in ((base, build(tmp_path / "b", BASE_INIT, BASE_SRC, False)), (cand, build(tmp_path / "c", CAND_INIT, CAND_SRC, True))):
        run["contracts"]["golden_b"]["api"] = "optax.renamed_clip"
        run["site_packages"] = str(site)
    report = unseen.attach(compare.compare(base, cand), base, cand, usage_scan=usage.scan([TEAM]), packages=("optax",))
    assert {f["api"]: f["your_code"] for f in report["findings"]}["optax.renamed_clip"] == ["train.py:8"]
