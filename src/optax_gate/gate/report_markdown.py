"""Markdown rendering of a gate report, for a person deciding an upgrade.

Order: the verdict, the counts and the verdict's reasons first; then the
findings, one line each (``optax_gate.gate.findings``: the differing contracts
grouped by cause, across APIs, broken first), each linking to its contract rows;
each finding naming the team's call sites of its APIs with ``--usage``
(``optax_gate.gate.call_sites``; those that touch the team's code first) and,
with ``--bisect``, the commit that changed it (``optax_gate.gate.report_bisect``); the
versions side by side; then what broke, what changed (drift), what was
fixed, what is new or gone, rows ordered by finding (anchors ``f<N>`` on a
finding, ``f<N>-<M>`` on its M-th row, the row naming its finding ``F<N>``);
the unchanged contracts last, folded. Details are in plain words
(``details.plain_detail``): ULP figures with the error, the relative error and
the tolerance; a snapshot drift says what drifted (``drift: dtype``) and
optimizer state dtype changes their bytes per parameter; "defect no longer
reproduces" for a pinned upstream defect that stopped reproducing, with what
happens now; never ``passed → failed`` for either (``optax_gate.gate.details``).
"""

from __future__ import annotations

from typing import Any

from optax_gate.gate import call_sites, details, report_bisect, report_surface, upstream_tests
from optax_gate.gate import findings as findings_
from optax_gate.gate import report_speed, source_specs

VERSION_KEYS = ("python", "optax", "jax", "jaxlib", "flax", "numpy", "platform")
_HEADINGS = {
    "broken": "Broken: passed in the baseline, fail in the candidate",
    "changed": "Changed: other differences (drift of baseline snapshots, skips)",
    "fixed": "Fixed: failed in the baseline and pass now, or a pinned upstream defect no longer reproduces",
    "new": "New: run only in the candidate",
    "gone": "Gone: did not run in the candidate",
}


def _cell(text: Any) -> str:
    return str(text if text is not None else "—").replace("|", "\\|").replace("\n", " ")


def _versions(report: dict[str, Any]) -> list[str]:
    b = report["baseline"].get("versions") or {}
    c = report["candidate"].get("versions") or {}
    lines = ["| package | baseline | candidate |", "|---|---|---|"]
    for key in VERSION_KEYS:
        mark = "" if b.get(key) == c.get(key) else " **←**"
        lines.append(f"| {key} | {_cell(b.get(key))} | {_cell(c.get(key))}{mark} |")
    return lines


def _findings(report: dict[str, Any]) -> list[dict[str, Any]]:
    if "findings" in report:
        return report["findings"]
    return findings_.group(report["contracts"], candidate_ran=report["candidate"].get("status") == "ran")


def finding_line(finding: dict[str, Any]) -> str:
    """One finding as one Markdown list line, its tests linking to their rows
    (a candidate that did not run at all: one link to the first of its rows,
    not one per test of the whole suite)."""
    k, n = finding["number"], len(finding["contracts"])
    if finding["api"] == "every API":
        return (f'{k}. <a id="f{k}"></a>**{finding["change"]}** `every API`: {_cell(finding["cause"])} '
                f'([all {n} contracts, listed below](#f{k}-1))')
    links, first = [], 1
    for name, count in finding["tests"]:
        links.append(f"[{name}](#f{k}-{first})" + (f" ×{count}" if count > 1 else ""))
        first += count
    who = findings_.subject([_cell(a) for a in finding.get("apis") or [finding["api"]]])
    return (f'{k}. <a id="f{k}"></a>**{finding["change"]}** {who}: {_cell(finding["cause"])} '
            f'({n} contract{"s" if n > 1 else ""} {finding["change"]}: {", ".join(links)})')


def render(report: dict[str, Any]) -> str:
    """The report as Markdown text ending in a newline."""
    verdict = report["verdict"]
    s = report["summary"]
    found = _findings(report)
    out = [f"# Optax upgrade gate: {verdict.upper()}", ""]
    out.append(
        f"Candidate `{' '.join(report['candidate'].get('requirements') or ['?'])}` against the baseline "
        f"`{' '.join(report['baseline'].get('requirements') or ['?'])}`: "
        + ", ".join(f"{s[k]} {k}" for k in ("broken", "changed", "fixed", "new", "gone", "unchanged"))
        + f" (of {sum(s.values())} contracts)."
    )
    out.append("")
    out += report_surface.headline(report)  # beyond the contracts (issue 10): counts
    for reason in report["reasons"]:
        out.append(f"- **{reason}**")
    for note in report.get("notes", []):
        out.append(f"- note: {note}")
    out += source_specs.markdown(report["candidate"])  # the commit of a package built from source
    if report.get("bisect"):
        out.append(report_bisect.summary_line(report))
    if found:  # the contract findings, then the broken rows beyond the contracts (report.json's list, section by section)
        out += ["", f"## Findings ({len(found)})", ""]
        for f in found:
            if f.get("section", "contracts") == "contracts":
                out += [finding_line(f) + call_sites.suffix(f), *report_bisect.markdown_lines(f)]  # --bisect: the commit
            elif f["section"] == "upstream-tests":
                out.append(upstream_tests.finding_line(f))
            else:
                out.append(report_surface.finding_line(f))
    out += upstream_tests.markdown(report)  # --upstream-tests: the cross-run of optax's own tests
    out += ["", "## Versions", "", *_versions(report), ""]
    for side in ("baseline", "candidate"):
        run = report[side]
        out.append(
            f"- {side}: status **{run.get('status')}**"
            + (f" — {_cell(run.get('reason'))}" if run.get("reason") else "")
            + f"; requirements: `{' '.join(run.get('requirements') or []) or '(lock file)'}`"
            + (f"; {run['duration_s']:.1f} s" if run.get("duration_s") is not None else "")
            + (f"; hypothesis profile `{run['hypothesis_profile']}`" if run.get("hypothesis_profile") else "")
            + (f"; pytest plugins installed but not loaded: {', '.join(f'`{n}`' for n in left_out)}"
               if (left_out := (run.get("pytest_plugins") or {}).get("left_out")) else "")
            + (f"; **from cache** `{run['from_cache']['key']}`, recorded {run['from_cache']['recorded']}"
               if run.get("from_cache") else "")
        )
    out.append("")
    anchor = {cid: (f["number"], m) for f in found for m, cid in enumerate(f["contracts"], 1)}
    for change, heading in _HEADINGS.items():
        rows = sorted((r for r in report["contracts"] if r["change"] == change),
                      key=lambda r: (anchor.get(r["id"], (0, 0)), r["id"]))
        if not rows:
            continue
        out += [f"## {heading} ({len(rows)})", ""]
        if change == "gone":  # usually all of them, for a candidate that did not run: fold
            out += ["<details><summary>contracts that ran in the baseline only</summary>", ""]
        out += ["| contract | API | guide | kind | baseline → candidate | detail |", "|---|---|---|---|---|---|"]
        for r in rows:
            k, m = anchor.get(r["id"], (0, 0))
            mark = f'<a id="f{k}-{m}"></a>[F{k}](#f{k}) ' if k else ""
            out.append(
                f"| {mark}`{_cell(r['id'])}` | `{_cell(r['api'])}` | {_cell(r['guide'])} | {r['kind']} | "
                f"{_cell(details.outcome_words(r))} | {_cell(details.plain_detail(r))} |"
            )
        out += ["", "</details>", ""] if change == "gone" else [""]
    unchanged = [r for r in report["contracts"] if r["change"] == "unchanged"]
    if unchanged:
        out += [f"## Unchanged ({len(unchanged)})", "", "<details><summary>contracts with the same outcome in both</summary>", ""]
        out += [f"- `{r['id']}` ({r['api']}, {r['kind']}): {r['candidate']}" for r in unchanged]
        out += ["", "</details>", ""]
    out += report_surface.markdown(report)  # beyond the contracts (issue 10): API surface, warnings, dependencies
    out += report_speed.section(report)  # issue 12: speed drift (empty without a speed result)
    out += ["---", "Exit status: 0 pass, 1 fail, 2 not verified. Machine-readable: `report.json` beside this file."]
    return "\n".join(out) + "\n"
