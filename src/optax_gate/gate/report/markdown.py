"""Markdown rendering of a gate report, for a person deciding an upgrade.

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

from collections.abc import Callable

from optax_gate.gate.base import details, model, plain_text
from optax_gate.gate.install import source_specs
from optax_gate.gate.judge import causes
from optax_gate.gate.judge import findings as findings_
from optax_gate.gate.report import bisect_section as report_bisect
from optax_gate.gate.report import generated_section as report_generated
from optax_gate.gate.report import speed_section as report_speed
from optax_gate.gate.report import surface_section as report_surface
from optax_gate.gate.report import team_run_section as report_team_run
from optax_gate.gate.report import upstream_section, your_code_line
from optax_gate.gate.report.table_cell import cell
from optax_gate.gate.run import evidence
from optax_gate.gate.team_code import scope
from optax_gate.kit import guides

#: Contract rows report.md shows per finding (every row is in report.html and report.json).
SAMPLE = 5
#: Contract rows report.md shows in all, whatever the number of findings (the
#: findings after the budget is spent are listed without rows; report.html has them).
ROW_BUDGET = 250
#: Findings named in a "rows not shown" line.
NAMED_FINDINGS = 10
VERSION_KEYS = ("python", "optax", "jax", "jaxlib", "flax", "numpy", "platform")
_HEADINGS = {
    "broken": "Broken: passed in the baseline, fail in the candidate",
    "changed": "Changed: other differences (drift of baseline snapshots, skips)",
    "fixed": "Fixed: failed in the baseline and pass now, or a pinned upstream defect no longer reproduces",
    "new": "New: run only in the candidate",
    "gone": "Gone: did not run in the candidate",
}


def _versions(report: model.Report) -> list[str]:
    b = report["baseline"].get("versions") or {}
    c = report["candidate"].get("versions") or {}
    lines = ["| package | baseline | candidate |", "|---|---|---|"]
    for key in VERSION_KEYS:
        mark = "" if b.get(key) == c.get(key) else " **←**"
        lines.append(f"| {key} | {cell(b.get(key))} | {cell(c.get(key))}{mark} |")
    return lines


def _findings(report: model.Report) -> list[model.Finding]:
    if "findings" in report:
        return report["findings"]
    return causes.of_report(report["contracts"], candidate_ran=report["candidate"].get("status") == "ran")


def sample(finding: model.Finding, limit: int | None = None) -> list[str]:
    """The contract ids of ``finding`` report.md shows, in the finding's order:
    the first row of each of its tests, then its next rows, up to ``limit``
    (default :data:`SAMPLE`; None: all)."""
    limit = SAMPLE if limit is None else limit
    ids = finding["contracts"]
    if len(ids) <= limit:
        return list(ids)
    chosen: set[str] = set()
    first = 0
    for _, count in finding.get("tests") or []:  # one row of each test first
        if len(chosen) < limit and first < len(ids):
            chosen.add(ids[first])
        first += count
    for cid in ids:
        if len(chosen) >= limit:
            break
        chosen.add(cid)
    return [cid for cid in ids if cid in chosen]


def finding_line(finding: model.Finding, shown: set[str] | None = None) -> str:
    """One finding as one Markdown list line, its tests linking to their rows
    (a candidate that did not run at all: one link to the first of its rows,
    not one per test of the whole suite). ``shown``: the contract ids whose rows
    are on the page (a test whose first row is not is named without a link)."""
    k, n = finding["number"], len(finding["contracts"])
    if finding["api"] == "every API":
        return (
            f'{k}. <a id="f{k}"></a>**{findings_.heading(finding)}** `every API`: {cell(finding["cause"])} ([all '
            f"{n} contracts, listed below](#f{k}-1))"
        )
    links, first = [], 1
    for name, count in finding["tests"]:
        linked = shown is None or finding["contracts"][first - 1] in shown
        links.append((f"[{name}](#f{k}-{first})" if linked else name) + (f" ×{count}" if count > 1 else ""))
        first += count
    who = findings_.subject([cell(a) for a in finding.get("apis") or [finding["api"]]])
    return (
        f'{k}. <a id="f{k}"></a>**{findings_.heading(finding)}** {who}: {cell(finding["cause"])} '
        f"({findings_.contracts_words(finding)}: {', '.join(links)})"
    )


class Page:
    """What every section of one rendering shares: the report, its findings,
    the contract ids shown (None: every row, for report.html's full form),
    and each contract's (finding, row) anchor numbers."""

    def __init__(self, report: model.Report, limit: int | None = SAMPLE):
        self.report = report
        self.judged = evidence.judged(report)  # both sides' contracts ran
        self.findings = _findings(report)
        self.full = limit is None
        contract_findings = [f for f in self.findings if f.get("section", "contracts") == "contracts"]
        self.shown: set[str] | None = None
        if not self.full:  # at most `limit` rows a finding, at most ROW_BUDGET in all (the first findings first)
            self.shown, left = set(), ROW_BUDGET
            for f in contract_findings:
                if left <= 0:
                    break
                rows = sample(f, min(limit, left)) if limit else []
                self.shown.update(rows)
                left -= len(rows)
        self.anchor = {cid: (f["number"], m) for f in contract_findings for m, cid in enumerate(f["contracts"], 1)}

    def is_shown(self, cid: str) -> bool:
        """Whether contract ``cid``'s row is on the page (every row when the page shows all of them)."""
        return self.shown is None or cid in self.shown or cid not in self.anchor


def _verdict(page: Page) -> list[str]:
    report = page.report
    s = report["summary"]
    out = [f"# Optax upgrade gate: {report['verdict'].upper()}", ""]
    if report.get("team_run"):  # gate --run: the team's own run opens the report
        out += [f"- **{reason}**" for reason in report["reasons"]]
        section = report_team_run.section(report)
        out += (
            section[1:] if not report["reasons"] and section[:1] == [""] else section
        )  # one blank line after the title
    against = (
        f"Candidate `{' '.join(report['candidate'].get('requirements') or ['?'])}` against the baseline "
        f"`{' '.join(report['baseline'].get('requirements') or ['?'])}`"
    )
    if (
        not page.judged
    ):  # a refusal, or a side that never ran: nothing was compared, so no counts and no "no differences"
        idle = evidence.not_run(report)
        who = "the contracts of both sides did not run" if len(idle) != 1 else f"the {idle[0]}'s contracts did not run"
        out += [f"{against}: nothing was compared ({who}); the reason is below and in the Versions table.", ""]
    else:
        out.append(
            f"{against}: "
            + ", ".join(f"{s[k]} {k}" for k in ("broken", "changed", "fixed", "new", "gone", "unchanged"))
            + f" (of {sum(s.values())} contracts"
            + (
                "; the candidate's outcomes are the baseline's, copied, not run: its code is the baseline's"
                if report["candidate"].get("same_code")
                else ""
            )
            + ")."
        )
        out.append("")
        out += report_surface.headline(report)  # beyond the contracts (issue 10): counts
        out += report_generated.lines(report)  # the APIs contracted from their signatures (issue 40)
    for reason in report["reasons"] if not report.get("team_run") else []:
        if not page.judged and reason.startswith("beyond the contracts:"):  # this page has no such section: say where
            reason += (
                " (read from the installed packages, without running them; the rows are in the .json beside this file)"
            )
        out.append(f"- **{reason}**")
    for note in report.get("notes", []):
        out.append(f"- note: {note}")
    out += source_specs.markdown(report["candidate"])  # the commit of a package built from source
    if report.get("bisect"):
        out.append(report_bisect.summary_line(report))
    return out


def _findings_section(page: Page) -> list[str]:
    """The findings, one line each: the contract findings, then the broken rows
    beyond the contracts (report.json's list, section by section); with a scope
    (``optax_gate.gate.team_code.scope``: --usage, --run), the team's findings first and
    those its code does not reach under "Optax changed elsewhere"."""
    if not page.findings:
        return []
    out: list[str] = []
    yours, elsewhere = scope.split(page.findings)  # findings the team's code does not reach do not set the verdict
    for heading, group in (("Findings", yours), (scope.ELSEWHERE_HEADING, elsewhere)):
        if not group:
            continue
        out += ["", f"## {heading} ({len(group)})", ""]
        if group is elsewhere:
            out += [
                (
                    "Your run does not diverge for these (it may call their APIs: each of their call sites "
                    "says what your run does "
                    "there), so they do not set the verdict (`--fail-on all`: they do)."
                    if (scoped := page.report.get("scope")) and scoped.get("by") == "run"
                    else "Your code does not reach these changes (it calls none of their APIs, or every call's "
                    "arguments rule the "
                    "change out: each call site says which), so they do not set the verdict (`--fail-on all`: they do)."
                ),
                "",
            ]
        for f in group:
            if f.get("section", "contracts") == "contracts":
                out += [
                    finding_line(f, page.shown) + your_code_line.suffix(f),
                    *report_bisect.markdown_lines(f),
                ]  # --bisect: the commit
            elif f["section"] == "upstream-tests":
                out.append(upstream_section.finding_line(f))
            else:
                out.append(report_surface.finding_line(f))
    out += upstream_section.markdown(page.report)  # --upstream-tests: the cross-run of optax's own tests
    return out


def _versions_section(page: Page) -> list[str]:
    report = page.report
    out = ["", "## Versions", "", *_versions(report), ""]
    for side in ("baseline", "candidate"):
        run = report[side]
        said = run.get("reason") and any(
            run["reason"].removeprefix("not run: ") in r for r in report.get("reasons", [])
        )
        out.append(
            f"- {side}: "
            + (
                "**contracts not run**: its code is the baseline's, so its outcomes are the baseline's"
                if run.get("same_code")
                else f"status **{run.get('status')}**"
            )
            + (" — the reason above" if said else f" — {cell(run.get('reason'))}" if run.get("reason") else "")
            + f"; requirements: `{' '.join(run.get('requirements') or []) or '(lock file)'}`"
            + (f"; {run['duration_s']:.1f} s" if run.get("duration_s") is not None else "")
            + (f"; hypothesis profile `{run['hypothesis_profile']}`" if run.get("hypothesis_profile") else "")
            + (
                f"; pytest plugins installed but not loaded: {', '.join(f'`{n}`' for n in left_out)}"
                if (left_out := (plugins.get("left_out") if (plugins := run.get("pytest_plugins")) else None))
                else ""
            )
            + (
                f"; **from cache** `{run['from_cache']['key']}`, recorded {run['from_cache']['recorded']}"
                + (
                    f" ({c['modules']} of {c['of']} contract modules; the others ran now)"
                    if (c := run["from_cache"]).get("modules", c.get("of")) != c.get("of")
                    else ""
                )
                if run.get("from_cache")
                else ""
            )
        )
        if side == "candidate" and (chosen := report["candidate"].get("selection")):
            out += _selection_lines(chosen)
    out.append("")
    return out


def _selection_lines(chosen: model.Selection) -> list[str]:
    """Per contract module, whether the candidate ran it (and which changed function it executes) or took the baseline's
    outcomes."""
    if chosen.get("everything"):
        return [f"   - every contract module ran: {chosen['everything']}"]
    out = []
    for name in chosen["ran"]:
        hit = chosen["reached"].get(name)
        why = f"executes {', '.join(f'`{c}`' for c in hit)}" if hit else "no record of what it executes"
        apis = (chosen.get("apis") or {}).get(name)
        if apis:
            why += (
                f"; only the contracts of {plain_text.named_list(apis)} ran, those APIs' contracts having "
                "executed it at the baseline: "
                "the module's other contracts are the baseline's outcomes"
            )
        out.append(f"   - `{name}`: ran ({why})")
    if chosen["taken"]:
        out.append(
            "   - the baseline's outcomes, not run (they execute no changed function): "
            f"{', '.join(f'`{n}`' for n in chosen['taken'])}"
        )
    return out


#: Where the rows report.md leaves out are (said under each table that left some out).
ELSEWHERE = "`report.html` (beside this file, folded by finding) and `report.json` (`contracts`)"


def row_cells(r: model.ContractRow) -> list[str]:
    """A contract row's cells after its id: API, guide, kind, outcomes, detail in plain words."""
    return [
        f"`{cell(r['api'])}`",
        cell(guides.shown(r["guide"])),
        r["kind"],
        cell(details.outcome_words(r)),
        cell(details.plain_detail(r)),
    ]


def _rows_section(page: Page) -> list[str]:
    """What broke, changed, was fixed, is new or gone: a table per change, rows
    ordered by finding; in report.md only the sampled rows (:func:`sample`)."""
    out: list[str] = []
    for change, heading in _HEADINGS.items():
        rows = sorted(
            (r for r in page.report["contracts"] if r["change"] == change),
            key=lambda r: (page.anchor.get(r["id"], (0, 0)), r["id"]),
        )
        if not rows:
            continue
        shown = [r for r in rows if page.is_shown(r["id"])]
        out += [f"## {heading} ({len(rows)})", ""]
        if change == "gone":  # usually all of them, for a candidate that did not run: fold
            out += ["<details><summary>contracts that ran in the baseline only</summary>", ""]
        out += ["| contract | API | guide | kind | baseline → candidate | detail |", "|---|---|---|---|---|---|"]
        for r in shown:
            k, m = page.anchor.get(r["id"], (0, 0))
            mark = f'<a id="f{k}-{m}"></a>[F{k}](#f{k}) ' if k else ""
            out.append(f"| {mark}`{cell(r['id'])}` | " + " | ".join(row_cells(r)) + " |")
        left = len(rows) - len(shown)
        if left:
            per: dict[int, int] = {}
            for r in rows:
                if not page.is_shown(r["id"]):
                    per[page.anchor[r["id"]][0]] = per.get(page.anchor[r["id"]][0], 0) + 1
            which = ", ".join(f"F{k}: {n}" for k, n in list(per.items())[:NAMED_FINDINGS])
            more = f", and {len(per) - NAMED_FINDINGS} more findings" if len(per) > NAMED_FINDINGS else ""
            out += [
                "",
                f"{left} more {change} row{'s' if left > 1 else ''} not shown ({which}{more}; at most {SAMPLE} per "
                f"finding and {ROW_BUDGET} in all here): every row is in {ELSEWHERE}.",
            ]
        out += ["", "</details>", ""] if change == "gone" else [""]
    return out


def _unchanged_section(page: Page) -> list[str]:
    unchanged = [r for r in page.report["contracts"] if r["change"] == "unchanged"]
    if not unchanged:
        return []
    if not page.full:
        return [f"## Unchanged ({len(unchanged)})", "", f"Same outcome in both: listed in {ELSEWHERE}.", ""]
    out = [
        f"## Unchanged ({len(unchanged)})",
        "",
        "<details><summary>contracts with the same outcome in both</summary>",
        "",
    ]
    out += [f"- `{r['id']}` ({r['api']}, {r['kind']}): {r['candidate']}" for r in unchanged]
    return [*out, "", "</details>", ""]


def _beyond_section(page: Page) -> list[str]:
    """API surface, warnings, dependencies (issue 10), then speed (issue 12)."""
    return report_surface.markdown(
        page.report, None if page.full else report_surface.MARKDOWN_ROWS
    ) + report_speed.section(page.report)


def _footer(page: Page) -> list[str]:
    return [
        "---",
        "Exit status: 0 pass, 1 fail, 2 not verified. Every row: `report.html` (folded, for a browser) and "
        "`report.json` (for machines) beside this file.",
    ]


#: report.md's sections, rendered in this order: ``(name, lines of a Page)``.
#: The Markdown head the pull-request comment and the job summary show is
#: everything before ``"versions"``.
SECTIONS: list[tuple[str, Callable[[Page], list[str]]]] = [
    ("verdict", _verdict),
    ("findings", _findings_section),
    ("versions", _versions_section),
    ("rows", _rows_section),
    ("unchanged", _unchanged_section),
    ("beyond", _beyond_section),
    ("footer", _footer),
]


#: The sections of a report that judged nothing (a refusal, a side that never ran): the verdict with
#: its reason, each side's status and the footer; no rows, no "no differences" beyond the contracts.
NOT_JUDGED_SECTIONS = ("verdict", "versions", "footer")


def add_section(name: str, lines: Callable[[Page], list[str]], before: str = "findings") -> None:
    """Render ``lines`` (a function of a :class:`Page`: ``page.report``,
    ``page.findings``) as section ``name`` just above section ``before``
    (default: above the findings, under the verdict). Adding a name twice
    replaces the first."""
    SECTIONS[:] = [entry for entry in SECTIONS if entry[0] != name]
    at = next(i for i, (n, _) in enumerate(SECTIONS) if n == before)
    SECTIONS.insert(at, (name, lines))


def render(report: model.Report, limit: int | None = SAMPLE) -> str:
    """The report as Markdown text ending in a newline: :data:`SECTIONS` in
    order. ``limit``: contract rows shown per finding (None: every row, the
    tables beyond the contracts whole too)."""
    page = Page(report, limit)
    out: list[str] = []
    for name, lines in SECTIONS:
        if page.judged or name in NOT_JUDGED_SECTIONS:
            out += lines(page)
    return "\n".join(out) + "\n"
