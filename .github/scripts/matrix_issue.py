#!/usr/bin/env python3
"""Keep one tracking issue for the scheduled release matrix, with GitHub's gh CLI.

After the merge step of .github/workflows/matrix.yml, on scheduled runs:

- an environment of the merged report (reports/matrix/report.json) has the
  verdict ``fail`` (a broken finding): open the issue titled TITLE, or, when
  one with exactly that title is open, replace its body (never a second one);
  the body lists each failing environment's reasons and broken APIs and links
  to the run;
- the run is green (exit status 0: every environment verified, none broken):
  close the open issue with a comment linking to the run;
- otherwise (an environment not verified, no report at all): leave the issue
  as it is; a run that judged nothing neither opens nor closes it.

Standard library only, so the step runs with the runner's python3 and needs
no environment of the gate; it reads only report.json (the matrix report's
machine form), not the gate's code. The pattern is xarray's upstream-dev CI
(one issue, updated in place, closed when green).

Usage: matrix_issue.py --report reports/matrix/report.json --run-url URL [--title TITLE]
Exit status: 0 when the issue is in the state the report asks for (or left
alone), 1 when gh failed (its message on stderr).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

TITLE = "Release matrix: broken on the scheduled run"
#: GitHub refuses an issue body over 65536 characters; leave room for the footer.
BODY_LIMIT = 60000
APIS_NAMED = 20


class GhFailed(Exception):
    """gh exited non-zero; the message is its output."""


def gh(*args: str) -> str:
    proc = subprocess.run(["gh", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise GhFailed(f"gh {' '.join(args[:2])} failed: {(proc.stderr or proc.stdout).strip()}")
    return proc.stdout


def open_issue(title: str) -> int | None:
    """The number of the open issue whose title is exactly ``title`` (the
    oldest when several are), else None."""
    found = json.loads(gh("issue", "list", "--state", "open", "--search", f'"{title}" in:title',
                          "--json", "number,title", "--limit", "100") or "[]")
    numbers = sorted(issue["number"] for issue in found if issue.get("title") == title)
    return numbers[0] if numbers else None


def failing(report: dict) -> list[dict]:
    """The environments with a broken finding (verdict ``fail``)."""
    return [env for env in report.get("environments", []) if env.get("verdict") == "fail"]


def green(report: dict) -> bool:
    """A run with a verified baseline, every environment verified and none broken."""
    return (report.get("exit") or {}).get("status") == 0 and bool(report.get("environments")) and all(
        env.get("verdict") == "pass" for env in report["environments"])


def body(report: dict, run_url: str) -> str:
    """The issue's text: each failing environment with its reasons and broken APIs, and the run's link."""
    envs = failing(report)
    lines = [f"The scheduled release matrix found a broken finding in {len(envs)} environment(s): "
             f"[the run]({run_url}) (its job summary and the `release-matrix-report` artifact " "hold the full " "report).", ""]
    for env in envs:
        mark = " (unreleased)" if env.get("unreleased") else ""
        lines.append(f"### `{env['name']}`{mark}: {' '.join(env.get('specs') or [])}")
        for source in env.get("sources") or []:
            commit = source.get("commit") or {}
            if commit:
                lines.append(f"- built from {source['package']} commit `{commit['short']}` ({commit['date'][:10]}) "
                             f"{commit['subject']}")
        lines += [f"- {reason}" for reason in env.get("reasons") or []]
        broken = [(a["api"], a["cells"][env["name"]]["broken"]) for a in report.get("apis", [])
                  if a.get("cells", {}).get(env["name"], {}).get("broken")]
        if broken:
            named = ", ".join(f"`{api}` ({n})" for api, n in broken[:APIS_NAMED])
            more = f", and {len(broken) - APIS_NAMED} more" if len(broken) > APIS_NAMED else ""
            lines.append(f"- broken contracts by API: {named}{more}")
        lines.append("")
    text = "\n".join(lines)
    if len(text) > BODY_LIMIT:
        text = text[:BODY_LIMIT].rsplit("\n", 1)[0] + "\n\n… (cut to fit; the full list is in the run's report)"
    return text + "\n\n_Opened and updated by `.github/scripts/matrix_issue.py`; closed when a scheduled run is " "green._\n"


def sync(report: dict | None, run_url: str, title: str = TITLE) -> str:
    """Bring the issue in line with ``report``; what was done, in words."""
    if report is None:
        return "no report: the issue is left as it is"
    if failing(report):
        number = open_issue(title)
        with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as f:
            f.write(body(report, run_url))
        try:
            if number is None:
                url = gh("issue", "create", "--title", title, "--body-file", f.name).strip()
                return f"opened {url or 'the issue'}"
            gh("issue", "edit", str(number), "--body-file", f.name)
            return f"updated issue #{number}"
        finally:
            Path(f.name).unlink(missing_ok=True)
    if green(report):
        number = open_issue(title)
        if number is None:
            return "green; no open issue to close"
        gh("issue", "close", str(number), "--comment", f"The scheduled run {run_url} is green again: closing.")
        return f"green: closed issue #{number}"
    return "not green and nothing broken (an environment not verified): the issue is left as it is"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--report", type=Path, required=True, help="the merged matrix report.json")
    p.add_argument("--run-url", required=True, help="link to the workflow run")
    p.add_argument("--title", default=TITLE, help="the tracking issue's title (default: %(default)s)")
    args = p.parse_args(argv)
    try:
        report = json.loads(args.report.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"matrix_issue: cannot read {args.report}: {exc}", file=sys.stderr)
        report = None
    try:
        print(f"matrix_issue: {sync(report, args.run_url, args.title)}")
    except GhFailed as exc:
        print(f"matrix_issue: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
