"""The cross-run of optax's own tests in the matrix (``matrix --upstream-tests``):
each candidate environment's runner runs it against the baseline's environment
and keeps its section in the run record; the merged report shows, per
environment, its counts and findings without changing the verdicts; a cross-run
that cannot run is a failed phase (the environment not verified, as in the gate).
A fake package index, fake environments and a fake cross-run (no network, no JAX)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from optax_gate.gate import cli
from optax_gate.gate.diffs import unseen
from optax_gate.gate.install import environments
from optax_gate.gate.matrix import discovery
from optax_gate.gate.run import runner
from optax_gate.gate.upstream import failures, pytest_run, upstream_tests
from tests.meta.support.matrix_fakes import REQUIREMENTS_IN, contract_run, fake_fetch

FINDING = {
    "section": "upstream-tests",
    "change": "changed",
    "api": "optax._src.alias.adam",
    "apis": ["optax._src.alias.adam"],
    "cause": "upstream tests (baseline tests in the candidate) fail: AssertionError: Arrays are not almost equal",
    "key": "upstream-behaviour",
    "contracts": ["_src/alias_test.py::AliasTest::test_adam"],
    "tests": [["_src/alias_test.py::AliasTest::test_adam", 1]],
    "text": "`optax._src.alias.adam`: upstream tests (baseline tests in the candidate) fail: AssertionError: "
    "Arrays are not almost equal (1 upstream test: `_src/alias_test.py::AliasTest::test_adam`)",
}


def section(modules: Any = ("_src/alias.py",)) -> Any:
    fail = {
        "test": "_src/alias_test.py::AliasTest::test_adam",
        "text": "AssertionError: Arrays are not almost equal",
        "kind": failures.BEHAVIOUR,
        "subject": "optax._src.alias.adam",
        "change": "changed",
    }
    unknown = {
        "test": "_src/alias_test.py::AliasTest::test_flaky",
        "text": "AssertionError",
        "kind": failures.INFRA,
        "subject": "fails in its own environment (baseline) too",
        "change": "",
    }
    return {
        "changed_modules": list(modules),
        "seconds": 12.0,
        "findings": [FINDING],
        "directions": [
            {
                "label": "baseline tests in the candidate",
                "files": ["_src/alias_test.py"],
                "ran": 40,
                "failed": 2,
                "seconds": 7.0,
                "overlay": ["chex"],
                "control": {"tests": 2, "files": 0, "seconds": 2.0},
                "failures": [fail, unknown],
            },
            {
                "label": "candidate tests in the baseline",
                "files": ["_src/alias_test.py"],
                "ran": 41,
                "failed": 0,
                "seconds": 5.0,
                "overlay": [],
                "control": {"tests": 0, "files": 0, "seconds": 0.0},
                "failures": [],
            },
        ],
    }


def _fan_out(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    runner_args: Any,
    merge_args: Any,
) -> Any:
    """--plan, then one --only runner per environment (with ``runner_args``), then --merge (with ``merge_args``);
    returns (report.json, report.md, the cross-run calls)."""
    monkeypatch.setattr(discovery, "fetch_json", fake_fetch)

    def fake_compile(req_in: Any, out: Any, *a: Any, **k: Any) -> Any:
        out.write_text(req_in.read_text())
        return out

    monkeypatch.setattr(environments, "compile_lock", fake_compile)
    # an environment's folder named after its lock (runs/NAME.txt): the fake cross-run knows whose it is
    monkeypatch.setattr(
        environments, "ensure", lambda folder, lock, *a, **k: tmp_path / "envs" / Path(lock).stem / "bin" / "python"
    )
    monkeypatch.setattr(unseen, "site_packages", lambda python: Path(python).parents[1] / "site-packages")
    outcomes = {"baseline": "passed", "optax-0.2.8": "failed", "jax-0.12.0.1": "passed", "all-newest": "passed"}

    monkeypatch.setattr(runner, "run", contract_run(outcomes))
    calls = []

    def fake_cross_run(sites: Any, pythons: Any, options: Any, **kwargs: Any) -> Any:
        calls.append((sites, pythons))
        if "jax-0.12.0.1" in str(sites["candidate"]):
            raise pytest_run.CrossRunFailure("pytest exited 3: INTERNALERROR")
        return section()

    monkeypatch.setattr(upstream_tests, "cross_run", fake_cross_run)
    req_in = tmp_path / "requirements.in"
    req_in.write_text(REQUIREMENTS_IN)
    common = [
        "--out",
        str(tmp_path / "m"),
        "--requirements-in",
        str(req_in),
        "--cache-dir",
        str(tmp_path / "cache"),
        "--envs-dir",
        str(tmp_path / "envs"),
        "--no-speed",
    ]
    assert cli.main(["matrix", "--plan", *common]) == 0
    names = [e["name"] for e in json.loads(capsys.readouterr().out)["environments"]]
    for name in ["baseline", *names]:
        assert cli.main(["matrix", "--only", name, *common, *runner_args]) == 0
    cli.main(["matrix", "--merge", *common, *merge_args])
    out = tmp_path / "m"
    return json.loads((out / "report.json").read_text()), (out / "report.md").read_text(), calls, out


def _by_name(report: Any) -> Any:
    return {e["name"]: e for e in report["environments"]}


def test_each_runner_cross_runs_its_environment_and_the_report_shows_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    report, md, calls, out = _fan_out(tmp_path, monkeypatch, capsys, ["--upstream-tests"], ["--upstream-tests"])
    # only the environments whose contracts ran, each against the baseline's environment
    assert len(calls) == 3
    assert all(pythons["baseline"] != pythons["candidate"] for _, pythons in calls)
    assert "upstream_tests" not in json.loads((out / "runs" / "baseline.json").read_text())
    assert json.loads((out / "runs" / "optax-0.2.8.json").read_text())["upstream_tests"]["findings"] == [FINDING]
    envs = _by_name(report)
    # the verdicts are the contracts' (optax-0.2.8 fails, all-newest passes) ...
    assert (envs["optax-0.2.8"]["verdict"], envs["all-newest"]["verdict"]) == ("fail", "pass")
    assert envs["optax-0.2.8"]["reasons"] == ["1 contract(s) broken"]
    # ... but a cross-run that could not run is a failed phase: not verified, the reason first
    assert envs["jax-0.12.0.1"]["verdict"] == "not-verified"
    assert envs["jax-0.12.0.1"]["reasons"][0].startswith(
        "gate error in the upstream tests cross-run (--upstream-tests): "
    )
    assert "INTERNALERROR" in envs["jax-0.12.0.1"]["reasons"][0]
    row = envs["all-newest"]["upstream_tests"]
    assert row["status"] == "ran" and row["modules"] == 1 and row["findings"] == [FINDING]
    assert [(d["files"], d["ran"], d["failed"], d["kinds"]) for d in row["directions"]] == [
        (1, 40, 2, {failures.BEHAVIOUR: 1, failures.INFRA: 1}),
        (1, 41, 0, {}),
    ]
    assert envs["optax-0.2.7"]["upstream_tests"] is None  # it did not run its contracts: nothing cross-run
    assert "## Upstream tests, cross-run" in md
    part = md.split("## Upstream tests, cross-run", 1)[1]
    assert "`all-newest`" in part and "baseline tests in the candidate: 1 test files, 40 tests run, 2 failed" in part
    assert "**changed** `optax._src.alias.adam`" in part
    assert "`jax-0.12.0.1`: could not run" in part and "INTERNALERROR" in part


def test_a_merge_that_asks_for_the_cross_run_finds_it_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Runners that did not cross-run (no --upstream-tests) and a merge that asks
    for it: each environment that ran is not verified (fail closed), and a merge
    that does not ask leaves the report as before."""
    report, _md, calls, _ = _fan_out(tmp_path, monkeypatch, capsys, [], ["--upstream-tests"])
    assert calls == []
    envs = _by_name(report)
    assert envs["all-newest"]["verdict"] == "not-verified"
    assert "no upstream tests cross-run in its run record" in envs["all-newest"]["reasons"][0]


def test_without_the_option_nothing_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    report, md, calls, _ = _fan_out(tmp_path, monkeypatch, capsys, [], [])
    assert calls == [] and "Upstream tests" not in md
    assert _by_name(report)["all-newest"]["verdict"] == "pass"


def test_the_scheduled_workflow_cross_runs_each_environment() -> None:
    text = (Path(__file__).parents[3] / ".github" / "workflows" / "matrix.yml").read_text()
    assert './noxw -s matrix -- --only "${ENVIRONMENT}" --upstream-tests' in text
    assert "./noxw -s matrix -- --merge --fail-on broken --upstream-tests" in text


def test_the_grid_has_a_cross_run_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """One row in the API grid (report.md and report.html), a cell per
    environment: its findings by change, or that it could not run."""
    _, md, _, out = _fan_out(tmp_path, monkeypatch, capsys, ["--upstream-tests"], ["--upstream-tests"])
    row = next(line for line in md.splitlines() if line.startswith("| upstream tests (cross-run) |"))
    cells = [c.strip() for c in row.strip("|").split("|")][1:]
    names = ["optax-0.2.7", "optax-0.2.8", "jax-0.12.0", "jax-0.12.0.1", "all-newest"]
    by = dict(zip(names, cells, strict=True))
    assert by["all-newest"] == "1 finding: 1 changed (1 could not tell)"
    assert by["jax-0.12.0.1"].startswith("could not run") and by["optax-0.2.7"] == "not run"
    page = (out / "report.html").read_text()
    assert '<tr class="upstream-tests"><th class="api">upstream tests (cross-run)' in page
    assert page.count('<td class="cell upstream-tests changed"') == 2
