"""Markdown of what the contracts cannot see (schema 2 report sections
``surface``, ``warnings``, ``dependencies``; built by ``optax_gate.gate.diffs.unseen``).

:func:`headline` is one line of counts for the top of ``report.md``;
:func:`markdown` the three sections ("API surface", "Warnings",
"Dependencies"), after the ``--usage`` scan ("Your code": files scanned and
each file not scanned with its reason), each with its counts in the heading,
broken rows first, and
folded (``<details>``) beyond :data:`FOLD` rows; in report.md at most
:data:`MARKDOWN_ROWS` rows a table, saying how many more report.html and
report.json hold. A report without the
sections (schema 1, or a gate that crashed) renders nothing.
"""

from __future__ import annotations

from typing import Literal

from optax_gate.gate.base import model
from optax_gate.gate.diffs import unseen
from optax_gate.gate.judge import findings as findings_
from optax_gate.gate.report import your_code_line
from optax_gate.gate.report.table_cell import cell
from optax_gate.gate.run import warnings_diff

FOLD = 15
#: Rows of one table report.md shows (the first ones: broken first); every row
#: is in report.html and report.json.
MARKDOWN_ROWS = 20
_ORDER: tuple[Literal["broken", "cannot-tell", "changed", "new", "noted"], ...] = (
    "broken",
    "cannot-tell",
    "changed",
    "new",
    "noted",
)
#: One of the three sections beyond the contracts.
Section = model.Surface | model.Warnings | model.Dependencies
#: Each section's heading in report.md, as a finding's line names it (``unseen.BEYOND``).
SURFACE, WARNINGS, DEPENDENCIES = (unseen.BEYOND[key][1] for key in ("surface", "warnings", "dependencies"))


def _counts(section: Section) -> str:
    c = section.get("counts")
    return ", ".join(f"{c[k]} {k}" for k in _ORDER if c and c.get(k)) or "no differences"


def _sections(report: model.Report) -> list[tuple[str, Section]]:
    """The sections the report holds, with their titles, in report order."""
    found: list[tuple[str, Section | None]] = [
        (SURFACE, report.get("surface")),
        (WARNINGS, report.get("warnings")),
        (DEPENDENCIES, report.get("dependencies")),
    ]
    return [(title, section) for title, section in found if isinstance(section, dict)]


def headline(report: model.Report) -> list[str]:
    """One line: the counts of each section (empty for a report without them)."""
    parts = [
        f"{title}: {_counts(section) if section.get('status') == 'compared' else 'not compared'}"
        for title, section in _sections(report)
    ]
    return [f"Beyond the contracts — {'; '.join(parts)}.", ""] if parts else []


def _table(header: list[str], rows: list[list[str]], fold_label: str, limit: int | None = None) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += [
        "| " + " | ".join(cell(c, missing=(None, "")) for c in r) + " |"
        for r in (rows if limit is None else rows[:limit])
    ]
    if limit is not None and len(rows) > limit:
        lines += [
            "",
            f"{len(rows) - limit} more {fold_label} not shown here: every row is in `report.html` and `report.json`.",
        ]
    if len(rows) > FOLD:
        return [f"<details><summary>{len(rows)} {fold_label}</summary>", "", *lines, "", "</details>", ""]
    return [*lines, ""]


def usage_lines(usage: model.Usage | None, limit: int | None = None) -> list[str]:
    """The ``--usage`` scan: files scanned of those found, and each file not
    scanned with its reason (empty without ``--usage``)."""
    if not usage:
        return []
    skipped = usage.get("not_scanned") or []
    out = [
        "## Your code (`--usage`)",
        "",
        f"`{'` `'.join(usage['paths'])}`: {usage.get('scanned', usage['files'])} of {usage['files']} file(s) scanned, "
        f"{len(skipped)} not scanned; {usage['uses']} use(s) found.",
        "",
    ]
    if skipped:
        out += [
            "Not scanned (what they use cannot be told: an API change they may use is **cannot-tell**, never "
            "unaffected):",
            "",
        ]
        out += _table(
            ["file", "why not scanned"], [[f"`{n['path']}`", n["reason"]] for n in skipped], "files not scanned", limit
        )
    return out


def _surface(section: model.Surface, usage: model.Usage | None, limit: int | None = None) -> list[str]:
    out = []
    not_scanned = f"; {len(usage.get('not_scanned') or [])} not scanned" if usage and usage.get("not_scanned") else ""
    scope = (
        f"scoped to the team's code: {usage['uses']} use(s) in {usage.get('scanned', usage['files'])} scanned "
        "file(s) of "
        f"`{' '.join(usage['paths'])}`{not_scanned}"
        if usage
        else "no `--usage`: removals and incompatibilities of contracted APIs are broken"
    )
    out += [f"Packages `{' '.join(section.get('packages', []))}`, read statically from each environment; {scope}.", ""]
    for verdict in _ORDER:
        rows = [r for r in section["rows"] if r["verdict"] == verdict]
        if not rows:
            continue
        body = [
            [
                f"`{r['path']}`",
                r["change"] + (f" `{r['param']}`" if r.get("param") else ""),
                r["kind"],
                f"{r['old']} → {r['new']}",
                f"`{r['where']}`" if r["where"] else "",
                "<br>".join(
                    [*(r.get("uses") or []), *(f"{p}: not scanned, may use it" for p in r.get("not_scanned") or [])]
                ),
            ]
            for r in rows
        ]
        out += [f"**{verdict}** ({len(rows)})", ""]
        out += _table(
            ["public path", "change", "kind", "old → new", "candidate definition", "team's code"],
            body,
            f"{verdict} surface rows",
            limit,
        )
    return out


def warnings_lines(section: model.Warnings, limit: int | None = None) -> list[str]:
    """The Warnings section's lines: each verdict's warnings, at most ``limit`` rows each (None: all)."""
    out = []
    if section.get("fail_on_new_deprecations"):
        out += ["`--fail-on-new-deprecations`: a new deprecation is broken.", ""]
    for verdict in _ORDER:
        rows = [r for r in section["rows"] if r["verdict"] == verdict]
        if not rows:
            continue
        body = [
            [
                r["change"],
                r["when"],
                f"`{r['category']}`",
                r["message"],
                " → ".join(_module_cell(m) for m in (r.get("module_before"), r["module"]) if m),
                ", ".join(f"`{a}`" for a in r["apis"]) or "—",
                (f"{len(r['contracts'])}: `{r['contracts'][0]}`" + (" …" if len(r["contracts"]) > 1 else ""))
                if r["contracts"]
                else "—",
            ]
            for r in rows
        ]
        out += [f"**{verdict}** ({len(rows)})", ""]
        out += _table(
            ["change", "when", "category", "message", "module", "API", "contracts"], body, f"{verdict} warnings", limit
        )
    return out


def _dependencies(section: model.Dependencies, limit: int | None = None) -> list[str]:
    out = []
    rp, tags = section.get("requires_python"), section.get("jaxlib_tags")
    side: Literal["baseline", "candidate"]
    for side in ("baseline", "candidate"):
        req = ", ".join(f"{k} `{v}`" for k, v in ((rp.get(side) if rp else None) or {}).items()) or "unknown"
        wheels = " ".join((tags.get(side) if tags else None) or []) or "unknown"
        out.append(f"- {side}: Requires-Python {req}; jaxlib wheel tags `{wheels}`")
    out.append("")
    rows = section["rows"]
    if rows:
        body = [
            [
                r["verdict"],
                f"`{r['name']}`",
                r["change"] + (f" ({r['level']}{', down' if r['down'] else ''})" if r["level"] else ""),
                f"{r['old'] or '—'} → {r['new'] or '—'}",
                ", ".join(r["via"]),
                "<br>".join([*r["uses"], *(f"{p}: not scanned, may import it" for p in r.get("not_scanned") or [])]),
            ]
            for r in rows
        ]
        out += _table(
            ["verdict", "package", "change", "old → new", "pulled in by", "team's code"], body, "packages differ", limit
        )
    return out


def _opening(title: str, section: Section) -> list[str]:
    """A section's heading with its counts, then why it was not compared, or its note."""
    out = [f"## {title} ({_counts(section)})", ""]
    if section.get("status") != "compared":
        out += [f"Not compared: {cell(section.get('reason'), missing=(None, ''))}.", ""]
    elif section.get("reason"):
        out += [f"Note: {section['reason']}.", ""]
    return out


def markdown(report: model.Report, limit: int | None = None) -> list[str]:
    """The three sections as Markdown lines (empty for a report without them);
    ``limit``: rows a table shows (None: all). A section not compared shows why; its rows follow only for the
    dependencies, whose Requires-Python and wheel tags are read apart from the comparison."""
    out = usage_lines(report.get("usage"), limit)
    surface, warnings, dependencies = report.get("surface"), report.get("warnings"), report.get("dependencies")
    if isinstance(surface, dict):
        out += _opening(SURFACE, surface)
        out += _surface(surface, report.get("usage"), limit) if surface.get("status") == "compared" else []
    if isinstance(warnings, dict):
        out += _opening(WARNINGS, warnings)
        out += warnings_lines(warnings, limit) if warnings.get("status") == "compared" else []
    if isinstance(dependencies, dict):
        out += _opening(DEPENDENCIES, dependencies) + _dependencies(dependencies, limit)
    return out


def _module_cell(module: str) -> str:
    """A warning's module as code, or in words where it is the caller (``warnings_diff.CALLER``)."""
    return module if module == warnings_diff.CALLER else f"`{module}`"


def finding_line(finding: model.Finding) -> str:
    """The Markdown line of a finding from :func:`optax_gate.gate.diffs.unseen.broken_findings`, numbered."""
    names, section = unseen.BEYOND[finding["section"]]
    k, change = finding["number"], finding.get("change", "broken")
    if finding.get("key") == "deprecations":  # unseen.deprecation_finding: the APIs that warn, named
        who = findings_.subject(finding["apis"]) if finding.get("apis") else "deprecations"
        return (
            f'{k}. <a id="f{k}"></a>**{change}** {who}: {finding["cause"]} (see {section} below)'
            + your_code_line.suffix(finding)
        )
    api = finding["api"] if finding["section"] == "warnings" or "apis" in finding else f"`{finding['api']}`"
    return (
        f'{k}. <a id="f{k}"></a>**{change}** {names} {api}: {finding["cause"]} (see {section} below)'
        + your_code_line.suffix(finding)
    )
