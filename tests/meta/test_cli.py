"""The gate's command line fails closed (``optax_gate.gate.cli``)."""

import json

import pytest

from optax_gate.gate import cli, environments, runner
from tests.meta.test_compare import record


def write_run(path, rec):
    path.write_text(json.dumps(rec))
    return str(path)


@pytest.mark.parametrize(
    ("candidate", "status", "verdict"),
    [(record(golden_a="passed"), 0, "pass"), (record(golden_a="failed"), 1, "fail"), (record("not-verified", "import failed: x"), 2, "not-verified")],
)
def test_compare_exit_status_matches_the_verdict(tmp_path, candidate, status, verdict):
    base = write_run(tmp_path / "b.json", record(golden_a="passed"))
    cand = write_run(tmp_path / "c.json", candidate)
    assert cli.main(["compare", base, cand, "--out", str(tmp_path / "out")]) == status
    assert json.loads((tmp_path / "out" / "report.json").read_text())["verdict"] == verdict
    assert (tmp_path / "out" / "report.md").read_text().startswith(f"# Optax upgrade gate: {verdict.upper()}")


def test_an_install_failure_is_reported_not_verified(tmp_path, monkeypatch):
    def fail(*args, **kwargs):
        raise environments.EnvironmentFailure("install", "no matching distribution for jaxlib==9.9")

    monkeypatch.setattr(environments, "ensure", fail)
    (tmp_path / "lock.txt").write_text("jaxlib==9.9\n")
    monkeypatch.setattr(environments, "compile_lock", lambda *a, **k: tmp_path / "lock.txt")
    (tmp_path / "req.in").write_text("optax==0.2.6\n")
    code = cli.main(["gate", "jaxlib==9.9", "--out", str(tmp_path), "--requirements-in", str(tmp_path / "req.in")])
    report = json.loads((tmp_path / "report.json").read_text())
    assert code == 2 and report["verdict"] == "not-verified"
    assert "install failed: no matching distribution for jaxlib==9.9" in report["reasons"][0]


def test_a_crash_of_the_gate_itself_is_not_verified_with_a_report(tmp_path, monkeypatch):
    def crash(*args, **kwargs):
        raise KeyError("bug")

    monkeypatch.setattr(runner, "run", crash)
    monkeypatch.setattr(environments, "ensure", lambda *a, **k: tmp_path / "python")
    code = cli.main(["gate", "--out", str(tmp_path)])
    report = json.loads((tmp_path / "report.json").read_text())
    assert code == 2 and report["reasons"][0].startswith("baseline not verified: gate error: KeyError")


def test_specs_and_a_candidate_lock_together_are_refused(tmp_path):
    assert cli.main(["gate", "optax==0.2.8", "--candidate-lock", str(tmp_path / "x.txt"), "--out", str(tmp_path)]) == 2
    assert not (tmp_path / "report.json").exists()


def test_a_rerun_that_stops_early_leaves_no_stale_evidence(tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "candidate.reportlog.jsonl").write_text("old evidence")

    def fail(*args, **kwargs):
        raise environments.EnvironmentFailure("install", "boom")

    monkeypatch.setattr(environments, "ensure", fail)
    (tmp_path / "lock.txt").write_text("x\n")
    assert cli.main(["gate", "--candidate-lock", str(tmp_path / "lock.txt"), "--out", str(tmp_path)]) == 2
    assert sorted(p.name for p in runs.iterdir()) == ["baseline.json", "candidate.json"]
