"""``report.html``: the whole report for a browser, folded (issue 25).

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from typing import Any

from optax_gate.gate.base import model
from optax_gate.gate.judge import findings as findings_
from optax_gate.gate.report import bisect_section as report_bisect
from optax_gate.gate.report import markdown as report_markdown
from optax_gate.gate.report import surface_section as report_surface
from optax_gate.gate.report import upstream_section, your_code_line
from optax_gate.gate.report.table_cell import cell
from optax_gate.gate.team_code import scope

#: The report's own tags kept as they are (everything else is escaped).
_TAGS = re.compile(r'(<a id="[\w-]+"></a>|<br>|<details>|</details>|<summary>|</summary>|<details><summary>)')
_CODE = re.compile(r"`([^`]+)`")
_BOLD = re.compile(r"\*\*(.+?)\*\*")
_LINK = re.compile(r"\[((?:[^\[\]]|\[[^\[\]]*\])+)\]\(([^)\s]+)\)")
_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)\)")

STYLE = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1400px;padding:1em 2em;color:#1f2328}
h1{font-size:1.7em;margin:.2em 0}h2{font-size:1.25em;margin:1.2em 0 .4em;border-bottom:1px solid #d0d7de}
.verdict-fail{color:#cf222e}.verdict-pass{color:#1a7f37}.verdict-not-verified{color:#9a6700}
code{font:13px ui-monospace,SFMono-Regular,Menlo,monospace;background:#f6f8fa;padding:0 .25em;border-radius:4px;overflow-wrap:anywhere}
table{border-collapse:collapse;margin:.4em 0 1em;font-size:13px;width:100%}
th,td{border:1px solid #d0d7de;padding:3px 6px;vertical-align:top;text-align:left;overflow-wrap:break-word}
table.rows td:nth-child(4),table.rows td:nth-child(5){white-space:nowrap}table.rows td:first-child{width:28%}
th{background:#f6f8fa}tr:target,td:target{background:#fff8c5}
details{margin:.25em 0;border:1px solid #d0d7de;border-radius:6px;padding:.3em .7em}
details[open]{background:#fcfcfd}summary{cursor:pointer}
details.finding>summary{list-style-position:outside;margin-left:1em}
.change{display:inline-block;min-width:4.6em;font-weight:600;border-radius:4px;padding:0 .35em;margin-right:.3em;text-align:center}
.broken{background:#ffebe9;color:#cf222e}.changed{background:#fff8c5;color:#7d4e00}.fixed{background:#dafbe1;color:#1a7f37}
.new,.gone{background:#ddf4ff;color:#0969da}
.note{color:#59636e}.where{margin:.3em 0}
"""  # noqa: E501 (CSS rules, one per line)


def inline(text: str) -> str:
    """One line of the report's Markdown as HTML: the report's own tags kept,
    everything else escaped, then code spans, bold and links."""
    out = []
    for part in _TAGS.split(text):
        if _TAGS.fullmatch(part or " "):
            out.append(part)
            continue
        codes: list[str] = []

        def keep(m: re.Match[str], codes: list[str] = codes) -> str:
            codes.append(f"<code>{html.escape(m[1].replace(chr(92) + '|', '|'))}</code>")
            return f"\0{len(codes) - 1}\0"

        def restore(m: re.Match[str], codes: list[str] = codes) -> str:
            return codes[int(m[1])]

        piece = _CODE.sub(keep, part.replace("\\|", "|"))
        piece = html.escape(piece, quote=False)
        piece = _IMAGE.sub(lambda m: f'<a href="{html.escape(m[2])}">{m[1] or "image"}</a>', piece)
        piece = _LINK.sub(lambda m: f'<a href="{html.escape(m[2])}">{m[1]}</a>', piece)
        piece = _BOLD.sub(r"<strong>\1</strong>", piece)
        out.append(re.sub("\0(\\d+)\0", restore, piece))
    return "".join(out)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


#: A list item, at the top or nested one level under the item before it (indented up to four spaces).
_ITEM = re.compile(r" {0,4}- ")


def markdown_html(lines: list[str], table_class: str = "") -> str:
    """The report's Markdown lines as HTML (see the module docstring);
    ``table_class``: the class of its tables (``rows``: contract rows)."""
    out: list[str] = []
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if line.startswith("|") and i + 1 < n and re.fullmatch(r"\|(?:-+\|)+", lines[i + 1].strip()):
            out.append(
                (f'<table class="{table_class}">' if table_class else "<table>")
                + "<thead><tr>"
                + "".join(f"<th>{inline(c)}</th>" for c in _cells(line))
                + "</tr></thead><tbody>"
            )
            i += 2
            while i < n and lines[i].startswith("|"):
                cells = _cells(lines[i])
                anchor = re.match(r'<a id="([\w-]+)"></a>', cells[0]) if cells else None
                tr = f'<tr id="{anchor[1]}">' if anchor else "<tr>"
                if anchor:  # the id moves to the row (highlighted when it is the target)
                    cells[0] = cells[0].replace(anchor[0], "", 1)
                out.append(tr + "".join(f"<td>{inline(c)}</td>" for c in cells) + "</tr>")
                i += 1
            out.append("</tbody></table>")
            continue
        m = re.match(r"(#{1,3}) (.*)", line)
        if m:
            level = len(m[1])
            out.append(f"<h{level}>{inline(m[2])}</h{level}>")
        elif _ITEM.match(line):
            html_list, nested = "<ul>", False
            while i < n and _ITEM.match(lines[i]):
                inner = lines[i].startswith(" ") and html_list != "<ul>"  # under the item before it
                if inner != nested:
                    html_list = html_list.removesuffix("</li>") + "<ul>" if inner else html_list + "</ul></li>"
                    nested = inner
                html_list += f"<li>{inline(lines[i].strip()[2:])}</li>"
                i += 1
            out.append(html_list + ("</ul></li>" if nested else "") + "</ul>")
            continue
        elif re.match(r"\d+\. ", line):
            items = []
            while i < n and re.match(r"\d+\. |   - ", lines[i]):
                items.append(f"<li>{inline(re.sub(r'^(?:\d+\.|   -) ', '', lines[i]))}</li>")
                i += 1
            out.append("<ol>" + "".join(items) + "</ol>")
            continue
        elif _TAGS.fullmatch(line.strip()) or line.strip().startswith("<details><summary>"):
            out.append(inline(line))
        elif line.startswith("---"):
            out.append("<hr>")
        else:
            out.append(f"<p>{inline(line)}</p>")
        i += 1
    return "\n".join(out)


def finding_html(page: report_markdown.Page, finding: model.Finding, rows: Mapping[str, model.ContractRow]) -> str:
    """One finding as report.html shows it: its line and, folded, its contracts' rows (``rows``, by id)."""
    k, change = finding["number"], finding["change"]
    section = finding.get("section", "contracts")
    if section != "contracts":
        if section == "upstream-tests":  # "N. **changed** text (see ...)": the number is the <details>'
            line = upstream_section.finding_line(finding).split(" ", 1)[1]
            where = (
                "Every one of its upstream tests is in report.json (<code>upstream_tests</code>); how the "
                "cross-run ran is in its section below."
            )
        else:
            line = report_surface.finding_line(finding).split("</a>", 1)[1]  # the <details> carries the anchor
            where = "The whole row is in its section below."
        return (
            f'<details class="finding" id="f{k}"><summary><span class="change {change}">{change}</span> {k}. '
            f'{inline(line.removeprefix(f"**{change}** "))}</summary><p class="note">{where}</p></details>'
        )
    said = findings_.heading(finding)  # "changed, 1 broken": coloured as broken, so a broken contract is never missed
    line = report_markdown.finding_line(finding).split("</a>", 1)[1].removeprefix(f"**{said}** ")
    head = f'<span class="change {"broken" if said != change else change}">{said}</span> {k}. {inline(line)}'
    body = []
    suffix = your_code_line.suffix(finding, shown=None)  # every line of the team's: report.html holds every row
    if suffix:  # the team's lines stay in sight on a folded page, outside the fold
        head += f' <span class="where">{inline(suffix)}</span>'
    body += [f"<p>{inline(b.strip().removeprefix('- '))}</p>" for b in report_bisect.markdown_lines(finding)]
    table = ["| contract | API | guide | kind | baseline → candidate | detail |", "|---|---|---|---|---|---|"]
    for m, cid in enumerate(finding["contracts"], 1):
        r = rows.get(cid)
        if r is not None:
            table.append(f'| <a id="f{k}-{m}"></a>`{cell(cid)}` | ' + " | ".join(report_markdown.row_cells(r)) + " |")
    body.append(markdown_html(table, "rows"))
    return f'<details class="finding" id="f{k}"><summary>{head}</summary>\n' + "\n".join(body) + "\n</details>"


def _folded(title: str, lines: list[str], open_: bool = False) -> str:
    if not lines:
        return ""
    summary = f"<summary><strong>{inline(title)}</strong></summary>"
    return f"<details{' open' if open_ else ''}>{summary}\n{markdown_html(lines)}\n</details>"


def _split(lines: list[str]) -> list[tuple[str, list[str]]]:
    """A section's lines cut at its ``## `` headings: [(heading, body lines)]."""
    parts: list[tuple[str, list[str]]] = []
    for line in lines:
        if line.startswith("## "):
            parts.append((line[3:], []))
        elif parts:
            parts[-1][1].append(line)
        elif line.strip():
            parts.append(("", [line]))
    return parts


def render(report: model.Report) -> str:
    """The whole report as one self-contained HTML page (see the module docstring)."""
    page = report_markdown.Page(report, limit=None)
    verdict = report["verdict"]
    sections = dict(report_markdown.SECTIONS)
    head = sections["verdict"](page)
    title = head[0].removeprefix("# ")
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>",
        f'<h1 class="verdict-{html.escape(verdict)}">{html.escape(title)}</h1>',
        markdown_html(head[1:]),
    ]
    for (
        name,
        lines,
    ) in report_markdown.SECTIONS:  # sections others add above the findings (e.g. your code), as report.md
        if name not in ("verdict", "findings", "versions", "rows", "unchanged", "beyond", "footer"):
            out.append(markdown_html(lines(page)))
        if name == "findings":
            break
    rows = {r["id"]: r for r in report["contracts"]}
    yours, elsewhere = scope.split(
        page.findings
    )  # as report.md: the team's findings, then those its code does not reach
    for heading, group in (("Findings", yours), (scope.ELSEWHERE_HEADING, elsewhere)):
        if not group:
            continue
        out.append(f"<h2>{html.escape(heading)} ({len(group)})</h2>")
        note = "Each finding folds its contract rows: click to open."
        if group is elsewhere:
            note = "These do not set the verdict (<code>--fail-on all</code>: they do). " + note
        out.append(f'<p class="note">{note}</p>')
        out += [finding_html(page, f, rows) for f in group]
    out.append("<h2>Details</h2>")
    for heading, body in _split(sections["versions"](page)):
        out.append(_folded(heading, body))
    differing = [r for r in report["contracts"] if r["change"] not in ("unchanged",) and r["id"] not in page.anchor]
    if differing:  # rows in no finding (none today: kept so that no row is ever missing)
        table = ["| contract | API | guide | kind | baseline → candidate | detail |", "|---|---|---|---|---|---|"]
        table += [f"| `{cell(r['id'])}` | " + " | ".join(report_markdown.row_cells(r)) + " |" for r in differing]
        out.append(_folded(f"Rows in no finding ({len(differing)})", table))
    for heading, body in _split(sections["unchanged"](page)) if page.judged else []:
        out.append(_folded(heading, [b for b in body if not b.startswith(("<details>", "</details>"))]))
    for heading, body in (
        _split(sections["beyond"](page)) if page.judged else []
    ):  # nothing compared: no "no differences"
        out.append(_folded(heading, body))
    for heading, body in _split(upstream_section.markdown(report)):  # --upstream-tests: optax's own tests, cross-run
        out.append(f'<div id="upstream-tests-cross-run">{_folded(heading, body)}</div>')
    out.append(markdown_html(sections["footer"](page)))
    out.append("</body></html>")
    return "\n".join(part for part in out if part) + "\n"


def fallback(report: Mapping[str, Any]) -> str:
    """A minimal page when the full one cannot be rendered: the verdict, the
    reasons, and where the whole report is (``report.md``, ``report.json``)."""
    verdict = str(report.get("verdict", "not-verified"))
    reasons = "".join(f"<li>{html.escape(str(r))}</li>" for r in report.get("reasons", []))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Optax upgrade gate: '
        f"{html.escape(verdict.upper())}</title></head><body><h1>Optax upgrade gate: "
        f"{html.escape(verdict.upper())}</h1>"
        f'<ul>{reasons}</ul><p>This page could not be rendered in full: <a href="report.md">report.md</a> and '
        '<a href="report.json">report.json</a> beside it hold the report.</p></body></html>\n'
    )
