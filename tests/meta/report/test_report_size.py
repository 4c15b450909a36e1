"""Sized for people and for GitHub (issue 25, item 4): report.md holds the
verdict, every finding and a bounded sample of rows per finding; report.html
and report.json every row; the job summary and the pull-request comment stay
inside GitHub's limits whatever the report's size, and link the full report.

The synthetic report: 5,000 differing contract rows over 700 findings (one
per API, several tests each), 3,000 unchanged rows and 2,000 API surface rows
- larger than the 0.2.8 gate (3,235 contracts) in every part."""

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from optax_gate.action import comment, run
from optax_gate.gate.judge import findings as findings_
from optax_gate.gate.report import html_page as report_html
from optax_gate.gate.report import json_file as report_json
from optax_gate.gate.report import markdown as report_markdown
from optax_gate.gate.report import surface_section as report_surface

GITHUB_COMMENT = 65_536  # characters
GITHUB_SUMMARY = 1024 * 1024  # bytes


def _word(n: Any) -> Any:
    """A number in letters (findings merge causes that differ only in numbers)."""
    return "".join(chr(ord("a") + int(d)) for d in str(n))


def big_report(differing: Any = 5000, apis: Any = 700, unchanged: Any = 3000, surface: Any = 2000) -> Any:
    rows: Any = []
    for i in range(differing):
        api = f"optax.api_{i % apis}"
        change = ("broken", "changed", "fixed")[i % apis % 3]
        rows.append(
            {
                "id": f"tests/contracts/test_m{i % 7}.py::test_case_{i % 5}[{api}-{i}]",
                "api": api,
                "guide": "docs: g",
                "kind": "golden",
                "defect": "",
                "baseline": "passed" if change != "fixed" else "failed",
                "candidate": "failed" if change != "fixed" else "passed",
                "change": change,
                "detail": f"ValueError: needs {_word(i % apis)} to be a {'very long ' * 8}value",
            }
        )
    rows += [
        {
            "id": f"tests/contracts/test_u.py::test_same[{i}]",
            "api": "optax.sgd",
            "guide": "g",
            "kind": "golden",
            "defect": "",
            "baseline": "passed",
            "candidate": "passed",
            "change": "unchanged",
            "detail": "",
        }
        for i in range(unchanged)
    ]
    summary = {
        k: sum(r["change"] == k for r in rows) for k in ("broken", "changed", "fixed", "new", "gone", "unchanged")
    }
    report: Any = {
        "schema": 3,
        "verdict": "fail",
        "reasons": [f"{summary['broken']} contract(s) broken"],
        "notes": [],
        "summary": summary,
        "contracts": rows,
        "baseline": {"label": "baseline", "requirements": ["lock"], "versions": {}, "status": "ran", "reason": ""},
        "candidate": {
            "label": "candidate",
            "requirements": ["optax==9"],
            "versions": {},
            "status": "ran",
            "reason": "",
        },
        "surface": {
            "status": "compared",
            "reason": "",
            "packages": ["optax"],
            "counts": {"new": surface},
            "rows": [
                {
                    "path": f"optax.new_{i}",
                    "change": "added",
                    "kind": "function",
                    "old": "",
                    "new": "def f()",
                    "where": "optax/x.py:1",
                    "verdict": "new",
                    "uses": [],
                }
                for i in range(surface)
            ],
        },
    }
    report["findings"] = findings_.group(rows)
    return report


@pytest.fixture(scope="module")
def big() -> Any:
    report = big_report()
    return report, report_markdown.render(report)


def test_the_synthetic_report_is_as_large_as_promised(big: Any) -> None:
    report, _ = big
    assert len(report["findings"]) == 700 and sum(len(f["contracts"]) for f in report["findings"]) == 5000


def test_report_md_holds_every_finding_and_a_bounded_sample_of_rows(big: Any) -> None:
    report, md = big
    assert all(f'<a id="f{f["number"]}"></a>' in md for f in report["findings"])
    budget = report_markdown.ROW_BUDGET
    for f in report["findings"]:
        shown = sum(f'<a id="f{f["number"]}-' in line for line in md.splitlines() if line.startswith("|"))
        assert shown == min(len(f["contracts"]), report_markdown.SAMPLE, budget), f["number"]
        budget -= shown
    assert budget == 0 and len(md.encode()) < 400_000  # 700 finding lines and 250 rows
    left = sum(int(m[1]) for m in re.finditer(r"^(\d+) more \w+ rows? not shown", md, re.M))
    assert left == 5000 - report_markdown.ROW_BUDGET
    assert "every row is in `report.html`" in md
    assert "tests/contracts/test_u.py::test_same[17]" not in md and "## Unchanged (3000)" in md
    surface_rows = [line for line in md.splitlines() if line.startswith("| `optax.new_")]
    assert (
        len(surface_rows) == report_surface.MARKDOWN_ROWS
        and f"{2000 - report_surface.MARKDOWN_ROWS} more new surface rows" in md
    )


def test_the_sample_takes_one_row_of_each_test_first() -> None:
    f: Any = {"contracts": [f"a{i}" for i in range(9)] + ["b0", "c0"], "tests": [["a", 9], ["b", 1], ["c", 1]]}
    assert report_markdown.sample(f, 4) == ["a0", "a1", "b0", "c0"]
    assert report_markdown.sample(f, None)[:5] == ["a0", "a1", "a2", "a3", "b0"] or len(report_markdown.sample(f)) == 5


def test_every_link_of_report_md_lands_on_an_anchor_of_report_md(big: Any) -> None:
    _, md = big
    anchors = set(re.findall(r'<a id="([\w-]+)"></a>', md))
    assert set(re.findall(r"\]\(#([\w-]+)\)", md)) <= anchors


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.ids: list[str] = []
        self.bad: list[str] = []

    def handle_starttag(self, tag: Any, attrs: Any) -> None:
        if tag not in ("meta", "br", "hr", "img"):
            self.stack.append(tag)
        self.ids += [v for k, v in attrs if k == "id"]
        self.bad += [tag] if tag in ("script", "link", "iframe") else []

    def handle_endtag(self, tag: Any) -> None:
        assert self.stack and self.stack[-1] == tag, (tag, self.stack[-5:])
        self.stack.pop()


def test_report_html_holds_every_row_folded_per_finding_and_is_self_contained(big: Any) -> None:
    report, _ = big
    page = report_html.render(report)
    tags = _Tags()
    tags.feed(page)
    assert (
        tags.stack == [] and tags.bad == [] and len(tags.ids) == len(set(tags.ids))
    )  # well nested, no script, ids unique
    assert page.count('<details class="finding"') == 700
    for f in report["findings"]:
        for m, _cid in enumerate(f["contracts"], 1):
            assert f'<tr id="f{f["number"]}-{m}">' in page
    assert "test_same[2999]" in page and "optax.new_1999" in page
    assert "<script" not in page and "http" not in page.split("</style>")[0]


def test_report_json_keeps_every_row(big: Any) -> None:
    report, _ = big
    assert len(json.loads(report_json.render(report))["contracts"]) == 8000


def test_the_pr_comment_and_the_job_summary_stay_inside_githubs_limits_and_link_the_report(
    big: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, md = big
    body = comment.body(md, "https://example.invalid/artifact/1")
    assert len(body) <= GITHUB_COMMENT and len(body.encode()) <= comment.BODY_LIMIT
    assert body.endswith("(https://example.invalid/artifact/1)\n") and "more finding(s)" in body
    assert body.count("<details") == body.count("</details>")
    monkeypatch.setenv("GITHUB_SERVER_URL", "https://github.com")
    monkeypatch.setenv("GITHUB_REPOSITORY", "team/repo")
    monkeypatch.setenv("GITHUB_RUN_ID", "42")
    monkeypatch.setenv("INPUT_ARTIFACT_NAME", "gate-report")
    huge = tmp_path / "report.md"
    huge.write_text(md * 8)  # whatever report.md holds: far beyond 1 MiB
    text = run.summary(huge, "fail", 1, "broken")
    assert len(text.encode()) <= run.SUMMARY_LIMIT <= GITHUB_SUMMARY
    assert "**gate-report** of [this run](https://github.com/team/repo/actions/runs/42)" in text
    assert text.count("<details") == text.count("</details>") and "cut here to stay inside GitHub's limit" in text
    small = tmp_path / "small.md"
    small.write_text("# Optax upgrade gate: PASS\n")
    assert "cut here" not in run.summary(small, "pass", 0, "broken")


@pytest.mark.parametrize("limit", [500, 2_000, 10_000])
def test_fit_keeps_whole_lines_and_says_what_it_left_out(limit: Any) -> None:
    md = "# head\n\n## Findings (300)\n\n" + "\n".join(
        f"{i}. **broken** `optax.a{i}`: cause {'x' * 40}" for i in range(1, 301)
    )
    text = comment.fit(md, limit, "[full](u)\n")
    assert len(text.encode()) <= limit and text.endswith("[full](u)\n")
    kept = [line for line in text.splitlines() if comment.FINDING_LINE.match(line)]
    assert all(line in md.splitlines() for line in kept)
    assert f"{300 - len(kept)} more finding(s)" in text


def test_a_folded_findings_summary_keeps_the_teams_lines_in_sight(big: Any) -> None:
    """On report.html a finding's "your code: train.py:17 calls this API: cannot tell without --run" is in its
    summary, not inside its fold, so the folded page shows where it fails as well as why."""
    import copy

    report = copy.deepcopy(big[0])
    first = next(f for f in report["findings"] if f.get("section", "contracts") == "contracts")
    first["your_code"] = ["train.py:17"]
    page = report_html.render(report)
    summary = page[page.index(f'<details class="finding" id="f{first["number"]}"><summary>') :]
    summary = summary[: summary.index("</summary>")]
    assert "train.py:17" in summary, summary
