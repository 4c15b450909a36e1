"""Release discovery, the matrix plan and the merged matrix report, with a
fake package index (no network)."""

import json

from optax_gate.gate import cli, discovery, matrix, report_matrix
from tests.meta.test_compare import record

INDEX = {
    "optax": ["0.2.5", "0.2.6", "0.2.7", "0.2.8", "0.2.9rc1"],
    "jax": ["0.11.2", "0.12.0", "0.12.0.1"],
    "jaxlib": ["0.11.2", "0.12.0.1"],
    "flax": ["0.12.12", "0.12.13"],
}
YANKED = {"flax-0.12.13"}
REQUIREMENTS_IN = "optax==0.2.6\njax==0.11.2\njaxlib==0.11.2\nflax==0.12.12\nnumpy\n"


def fake_fetch(url):
    project = url.rstrip("/").rsplit("/", 1)[-1]
    files = [{"filename": f"{project}-{v}-py3-none-any.whl", "yanked": f"{project}-{v}" in YANKED} for v in INDEX[project]]
    return {"meta": {"api-version": "1.1"}, "versions": INDEX[project], "files": files}


def test_releases_skip_prereleases_and_yanked():
    assert [str(v) for v in discovery.releases("optax", fake_fetch)] == ["0.2.5", "0.2.6", "0.2.7", "0.2.8"]
    assert [str(v) for v in discovery.releases("flax", fake_fetch)] == ["0.12.12"]
    assert [str(v) for v in discovery.newer_than("optax", "0.2.6", fake_fetch)] == ["0.2.7", "0.2.8"]
    assert [str(v) for v in discovery.newer_than("optax", "0.2.6", fake_fetch, include_older=True)] == ["0.2.5", "0.2.7", "0.2.8"]


def test_plan_covers_each_newer_release_and_all_newest():
    envs, found = matrix.plan(REQUIREMENTS_IN, fetch=fake_fetch)
    assert found == {"optax": ["0.2.7", "0.2.8"], "jax": ["0.12.0", "0.12.0.1"], "flax": []}
    assert {e.name: e.specs for e in envs} == {
        "optax-0.2.7": ("optax==0.2.7",),
        "optax-0.2.8": ("optax==0.2.8",),
        "jax-0.12.0": ("jax==0.12.0", "jaxlib"),  # no jaxlib 0.12.0 on the index: left to the resolver
        "jax-0.12.0.1": ("jax==0.12.0.1", "jaxlib==0.12.0.1"),
        "all-newest": ("optax==0.2.8", "jax==0.12.0.1", "jaxlib==0.12.0.1", "flax==0.12.12"),
    }


def merged():
    envs, found = matrix.plan(REQUIREMENTS_IN, fetch=fake_fetch)
    base = record(golden_a="passed", golden_b="passed")
    runs = {
        "optax-0.2.7": record("not-verified", "import failed: AttributeError: jax_pmap_shmap_merge"),
        "optax-0.2.8": record(golden_a="passed", golden_b="failed"),
        "jax-0.12.0.1": record(golden_a="passed", golden_b="passed"),
    }
    return matrix.merge(base, runs, [e.to_json() for e in envs], found)


def test_merge_gives_each_environment_its_verdict_and_reason():
    report = merged()
    verdicts = {e["name"]: (e["verdict"], e["reasons"][:1]) for e in report["environments"]}
    assert verdicts["optax-0.2.7"] == ("not-verified", ["candidate not verified: import failed: AttributeError: jax_pmap_shmap_merge"])
    assert verdicts["optax-0.2.8"] == ("fail", ["1 contract(s) broken"])
    assert verdicts["jax-0.12.0.1"] == ("pass", [])
    assert verdicts["jax-0.12.0"] == ("not-verified", ["candidate not verified: no run record"])
    cell = next(c for c in report["contracts"] if c["id"] == "golden_b")["cells"]["optax-0.2.8"]
    assert cell == {"outcome": "failed", "change": "broken", "detail": "failed detail"}


def test_markdown_and_html_show_the_grid():
    report = merged()
    text = report_matrix.markdown(report)
    assert "| `optax-0.2.8` (optax==0.2.8) | **fail** | 1 |" in text
    assert "optax: 0.2.7, 0.2.8" in text
    page = report_matrix.html_grid(report)
    assert page.startswith("<!doctype html>") and "<script" not in page
    assert page.count("<tr>") == 1 + len(report["contracts"])
    assert 'class="broken" style="background:#d7301f"' in page


def test_cli_merge_reads_plan_and_runs(tmp_path):
    envs, found = matrix.plan(REQUIREMENTS_IN, fetch=fake_fetch)
    (tmp_path / "runs").mkdir()
    (tmp_path / "plan.json").write_text(json.dumps({"discovered": found, "environments": [e.to_json() for e in envs]}))
    (tmp_path / "runs" / "baseline.json").write_text(json.dumps(record(golden_a="passed")))
    (tmp_path / "runs" / "optax-0.2.8.json").write_text(json.dumps(record(golden_a="failed")))
    assert cli.main(["matrix", "--merge", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "report.json").read_text())
    assert {e["name"]: e["verdict"] for e in report["environments"]}["optax-0.2.8"] == "fail"
    assert (tmp_path / "report.html").exists() and (tmp_path / "report.md").exists()


def test_cli_merge_without_a_plan_is_not_verified(tmp_path):
    assert cli.main(["matrix", "--merge", "--out", str(tmp_path)]) == 2


def test_cli_plan_then_one_environment_per_runner_then_merge(tmp_path, monkeypatch, capsys):
    """The CI fan-out without GitHub: --plan lists the environments, each
    runner runs --only NAME into runs/, the merge step combines them."""
    from optax_gate.gate import environments, runner

    monkeypatch.setattr(matrix.discovery, "_fetch", fake_fetch)
    def fake_compile(req_in, out, *a, **k):
        out.write_text(req_in.read_text())
        return out

    monkeypatch.setattr(environments, "compile_lock", fake_compile)
    monkeypatch.setattr(environments, "ensure", lambda *a, **k: tmp_path / "python")
    outcomes = {"baseline": "passed", "optax-0.2.8": "failed"}

    def fake_run(python, label, *a, checkpoints=None, **extra):
        if label not in outcomes:
            return runner.not_verified(label, "import failed: AttributeError: jax_pmap_shmap_merge", **extra)
        return {**record(golden_a=outcomes[label]), "label": label, **extra}

    monkeypatch.setattr(runner, "run", fake_run)
    req_in = tmp_path / "requirements.in"
    req_in.write_text(REQUIREMENTS_IN)
    common = ["--out", str(tmp_path / "m"), "--requirements-in", str(req_in)]
    assert cli.main(["matrix", "--plan", *common]) == 0
    names = [e["name"] for e in json.loads(capsys.readouterr().out)["environments"]]
    assert names == ["optax-0.2.7", "optax-0.2.8", "jax-0.12.0", "jax-0.12.0.1", "all-newest"]
    for name in ["baseline", *names]:  # one CI runner each
        assert cli.main(["matrix", "--only", name, *common]) == 0
    assert sorted(p.name for p in (tmp_path / "m" / "runs").glob("*.json")) == sorted(f"{n}.json" for n in ["baseline", *names])
    assert cli.main(["matrix", "--merge", *common]) == 0
    verdicts = {e["name"]: e["verdict"] for e in json.loads((tmp_path / "m" / "report.json").read_text())["environments"]}
    assert verdicts == {"optax-0.2.7": "not-verified", "optax-0.2.8": "fail", "jax-0.12.0": "not-verified",
                        "jax-0.12.0.1": "not-verified", "all-newest": "not-verified"}
