"""The upstream-dev columns of the matrix (``--upstream``): optax-main and
flax-main planned from their repositories' default branches, built from
source, and marked unreleased in report.json, report.md and report.html.
Synthetic local repositories stand in for GitHub (not reachable here)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from optax_gate.gate import cli
from optax_gate.gate.base.run_record import RunRecord
from optax_gate.gate.install import environments
from optax_gate.gate.matrix import discovery
from optax_gate.gate.matrix import plan as matrix
from optax_gate.gate.run import runner
from tests.meta.support.fake_optax import PYPROJECT, needs_uv
from tests.meta.support.matrix_fakes import REQUIREMENTS_IN, fake_fetch
from tests.meta.support.records import record
from tests.meta.support.source_repos import commit, git


def test_upstream_adds_optax_main_and_flax_main_from_their_default_branches() -> None:
    envs, _ = matrix.plan(REQUIREMENTS_IN, fetch=fake_fetch, upstream=True)
    upstream = {e.name: e for e in envs if e.unreleased}
    assert list(upstream) == ["optax-main", "flax-main"] and [e.name for e in envs][-2:] == ["optax-main", "flax-main"]
    assert upstream["optax-main"].specs == ("optax @ git+https://github.com/google-deepmind/optax",)
    assert upstream["flax-main"].specs == ("flax @ git+https://github.com/google/flax",)
    assert upstream["optax-main"].to_json()["unreleased"] is True
    plain, _ = matrix.plan(REQUIREMENTS_IN, fetch=fake_fetch)
    assert not any(e.unreleased or e.name.endswith("-main") for e in plain)


def test_plan_upstream_on_the_command_line_lists_the_two_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(discovery, "fetch_json", fake_fetch)
    req_in = tmp_path / "requirements.in"
    req_in.write_text(REQUIREMENTS_IN)
    assert (
        cli.main(["matrix", "--plan", "--upstream", "--out", str(tmp_path / "m"), "--requirements-in", str(req_in)])
        == 0
    )
    printed = json.loads(capsys.readouterr().out)["environments"]
    assert [(e["name"], e["unreleased"]) for e in printed][-2:] == [("optax-main", True), ("flax-main", True)]
    assert json.loads((tmp_path / "m" / "plan.json").read_text())["environments"] == printed


def tiny_remote(tmp_path: Path, name: str) -> str:
    """A bare repository (the 'public repository') of a tiny package NAME; its URL."""
    work = tmp_path / f"{name}-work"
    work.mkdir()
    git(work, "init", "--quiet", "-b", "main")
    commit(
        work,
        {
            "pyproject.toml": PYPROJECT.replace('name = "optax"', f'name = "{name}"'),
            f"{name}/__init__.py": '"""tiny."""\n',
        },
        f"Start {name} (#11)",
    )
    bare = tmp_path / f"{name}.git"
    subprocess.run(["git", "clone", "--quiet", "--bare", str(work), str(bare)], check=True)
    return bare.as_uri()


@needs_uv
def test_upstream_columns_are_built_from_source_and_marked_unreleased(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(discovery, "fetch_json", fake_fetch)
    monkeypatch.setattr(
        matrix, "UPSTREAM", {"optax": tiny_remote(tmp_path, "optax"), "flax": "https://127.0.0.1:9/google/flax"}
    )  # unreachable: fails closed
    monkeypatch.setattr(environments, "ensure", lambda *a, **k: tmp_path / "python")
    monkeypatch.setattr(
        runner,
        "run",
        lambda python, label, out_dir, env, how=None, on_progress=None, probed=None, **extra: RunRecord.from_json(
            {**record(golden_a="failed" if label == "optax-main" else "passed"), "label": label, **extra}
        ),
    )
    # the plan reads the baseline's pins (releases from the fake index); the environments resolve a
    # tiny requirement set of the two packages, so uv needs no index: only the wheels built here
    plan_in, req_in, lock = tmp_path / "plan.in", tmp_path / "requirements.in", tmp_path / "lock.txt"
    plan_in.write_text(REQUIREMENTS_IN)
    req_in.write_text("optax==0.2.6\nflax==0.12.12\n")
    lock.write_text("".join(f"{p} \\\n    --hash=sha256:{'0' * 64}\n" for p in ("optax==0.2.6", "flax==0.12.12")))
    out = ["--out", str(tmp_path / "m")]
    assert cli.main(["matrix", "--plan", "--upstream", *out, "--requirements-in", str(plan_in)]) == 0
    common = [
        *out,
        "--requirements-in",
        str(req_in),
        "--baseline-lock",
        str(lock),
        "--cache-dir",
        str(tmp_path / "cache"),
        "--no-speed",
    ]
    for name in ("baseline", "optax-main", "flax-main"):
        assert cli.main(["matrix", "--only", name, *common]) == 0
    assert cli.main(["matrix", "--merge", "--fail-on", "broken", *common]) == 1
    report = json.loads((tmp_path / "m" / "report.json").read_text())
    envs = {e["name"]: e for e in report["environments"]}
    assert [n for n, e in envs.items() if e["unreleased"]] == ["optax-main", "flax-main"]
    [built] = envs["optax-main"]["sources"]
    assert built["status"] == "built" and built["commit"]["subject"] == "Start optax (#11)"
    assert envs["optax-main"]["verdict"] == "fail" and report["exit"]["met_by"] == ["optax-main"]
    assert envs["flax-main"]["verdict"] == "not-verified"
    assert "fetch stage" in envs["flax-main"]["reason"] and "unable to access" in envs["flax-main"]["reason"]
    markdown = (tmp_path / "m" / "report.md").read_text()
    short, day = built["commit"]["short"], built["commit"]["date"][:10]
    assert f"| `optax-main` **unreleased, optax {short} {day}** (optax @ git+" in markdown
    assert "`optax-main` (unreleased) | `flax-main` (unreleased) |" in markdown
    assert "| `optax-0.2.8` (optax==0.2.8)" in markdown  # a released column is not marked
    page = (tmp_path / "m" / "report.html").read_text()
    assert f'<small class="unreleased"><i>unreleased, optax {short} {day}</i></small>' in page
    assert page.count('class="unreleased"') == 2


def test_the_scheduled_workflow_asks_for_the_upstream_columns() -> None:
    text = (Path(__file__).parents[3] / ".github" / "workflows" / "matrix.yml").read_text()
    assert "./noxw -s matrix -- --plan --upstream" in text
