"""Release discovery, the matrix plan and the merged matrix report, with a
fake package index (no network)."""

import json
import re
from pathlib import Path
from typing import Any, cast

import pytest

from optax_gate.gate import cli
from optax_gate.gate.base.run_record import RunRecord
from optax_gate.gate.matrix import discovery
from optax_gate.gate.matrix import plan as matrix
from optax_gate.gate.report import matrix_page as report_matrix
from tests.meta.support.matrix_fakes import OTHER_APIS, REQUIREMENTS_IN, contract_run, fake_fetch, real_matrix
from tests.meta.support.records import record


def test_releases_skip_prereleases_and_yanked() -> None:
    assert [str(v) for v in discovery.releases("optax", fake_fetch)] == ["0.2.5", "0.2.6", "0.2.7", "0.2.8"]
    assert [str(v) for v in discovery.releases("flax", fake_fetch)] == ["0.12.12"]
    assert [str(v) for v in discovery.newer_than("optax", "0.2.6", fake_fetch)] == ["0.2.7", "0.2.8"]
    assert [str(v) for v in discovery.newer_than("optax", "0.2.6", fake_fetch, include_older=True)] == [
        "0.2.5",
        "0.2.7",
        "0.2.8",
    ]


def test_plan_covers_each_newer_release_and_all_newest() -> None:
    envs, found = matrix.plan(REQUIREMENTS_IN, fetch=fake_fetch)
    assert found == {"optax": ["0.2.7", "0.2.8"], "jax": ["0.12.0", "0.12.0.1"], "flax": []}
    assert {e.name: e.specs for e in envs} == {
        "optax-0.2.7": ("optax==0.2.7",),
        "optax-0.2.8": ("optax==0.2.8",),
        "jax-0.12.0": ("jax==0.12.0", "jaxlib"),  # no jaxlib 0.12.0 on the index: left to the resolver
        "jax-0.12.0.1": ("jax==0.12.0.1", "jaxlib==0.12.0.1"),
        "all-newest": ("optax==0.2.8", "jax==0.12.0.1", "jaxlib==0.12.0.1", "flax==0.12.12"),
    }


def merged() -> Any:
    envs, found = matrix.plan(REQUIREMENTS_IN, fetch=fake_fetch)
    base = record(golden_a="passed", golden_b="passed")
    runs = {
        "optax-0.2.7": record("not-verified", "import failed: AttributeError: jax_pmap_shmap_merge"),
        "optax-0.2.8": record(golden_a="passed", golden_b="failed"),
        "jax-0.12.0.1": record(golden_a="passed", golden_b="passed"),
    }
    return matrix.merge(
        RunRecord.from_json(base),
        {name: RunRecord.from_json(run) for name, run in runs.items()},
        {"environments": [e.to_json() for e in envs], "discovered": found},
    )


def test_merge_gives_each_environment_its_verdict_and_reason() -> None:
    report = merged()
    verdicts = {e["name"]: (e["verdict"], e["reasons"][:1]) for e in report["environments"]}
    assert verdicts["optax-0.2.7"] == (
        "not-verified",
        ["candidate not verified: import failed: AttributeError: jax_pmap_shmap_merge"],
    )
    assert verdicts["optax-0.2.8"] == ("fail", ["1 contract(s) broken"])
    assert verdicts["jax-0.12.0.1"] == ("pass", [])
    assert verdicts["jax-0.12.0"] == ("not-verified", ["candidate not verified: no run record"])
    cell = next(c for c in report["contracts"] if c["id"] == "golden_b")["cells"]["optax-0.2.8"]
    assert report["contracts"][0]["id"] == "golden_b"  # differing contracts first
    assert cell == {"outcome": "failed", "change": "broken", "detail": "failed detail"}


def test_merge_counts_each_api_per_environment_differing_first() -> None:
    report = real_matrix()
    apis = [a["api"] for a in report["apis"]]
    assert apis[:3] == ["optax.MultiSteps", "optax.add_decayed_weights", "optax.inject_hyperparams"]
    assert sorted(apis[3:]) == apis[3:] and len(apis) == 3 + len(OTHER_APIS)
    ms = report["apis"][0]["cells"]
    assert {k: ms["optax-0.2.8"][k] for k in ("broken", "changed", "fixed", "worst")} == {
        "broken": 4,
        "changed": 1,
        "fixed": 0,
        "worst": "broken",
    }
    assert ms["jax-0.12.0.1"]["worst"] == "unchanged" and ms["optax-0.2.7"]["gone"] == 5
    assert [e["ran"] for e in report["environments"]] == [False, True, True]
    assert all(c["differs"] for c in report["contracts"][:13]) and not any(
        c["differs"] for c in report["contracts"][13:]
    )


def test_html_opens_on_the_api_grid_with_one_cell_for_an_environment_that_did_not_run() -> None:
    report = real_matrix()
    page = report_matrix.html_grid(report)
    assert page.startswith("<!doctype html>") and "<script" not in page and "<details open" not in page
    grid = page[page.index('<table class="grid">') : page.index("</table>")]
    assert grid.count("<tr") == 1 + len(report["apis"])  # header + one row per API, nothing else opened
    not_run = re.findall(r'<td class="not-run" rowspan="(\d+)"[^>]*><b>not verified</b><br>([^<]*)</td>', grid)
    assert not_run == [
        (str(len(report["apis"])), "import failed: AttributeError: Unrecognized config option: jax_pmap_shmap_merge")
    ]
    assert grid.count('<td class="cell') == len(report["apis"]) * 2 and ">gone<" not in grid
    first = grid.split('<tr class="api">')[1]
    assert (
        '<td class="cell broken" style="background:#d7301f"><details><summary>4 broken · 1 changed</summary>' in first
    )
    assert "off by 4.4e-10 (relative 3.8e-9" in first  # the plain-words detail behind the count
    assert page.count('<details class="api"') == len(report["apis"])


def test_markdown_puts_the_api_rows_first_and_names_a_not_run_environment_once() -> None:
    text = report_matrix.markdown(real_matrix())
    assert text.index("## APIs × environments") < text.index("## Contracts that differ somewhere (13 of 37)")
    assert (
        "| `optax.MultiSteps` (5) | not run: import failed: AttributeError: Unrecognized config option: "
        "jax_pmap_shmap_merge | **4 broken · 1 changed** | 5 unchanged |" in text
    )
    assert "| `optax.add_decayed_weights` (2) | ″ | 1 changed · 1 fixed | 2 unchanged |" in text
    assert "gone" not in text.split("## Contracts that differ somewhere")[1]


def test_markdown_and_html_show_the_grid() -> None:
    report = merged()
    text = report_matrix.markdown(report)
    assert "| `optax-0.2.8` (optax==0.2.8) | **fail** | 1 |" in text
    assert "optax: 0.2.7, 0.2.8" in text
    page = report_matrix.html_grid(report)
    assert page.startswith("<!doctype html>") and "<script" not in page
    assert page.count('<tr class="api">') == 1 == len(report["apis"])
    assert 'class="broken" style="background:#d7301f"' in page


def test_cli_merge_reads_plan_and_runs(tmp_path: Path) -> None:
    envs, found = matrix.plan(REQUIREMENTS_IN, fetch=fake_fetch)
    (tmp_path / "runs").mkdir()
    (tmp_path / "plan.json").write_text(json.dumps({"discovered": found, "environments": [e.to_json() for e in envs]}))
    (tmp_path / "runs" / "baseline.json").write_text(json.dumps(record(golden_a="passed")))
    (tmp_path / "runs" / "optax-0.2.8.json").write_text(json.dumps(record(golden_a="failed")))
    assert cli.main(["matrix", "--merge", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "report.json").read_text())
    assert {e["name"]: e["verdict"] for e in report["environments"]}["optax-0.2.8"] == "fail"
    assert (tmp_path / "report.html").exists() and (tmp_path / "report.md").exists()


def test_cli_merge_without_a_plan_is_not_verified(tmp_path: Path) -> None:
    assert cli.main(["matrix", "--merge", "--out", str(tmp_path)]) == 2


def test_cli_plan_then_one_environment_per_runner_then_merge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CI fan-out without GitHub: --plan lists the environments, each
    runner runs --only NAME into runs/, the merge step combines them."""
    from optax_gate.gate.install import environments
    from optax_gate.gate.run import runner

    monkeypatch.setattr(discovery, "fetch_json", fake_fetch)

    def fake_compile(req_in: Any, out: Any, *a: Any, **k: Any) -> Any:
        out.write_text(req_in.read_text())
        return out

    monkeypatch.setattr(environments, "compile_lock", fake_compile)
    monkeypatch.setattr(environments, "ensure", lambda *a, **k: tmp_path / "python")
    outcomes = {"baseline": "passed", "optax-0.2.8": "failed"}

    monkeypatch.setattr(runner, "run", contract_run(outcomes))
    req_in = tmp_path / "requirements.in"
    req_in.write_text(REQUIREMENTS_IN)
    # --cache-dir: never the project's own baseline cache (a real gate's entry would
    # be taken for the fake baseline, and its evidence land among these runs).
    common = ["--out", str(tmp_path / "m"), "--requirements-in", str(req_in), "--cache-dir", str(tmp_path / "cache")]
    assert cli.main(["matrix", "--plan", *common]) == 0
    names = [e["name"] for e in json.loads(capsys.readouterr().out)["environments"]]
    assert names == ["optax-0.2.7", "optax-0.2.8", "jax-0.12.0", "jax-0.12.0.1", "all-newest"]
    for name in ["baseline", *names]:  # one CI runner each
        assert cli.main(["matrix", "--only", name, *common]) == 0
    assert sorted(p.name for p in (tmp_path / "m" / "runs").glob("*.json")) == sorted(
        f"{n}.json" for n in ["baseline", *names]
    )
    assert cli.main(["matrix", "--merge", *common]) == 0
    verdicts = {
        e["name"]: e["verdict"] for e in json.loads((tmp_path / "m" / "report.json").read_text())["environments"]
    }
    assert verdicts == {
        "optax-0.2.7": "not-verified",
        "optax-0.2.8": "fail",
        "jax-0.12.0": "not-verified",
        "jax-0.12.0.1": "not-verified",
        "all-newest": "not-verified",
    }


def test_the_grid_has_a_row_per_section_beyond_the_contracts(tmp_path: Path) -> None:
    """Issue 10: surface / warnings / dependencies, one row each, a cell per
    environment with its counts, coloured by the worst."""
    from optax_gate.gate.report import matrix_page as report_matrix

    env: Any = {
        "name": "optax-0.2.8",
        "beyond": {
            "surface": {"status": "compared", "counts": {"broken": 1, "changed": 54, "new": 47, "noted": 0}},
            "warnings": {"status": "compared", "counts": {"broken": 0, "changed": 0, "new": 0, "noted": 0}},
            "dependencies": {"status": "unavailable", "counts": {"broken": 0, "changed": 0, "new": 0, "noted": 0}},
        },
    }
    assert report_matrix.beyond_cell(env, "surface") == ("broken", "1 broken · 54 changed · 47 new")
    assert report_matrix.beyond_cell(env, "warnings") == ("unchanged", "no differences")
    assert report_matrix.beyond_cell(env, "dependencies") == ("unchanged", "unavailable")
    assert report_matrix.beyond_cell(cast(Any, {"name": "x"}), "surface") == ("not-measured", "not available")
    assert report_matrix.matrix_beyond_rows([env]) == ["surface", "warnings", "dependencies"]
    assert report_matrix.matrix_beyond_rows([cast(Any, {"name": "x", "beyond": None})]) == []
