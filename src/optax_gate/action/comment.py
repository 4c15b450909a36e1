"""``comment`` of the action's entry script: the gate's findings as one comment on the pull request, through the
``gh`` CLI (``gh api``).

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from pathlib import Path

MARKER = "<!-- optax-gate -->"
#: Longest comment body GitHub accepts is 65 536 characters; the body is built
#: to stay under this (:func:`fit`), whatever the report's size.
BODY_LIMIT = 60_000
#: A finding's line in report.md (``optax_gate.gate.report.markdown.finding_line``).
FINDING_LINE = re.compile(r"^\d+\. ")


def fit(markdown: str, limit: int, more: str) -> str:
    """``markdown`` cut to whole lines so that the text returned, ``more``
    included, is at most ``limit`` characters and UTF-8 bytes: the lines that
    fit, an open ``<details>`` closed, then a line saying how many findings
    (report.md's numbered lines) and lines were left out, then ``more``
    (where the whole report is). The text unchanged, with ``more``, when it fits."""
    lines = markdown.rstrip("\n").split("\n")
    whole = "\n".join(lines) + "\n\n" + more
    if len(whole.encode()) <= limit:
        return whole
    budget = limit - len(more.encode()) - 300  # room for the closing tags and the line saying what was left out
    kept: list[str] = []
    size, depth = 0, 0
    for line in lines:
        cost = len(line.encode()) + 1
        if size + cost > budget:
            break
        kept.append(line)
        size += cost
        depth += line.count("<details") - line.count("</details>")
    left = lines[len(kept) :]
    findings = sum(1 for line in left if FINDING_LINE.match(line))
    what = (
        f"{findings} more finding(s) and {len(left) - findings} more line(s)"
        if findings
        else f"{len(left)} more line(s)"
    )
    closing = ["", "</details>"] * max(depth, 0)
    return (
        "\n".join([*kept, *closing, "", f"… cut here to stay inside GitHub's limit: {what} are in the full report."])
        + "\n\n"
        + more
    )


def say(message: str) -> None:
    """Print ``message`` to the job's log, prefixed with the step's name."""
    print(f"optax-gate comment: {message}", flush=True)


def pull_request() -> int | None:
    """The pull request's number from the event payload, or None."""
    path = os.environ.get("GITHUB_EVENT_PATH")
    try:
        event = json.loads(Path(path).read_text(encoding="utf-8")) if path else {}
    except (OSError, ValueError):
        return None
    number = (event.get("pull_request") or {}).get("number") or event.get("number")
    return int(number) if number else None


def report_url() -> str:
    """Where the report can be opened: ``$ARTIFACT_URL`` (the uploaded artifact), else the workflow run's page."""
    if os.environ.get("ARTIFACT_URL"):
        return os.environ["ARTIFACT_URL"]
    server = os.environ.get("GITHUB_SERVER_URL", "https://github.com")
    return f"{server}/{os.environ.get('GITHUB_REPOSITORY', '')}/actions/runs/{os.environ.get('GITHUB_RUN_ID', '')}"


#: ``<a id="f4"></a>``: an anchor of report.md (``optax_gate.gate.report.markdown``).
ANCHOR = re.compile(r'<a id="[^"]*"></a>')
#: ``[text](#f4-1)``: a link to an anchor of the same page; the text may hold
#: one level of brackets (a parametrized test: ``test_x[float32]``).
IN_PAGE_LINK = re.compile(r"\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(#[^)\s]*\)")
#: ``(see API surface below)``: a finding beyond the contracts pointing to its section
#: (``optax_gate.gate.report.surface_section``).
SEE_BELOW = re.compile(r"\(see ([^()]*?) below\)")


def plain(markdown: str) -> str:
    """``markdown`` without in-page navigation: links to ``#anchors`` become
    their text, anchor tags go, and "see SECTION below" points to the full
    report (those sections are after ``## Versions``, not in the comment).
    Links to other pages are kept."""
    text = IN_PAGE_LINK.sub(r"\1", ANCHOR.sub("", markdown))
    return SEE_BELOW.sub(r"(see \1 in the full report)", text)


def body(report_md: str, url: str) -> str:
    """The comment: the marker, the report up to its versions section (the
    verdict, reasons and findings) as :func:`plain` text, the link; at most
    :data:`BODY_LIMIT` characters by construction (:func:`fit`)."""
    head = plain(report_md.split("\n## Versions", 1)[0]).rstrip()
    link = f"[Full report (report.html: every row, folded; report.md; report.json; evidence)]({url})\n"
    return fit(f"{MARKER}\n{head}", BODY_LIMIT, link)


class GhFailed(Exception):
    """A ``gh api`` call failed (not installed, timed out or refused); its message says why."""


def gh_env() -> dict[str, str]:
    """The environment of ``gh``: this one, with ``GH_TOKEN`` from ``INPUT_TOKEN`` when unset or empty."""
    env = dict(os.environ)
    if not env.get("GH_TOKEN", "").strip() and env.get("INPUT_TOKEN", "").strip():
        env["GH_TOKEN"] = env["INPUT_TOKEN"].strip()
    return env


def gh(*args: str) -> str:
    """Run ``gh api ARGS`` with :func:`gh_env`'s token; its standard output.

    Raises:
      GhFailed: gh is missing, timed out or exited otherwise than 0."""
    try:
        proc = subprocess.run(["gh", "api", *args], capture_output=True, text=True, timeout=120, env=gh_env())
    except FileNotFoundError:
        raise GhFailed("the gh command was not found") from None
    except subprocess.TimeoutExpired:
        raise GhFailed("gh did not answer within 120 s") from None
    if proc.returncode != 0:
        raise GhFailed(
            (proc.stderr or proc.stdout).strip().splitlines()[-1:][0]
            if (proc.stderr or proc.stdout).strip()
            else f"gh exit status {proc.returncode}"
        )
    return proc.stdout


def existing(repo: str, number: int) -> int | None:
    """The id of this action's comment on the pull request (the first holding :data:`MARKER`), or None."""
    pages = json.loads(gh("--paginate", "--slurp", f"repos/{repo}/issues/{number}/comments") or "[]")
    comments = [c for page in pages for c in (page if isinstance(page, list) else [page])]
    return next((c["id"] for c in comments if MARKER in (c.get("body") or "")), None)


def post(repo: str, number: int, text: str) -> str:
    """Create or update the comment; returns what was done."""
    found = existing(repo, number)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as f:
        json.dump({"body": text}, f)
    try:
        if found is None:
            gh("-X", "POST", f"repos/{repo}/issues/{number}/comments", "--input", f.name)
            return "created"
        gh("-X", "PATCH", f"repos/{repo}/issues/comments/{found}", "--input", f.name)
        return f"updated (comment {found})"
    finally:
        os.unlink(f.name)


def main() -> int:
    """Post or update the pull request's comment with the report's summary; the exit status (0 also when
    there is nothing to post)."""
    number, repo = pull_request(), os.environ.get("GITHUB_REPOSITORY", "")
    report = Path(os.environ.get("INPUT_REPORT", "").strip() or "missing-report.md")
    if number is None or not repo:
        say("not a pull request (no number in GITHUB_EVENT_PATH or no GITHUB_REPOSITORY): nothing posted")
        return 0
    if not report.is_file():
        text = (
            f"{MARKER}\n# Optax upgrade gate: NOT-VERIFIED\n\nThe gate wrote no report (see the job's "
            f"log).\n\n[The run]({report_url()})\n"
        )
    else:
        text = body(report.read_text(encoding="utf-8"), report_url())
    if not gh_env().get("GH_TOKEN", "").strip():
        say("no token given (neither GH_TOKEN nor INPUT_TOKEN is set): trying gh's own login")
    try:
        done = post(repo, number, text)
    except GhFailed as exc:
        why = (
            "the token lacks the permission (give the job `pull-requests: write`)" if "403" in str(exc) else "gh failed"
        )
        say(f"nothing posted: {why}: {exc}; the gate's verdict and exit status are unchanged")
        return 0
    say(f"{done} on {repo}#{number}")
    return 0
