"""How a finding's bisection reads (``optax_gate.gate.bisect.flow``'s
``bisect`` entries): ``changed by <short sha> <subject> (#<PR>, <date>)``
linking the commit and the pull request on the package's public repository;
a range ``changed by one of N commits: ...`` with why the others were not
tested; or ``not bisected: <why>``. Used by report.md."""

from __future__ import annotations

import re
from collections.abc import Callable

from optax_gate.gate.base import model

#: Commits of a range named one by one in a line; a longer range is named by its two ends
#: (the report.json entry lists them all).
NAMED = 5


def _date(commit: model.BisectCommit) -> str:
    return str(commit.get("date", ""))[:10]


def _subject(c: model.BisectCommit) -> str:
    """The subject without its trailing ``(#N)`` (the PR is named after it)."""
    subject = str(c.get("subject", ""))
    return re.sub(rf"\s*\(#{c['pr']}\)\s*$", "", subject) if c.get("pr") else subject


def _md_commit(c: model.BisectCommit) -> str:
    pr = f"[#{c['pr']}]({c['pr_url']}), " if c.get("pr") else ""
    subject = _subject(c).replace("|", "\\|").replace("[", "\\[").replace("]", "\\]")
    return f"[`{c['short']}`]({c['url']}) {subject} ({pr}{_date(c)})"


def _text_commit(c: model.BisectCommit) -> str:
    pr = f"#{c['pr']}, " if c.get("pr") else ""
    return f"{c['short']} {_subject(c)} ({pr}{_date(c)})"


def _suspects(entry: model.FindingBisect, one: Callable[[model.BisectCommit], str]) -> str:
    """A range's commits that touch the APIs' source files (``optax_gate.gate.bisect.flow.suspects``), the likely
    ones."""
    if "suspects" not in entry:
        return ""
    files = entry.get("source_files") or []
    where = ", ".join(files[:3]) + (" …" if len(files) > 3 else "")
    if not entry["suspects"]:
        return f" (none of them touches the APIs' source: {where})" if files else ""
    named = "; ".join(one(c) for c in entry["suspects"][:NAMED]) + (" …" if len(entry["suspects"]) > NAMED else "")
    return f", most likely the {len(entry['suspects'])} touching the APIs' source ({where}): {named}; the range runs"


def words(entry: model.FindingBisect, markdown: bool = False) -> str:
    """One bisection entry in words (Markdown links with ``markdown``)."""
    one = _md_commit if markdown else _text_commit
    package = f"{entry['package']} " if entry.get("package") else ""
    if entry["status"] == "found":
        return f"changed by {package}{one(entry['commits'][0])}"
    if entry["status"] == "range":
        commits = entry["commits"]
        if len(commits) <= NAMED:
            named = "; ".join(one(c) for c in commits)
        else:  # the two ends of the range (report.json lists every commit)
            named = f"from {one(commits[0])} to {one(commits[-1])}"
        reasons = sorted(set(entry.get("skipped", {}).values()))
        why = (
            f" ({len(entry.get('skipped', {}))} could not be tested: {reasons[0]}"
            + (" …" if len(reasons) > 1 else "")
            + ")"
        )
        likely = _suspects(entry, one)  # the commits to read first, before the range's ends
        return f"changed by {package}one of {len(commits)} commits{likely}: {named}{why}"
    return f"not bisected{f' ({package.strip()})' if package else ''}: {entry.get('reason', '')}"


def markdown_lines(finding: model.Finding) -> list[str]:
    """The lines under a finding in report.md (none without a bisection)."""
    return [f"   - {words(entry, markdown=True)}" for entry in finding.get("bisect") or []]


def summary_line(report: model.Report) -> str:
    """One line on the bisection as a whole ("" without one)."""
    b = report.get("bisect")
    if not b:
        return ""
    parts = []
    for name, p in (b.get("packages") or {}).items():
        if p.get("error"):
            parts.append(f"{name}: not bisected ({p['error']})")
        else:
            parts.append(
                f"{name} {p.get('from')}..{p.get('to')}: {p.get('commits')} first-parent commits, "
                f"{p.get('built', 0)} built, {p.get('searches', 0)} search(es), in the "
                f"{p.get('environment', 'candidate')}'s "
                "environment"
            )
    error = f"; {b['error']}" if b.get("error") else ""
    return f"- bisection ({b.get('duration_s', 0):.0f} s): " + ("; ".join(parts) or "nothing bisected") + error
