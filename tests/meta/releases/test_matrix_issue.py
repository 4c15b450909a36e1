"""The scheduled matrix's tracking issue (.github/scripts/matrix_issue.py),
driven with a fake ``gh`` on PATH: a small executable that records each call
and answers ``gh issue list`` from a JSON file of issues it keeps up to date
(create adds one, close closes one), so consecutive runs see each other."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / ".github" / "scripts" / "matrix_issue.py"
TITLE = "Release matrix: broken on the scheduled run"

FAKE_GH = """#!{python}
import json, sys
from pathlib import Path
here = Path(__file__).parent
issues_file = here / "issues.json"
issues = json.loads(issues_file.read_text())
args = sys.argv[1:]
with open(here / "calls.jsonl", "a") as f:
    f.write(json.dumps(args) + "\\n")
def opt(name):
    return args[args.index(name) + 1]
if args[:2] == ["issue", "list"]:
    assert opt("--state") == "open"
    print(json.dumps([{{"number": i["number"], "title": i["title"]}} for i in issues if i["state"] == "open"]))
elif args[:2] == ["issue", "create"]:
    number = max([i["number"] for i in issues], default=0) + 1
    issues.append({{"number": number, "title": opt("--title"), "state": "open", "body": Path(opt("--body-file")).read_text()}})
    print(f"https://github.com/o/r/issues/{{number}}")
elif args[:2] == ["issue", "edit"]:
    next(i for i in issues if i["number"] == int(args[2]))["body"] = Path(opt("--body-file")).read_text()
elif args[:2] == ["issue", "close"]:
    next(i for i in issues if i["number"] == int(args[2]))["state"] = "closed"
else:
    sys.exit(f"fake gh: unexpected {{args}}")
issues_file.write_text(json.dumps(issues))
"""  # noqa: E501 (a script or page written out as it runs)


@pytest.fixture
def fake_gh(tmp_path: Path) -> Any:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "gh").write_text(FAKE_GH.format(python=sys.executable))
    (bin_dir / "gh").chmod(0o755)
    # an unrelated open issue whose title contains the tracking title: never taken for it
    (bin_dir / "issues.json").write_text(
        json.dumps([{"number": 7, "title": f"Re: {TITLE}?", "state": "open", "body": ""}])
    )
    return bin_dir


def env_row(name: Any, verdict: Any, broken: Any = 0, **extra: Any) -> Any:
    return {
        "name": name,
        "specs": [f"{name.split('-')[0]}==x"],
        "verdict": verdict,
        "reasons": [f"{name}: {verdict} reason"],
        "summary": {"broken": broken},
        **extra,
    }


def matrix_report(tmp_path: Path, envs: Any, status: Any) -> Any:
    apis = [{"api": "optax.adam", "cells": {e["name"]: {"broken": e["summary"]["broken"]} for e in envs}}]
    path = tmp_path / "report.json"
    path.write_text(json.dumps({"kind": "matrix", "environments": envs, "apis": apis, "exit": {"status": status}}))
    return path


def run(bin_dir: Any, report: Any, run_url: Any) -> Any:
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--report", str(report), "--run-url", run_url],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def state(bin_dir: Any) -> Any:
    calls = [json.loads(line) for line in (bin_dir / "calls.jsonl").read_text().splitlines()]
    return json.loads((bin_dir / "issues.json").read_text()), [c[:2] for c in calls]


def test_broken_opens_one_issue_updates_it_and_green_closes_it(tmp_path: Path, fake_gh: Any) -> None:
    sources = [
        {
            "package": "optax",
            "commit": {"short": "2edbcbe2", "date": "2026-08-07T01:10:20-07:00", "subject": "Merge pull request #1742"},
        }
    ]
    broken = [
        env_row("optax-0.2.8", "fail", 2),
        env_row("optax-main", "fail", 1, unreleased=True, sources=sources),
        env_row("jax-0.12.0", "pass"),
    ]
    first = run(fake_gh, matrix_report(tmp_path, broken, 1), "https://ci/run/1")
    assert first.returncode == 0, first.stderr
    assert "opened https://github.com/o/r/issues/8" in first.stdout
    issues, calls = state(fake_gh)
    [tracking] = [i for i in issues if i["title"] == TITLE]
    assert tracking["state"] == "open" and "[the run](https://ci/run/1)" in tracking["body"]
    assert "### `optax-0.2.8`" in tracking["body"] and "`optax.adam` (2)" in tracking["body"]
    assert "### `optax-main` (unreleased)" in tracking["body"] and "commit `2edbcbe2` (2026-08-07)" in tracking["body"]
    assert "jax-0.12.0" not in tracking["body"]  # a passing environment is not a finding
    assert calls == [["issue", "list"], ["issue", "create"]]

    # a second broken run: the open issue gets the new body, no second issue
    second = run(fake_gh, matrix_report(tmp_path, broken[:1], 1), "https://ci/run/2")
    assert second.returncode == 0 and "updated issue #8" in second.stdout, second.stderr
    issues, calls = state(fake_gh)
    assert [i["number"] for i in issues if i["title"] == TITLE] == [8]
    assert "https://ci/run/2" in issues[-1]["body"] and "optax-main" not in issues[-1]["body"]
    assert calls[2:] == [["issue", "list"], ["issue", "edit"]]

    # not broken but not verified: neither opened nor closed
    unsure = run(fake_gh, matrix_report(tmp_path, [env_row("optax-main", "not-verified")], 2), "https://ci/run/3")
    assert unsure.returncode == 0 and "left as it is" in unsure.stdout
    assert state(fake_gh)[0][-1]["state"] == "open" and len(state(fake_gh)[1]) == 4

    # green: closed, with the run's link; the unrelated issue stays open
    green = run(fake_gh, matrix_report(tmp_path, [env_row("optax-0.2.8", "pass")], 0), "https://ci/run/4")
    assert green.returncode == 0 and "closed issue #8" in green.stdout, green.stderr
    issues, calls = state(fake_gh)
    assert {i["number"]: i["state"] for i in issues} == {7: "open", 8: "closed"}
    close_call = json.loads((fake_gh / "calls.jsonl").read_text().splitlines()[-1])
    assert close_call[:3] == ["issue", "close", "8"] and "https://ci/run/4" in close_call[-1]

    # green again with nothing open: no call beyond the lookup
    again = run(fake_gh, matrix_report(tmp_path, [env_row("optax-0.2.8", "pass")], 0), "https://ci/run/5")
    assert again.returncode == 0 and "no open issue to close" in again.stdout
    assert state(fake_gh)[1][-1] == ["issue", "list"]


def test_a_missing_report_touches_no_issue_and_a_failing_gh_fails_the_step(tmp_path: Path, fake_gh: Any) -> None:
    missing = run(fake_gh, tmp_path / "nothere.json", "https://ci/run/1")
    assert missing.returncode == 0 and "no report" in missing.stdout
    assert not (fake_gh / "calls.jsonl").exists()
    (fake_gh / "gh").write_text("#!/bin/sh\necho 'HTTP 403: Resource not accessible by integration' >&2\nexit 1\n")
    failed = run(fake_gh, matrix_report(tmp_path, [env_row("optax-0.2.8", "fail", 1)], 1), "https://ci/run/2")
    assert failed.returncode == 1 and "HTTP 403" in failed.stderr


def test_the_scheduled_workflow_runs_the_script_after_the_merge_with_issue_rights() -> None:
    text = (ROOT / ".github" / "workflows" / "matrix.yml").read_text()
    step = text[text.index("name: Open, update or close the tracking issue") :]
    assert "github.event_name == 'schedule'" in step and "always()" in step
    assert "python3 .github/scripts/matrix_issue.py --report reports/matrix/report.json --run-url" in step
    assert "issues: write" in text and text.index("--merge --fail-on broken") < text.index(
        "python3 .github/scripts/matrix_issue.py"
    )
