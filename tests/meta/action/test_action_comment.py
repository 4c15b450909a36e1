"""The action's pull-request comment (``python -m optax_gate.action comment``)
against a fake ``gh`` on PATH: an executable that records its calls and
answers ``gh api`` from a JSON file of comments (or with HTTP 403)."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from optax_gate.action.comment import MARKER
from optax_gate.gate.report import markdown as report_markdown
from optax_gate.gate.report import surface_section as report_surface
from tests.meta.support.paths import ROOT

FAKE_GH = """#!{python}
import json, os, sys
state_file = {state!r}
state = json.load(open(state_file))
args = sys.argv[1:]
open({calls!r}, "a").write(json.dumps(args) + "\\n")
open({calls!r} + ".tokens", "a").write(json.dumps(os.environ.get("GH_TOKEN")) + "\\n")
if state.get("status") == 403:
    sys.stderr.write("gh: Resource not accessible by integration (HTTP 403)\\n")
    sys.exit(1)
assert args[0] == "api", args
method = args[args.index("-X") + 1] if "-X" in args else "GET"
path = next(a for a in args[1:] if a.startswith("repos/"))
if method == "GET":
    print(json.dumps([state["comments"]]))  # --paginate --slurp: a list of pages
else:
    body = json.load(open(args[args.index("--input") + 1]))["body"]
    if method == "POST":
        state["comments"].append({{"id": 100 + len(state["comments"]), "body": body}})
    else:
        cid = int(path.rsplit("/", 1)[1])
        next(c for c in state["comments"] if c["id"] == cid)["body"] = body
    json.dump(state, open(state_file, "w"))
    print("{{}}")
"""

REPORT = """# Optax upgrade gate: FAIL

Candidate `lock file requirements-lock.txt` against the baseline `lock file x`: 1 broken, 0 changed.

- **1 contract(s) broken**

## Findings (1)

1. `optax.scale`: 0.5 * [2, -4] is [2, -4] now — **your code**: `teamapp/train.py:3`

## Versions

- optax 0.2.6 → 0.2.8
"""


def setup(tmp_path: Path, status: Any = None) -> Any:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    state = tmp_path / "gh-state.json"
    state.write_text(json.dumps({"comments": [{"id": 7, "body": "LGTM"}], **({"status": status} if status else {})}))
    gh = bin_dir / "gh"
    gh.write_text(FAKE_GH.format(python=sys.executable, state=str(state), calls=str(tmp_path / "gh-calls.jsonl")))
    gh.chmod(0o755)
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 42}}))
    report = tmp_path / "report.md"
    report.write_text(REPORT)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "INPUT_", "ARTIFACT_", "GH_"))},
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(ROOT / "src"),
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": "team/repo",
        "GITHUB_SERVER_URL": "https://github.example",
        "GITHUB_RUN_ID": "9001",
        "INPUT_REPORT": str(report),
    }
    return env, state


def comment(env: Any) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "optax_gate.action", "comment"], env=env, capture_output=True, text=True, timeout=60
    )


def test_one_comment_created_then_updated_in_place(tmp_path: Path) -> None:
    env, state = setup(tmp_path)
    first = comment(env)
    assert first.returncode == 0 and "created on team/repo#42" in first.stdout, first.stdout + first.stderr
    comments = json.loads(state.read_text())["comments"]
    assert [c["id"] for c in comments] == [7, 101]
    body = comments[1]["body"]
    assert body.startswith(MARKER + "\n# Optax upgrade gate: FAIL")
    assert "1. `optax.scale`" in body and "`teamapp/train.py:3`" in body and "## Versions" not in body
    assert body.rstrip().endswith("(https://github.example/team/repo/actions/runs/9001)")

    (tmp_path / "report.md").write_text(REPORT.replace("FAIL", "PASS"))
    second = comment({**env, "ARTIFACT_URL": "https://github.example/team/repo/actions/runs/9001/artifacts/5"})
    assert second.returncode == 0 and "updated (comment 101)" in second.stdout
    comments = json.loads(state.read_text())["comments"]
    assert [c["id"] for c in comments] == [7, 101], "a second comment was added instead of updating the first"
    assert "# Optax upgrade gate: PASS" in comments[1]["body"] and comments[1]["body"].rstrip().endswith(
        "/artifacts/5)"
    )
    methods = [
        call[call.index("-X") + 1] if "-X" in call else "GET"
        for call in map(json.loads, (tmp_path / "gh-calls.jsonl").read_text().splitlines())
    ]
    assert methods == ["GET", "POST", "GET", "PATCH"]


def test_a_token_without_permission_posts_nothing_and_says_so(tmp_path: Path) -> None:
    env, state = setup(tmp_path, status=403)
    proc = comment(env)
    assert proc.returncode == 0
    assert "nothing posted: the token lacks the permission" in proc.stdout and "HTTP 403" in proc.stdout
    assert "the gate's verdict and exit status are unchanged" in proc.stdout
    assert json.loads(state.read_text())["comments"] == [{"id": 7, "body": "LGTM"}]


def test_outside_a_pull_request_nothing_is_posted(tmp_path: Path) -> None:
    env, _state = setup(tmp_path)
    Path(env["GITHUB_EVENT_PATH"]).write_text(json.dumps({"schedule": "17 5 * * 1"}))
    proc = comment(env)
    assert proc.returncode == 0 and "not a pull request" in proc.stdout
    assert not (tmp_path / "gh-calls.jsonl").exists()


@pytest.mark.parametrize(
    "given, seen",
    [
        ({"INPUT_TOKEN": "input-token"}, "input-token"),
        ({"GH_TOKEN": "gh-token", "INPUT_TOKEN": "input-token"}, "gh-token"),
        ({"GH_TOKEN": "", "INPUT_TOKEN": "input-token"}, "input-token"),
        ({}, None),
    ],
)
def test_the_token_input_reaches_gh_outside_github_and_its_absence_is_said(
    tmp_path: Path, given: Any, seen: Any
) -> None:
    """``INPUT_TOKEN`` (docs/action.md: the inputs as ``INPUT_*``) is gh's ``GH_TOKEN`` when that is unset or empty."""
    env, _state = setup(tmp_path)
    proc = comment({**env, **given})
    assert proc.returncode == 0 and "created on team/repo#42" in proc.stdout, proc.stdout + proc.stderr
    tokens = {json.loads(line) for line in (tmp_path / "gh-calls.jsonl.tokens").read_text().splitlines()}
    assert tokens == {seen}
    said = "no token given" in proc.stdout
    assert said == (seen is None), proc.stdout
    if said:
        assert proc.stdout.index("no token given") < proc.stdout.index("created on")


def test_the_comment_drops_the_reports_in_page_anchors_and_keeps_external_links(tmp_path: Path) -> None:
    """The findings as report.md writes them (``report_markdown``/``report_surface.finding_line``): their links
    to rows and sections after ``## Versions`` point nowhere in a comment, so they become plain text."""
    contract = report_markdown.finding_line(
        {
            "number": 1,
            "change": "broken",
            "api": "optax.adam",
            "cause": "the first step differs",
            "contracts": ["a", "b", "c"],
            "tests": [["test_first_step[float32]", 1], ["edge hyperparams", 2]],
        }
    )
    beyond = report_surface.finding_line({"number": 2, "section": "surface", "api": "optax.foo", "cause": "removed"})
    external = "See [the Optax changelog](https://github.com/google-deepmind/optax/releases#v0.2.8)."
    env, state = setup(tmp_path)
    (tmp_path / "report.md").write_text(
        REPORT.replace(
            "1. `optax.scale`: 0.5 * [2, -4] is [2, -4] now — **your code**: `teamapp/train.py:3`",
            f"{contract}\n{beyond}\n\n{external}",
        )
    )
    assert (
        '<a id="f1"></a>' in contract and "](#f1-2)" in contract and "(see API surface below)" in beyond
    )  # what report.md holds
    proc = comment(env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = json.loads(state.read_text())["comments"][1]["body"]
    assert "](#" not in text and "<a id=" not in text and " below)" not in text, text
    assert (
        "1. **broken** `optax.adam`: the first step differs (3 contracts broken: test_first_step[float32], "
        "edge hyperparams ×2)" in text
    )
    assert "2. **broken** API surface `optax.foo`: removed (see API surface in the full report)" in text
    assert external in text
