"""Renderings of the matrix report (``optax_gate.gate.matrix.plan.merge``).

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import html
from typing import Literal

from optax_gate.gate.base import details
from optax_gate.gate.judge import findings
from optax_gate.gate.matrix import plan as matrix
from optax_gate.gate.matrix.model import ApiCounts, ApiRow, Cell, ContractRow, EnvironmentRow, MatrixReport
from optax_gate.gate.matrix.plan import WORST
from optax_gate.gate.report import speed_section as report_speed
from optax_gate.gate.report.markdown import VERSION_KEYS
from optax_gate.gate.report.table_cell import cell
from optax_gate.gate.speed import readings
from optax_gate.gate.upstream import failures

COLOURS = {  # change -> background; readable on white, distinct for common colour blindness
    "broken": "#d7301f",
    "changed": "#fdae61",
    "fixed": "#1a9850",
    "new": "#74add1",
    "gone": "#7b3294",
    "unchanged": "#f0f0f0",
}
VERDICT_COLOURS = {"pass": "#1a9850", "fail": "#d7301f", "not-verified": "#7b3294"}
NOT_RUN = "#d9d9d9"
COUNTED: tuple[Literal["broken", "changed", "fixed", "new", "gone"], ...] = (
    "broken",
    "changed",
    "fixed",
    "new",
    "gone",
)


def counts_text(counts: ApiCounts) -> str:
    """``"4 broken · 1 changed"``, or ``"12 unchanged"`` when nothing differs."""
    parts = [f"{counts[k]} {k}" for k in COUNTED if counts.get(k)]
    return " · ".join(parts) or f"{counts.get('unchanged', 0)} unchanged"


def _reason(env: EnvironmentRow) -> str:
    return env.get("reason") or "; ".join(env.get("reasons") or []) or "no reason recorded"


def unreleased_words(env: EnvironmentRow) -> str:
    """``"unreleased, optax 2edbcbe2 2026-08-07"`` for an environment built
    from an unreleased commit (the commit once it was built), else ""."""
    if not env.get("unreleased"):
        return ""
    built = [
        f"{s['package']} {commit['short']} {commit['date'][:10]}"
        for s in env.get("sources") or []
        if (commit := s.get("commit"))
    ]
    return ", ".join(["unreleased", *built])


BEYOND_TITLES = {"surface": "API surface", "warnings": "warnings", "dependencies": "dependencies"}


def matrix_beyond_rows(envs: list[EnvironmentRow]) -> list[str]:
    """The sections beyond the contracts that the matrix has (none without ``packages``)."""
    return [k for k in BEYOND_TITLES if any(e.get("beyond") for e in envs)]


def beyond_cell(env: EnvironmentRow, kind: str) -> tuple[str, str]:
    """``(worst change, text)`` of one section in one environment, e.g.
    ``("broken", "1 broken · 54 changed · 47 new")``; "no differences" when
    all counts are 0; the section's status when it could not be made."""
    section = (env.get("beyond") or {}).get(kind)
    if not section:
        return "not-measured", "not available"
    counts = section["counts"]
    worst = next((k for k in ("broken", "changed", "new", "noted") if counts.get(k)), "unchanged")
    text = " · ".join(f"{counts[k]} {k}" for k in ("broken", "changed", "new", "noted") if counts.get(k))
    if section.get("status") not in (None, "ok", "compared"):
        text = f"{section['status']}" + (f": {text}" if text else "")
    return ("new" if worst == "noted" else worst), text or "no differences"


def upstream_cell(env: EnvironmentRow) -> tuple[str, str]:
    """(colour key, text) of an environment's cell in the grid's cross-run
    row: its findings by change (``changed``, ``new``, ``gone``; the cell
    coloured by the first that occurs), its failures that could not be
    told and those that move with the other packages, not optax; ``could not run: ...`` or ``not run`` (its contracts
    did not run)."""
    up = env.get("upstream_tests")
    if not up:
        return "not-run", "not run"
    if up["status"] != "ran":
        return "not-verified", f"could not run: {up['error']}"
    counts = {k: sum(1 for f in up["findings"] if f["change"] == k) for k in ("changed", "new", "gone")}
    unknown = sum(d["kinds"].get(failures.INFRA, 0) for d in up["directions"])
    elsewhere = sum(d["kinds"].get(failures.OTHERS, 0) for d in up["directions"])
    n = len(up["findings"])
    text = f"{n} finding{'' if n == 1 else 's'}" + (
        ": " + ", ".join(f"{v} {k}" for k, v in counts.items() if v) if n else ""
    )
    text += f" ({unknown} could not tell)" if unknown else ""
    text += f" ({elsewhere} move with the other packages, not optax)" if elsewhere else ""
    return next((k for k, v in counts.items() if v), "unchanged"), text


#: Findings of one environment's cross-run listed in report.md (all are in report.json).
UPSTREAM_FINDINGS_SHOWN = 30


def upstream_tests_section(envs: list[EnvironmentRow]) -> list[str]:
    """The "Upstream tests, cross-run" section (``matrix --upstream-tests``;
    nothing when no environment has one): per environment its counts per
    direction and its findings, or why it could not run."""
    rows = [(e["name"], up) for e in envs if (up := e.get("upstream_tests"))]
    if not rows:
        return []
    out = [
        "",
        "## Upstream tests, cross-run",
        "",
        "Optax's own shipped tests of the modules that differ, run across: the baseline's in the environment and the "
        "environment's in the baseline's (docs/upstream-tests.md). Their findings "
        "do not change the verdicts above; a cross-run that could not run leaves its environment not verified.",
        "",
    ]
    for name, up in rows:
        if up["status"] != "ran":
            out.append(f"- `{name}`: could not run: {cell(up['error'])} (not verified)")
            continue
        out.append(
            f"- `{name}`: {up['modules']} optax modules differ; {len(up['findings'])} finding(s); {up['seconds']:.0f} s"
        )
        for d in up["directions"]:
            kinds = ", ".join(f"{n} {k}" for k, n in sorted(d["kinds"].items())) or "none"
            out.append(
                f"  - {d['label']}: {d['files']} test files, {d['ran']} tests run, {d['failed']} failed "
                f"({kinds}), {d['seconds']:.0f} s"
            )
        for f in up["findings"][:UPSTREAM_FINDINGS_SHOWN]:
            out.append(f"  - **{f['change']}** {cell(f['text'])}")
        if len(up["findings"]) > UPSTREAM_FINDINGS_SHOWN:
            out.append(f"  - … and {len(up['findings']) - UPSTREAM_FINDINGS_SHOWN} more (report.json)")
    return out


def markdown(report: MatrixReport) -> str:
    """The matrix report as Markdown text ending in a newline."""
    envs = report["environments"]
    ran = [e for e in envs if e.get("ran", e.get("status") == "ran")]
    out = ["# Optax release matrix", ""]
    found = ", ".join(f"{p}: {', '.join(vs) or 'none'}" for p, vs in report["discovered"].items())
    out += [f"Releases found on the index newer than the baseline — {found}.", ""]
    base = report["baseline"].get("versions") or {}
    cached = report["baseline"].get("from_cache")
    origin = f", taken from the cache `{cached['key']}`, recorded {cached['recorded']}" if cached else ""
    out += [
        f"Baseline: {', '.join(f'{k} {base.get(k, "?")}' for k in VERSION_KEYS)} — status "
        f"**{report['baseline'].get('status')}**{origin}.",
        "",
    ]
    if report.get("exit"):  # issue 17: what a scheduled job's exit status says (``matrix.exit_status``)
        out += [
            f"**Exit status {report['exit']['status']}**: "
            f"{cell(matrix.exit_words(report['exit']).partition(': ')[2])}.",
            "",
        ]
    out += ["| environment | verdict | broken | changed | fixed | gone | reason |", "|---|---|---|---|---|---|---|"]
    for e in envs:
        s = e["summary"]
        mark = f" **{unreleased_words(e)}**" if e.get("unreleased") else ""
        out.append(
            f"| `{e['name']}`{mark} ({' '.join(e['specs'])}) | **{e['verdict']}** | {s['broken']} | {s['changed']} | "
            f"{s['fixed']} | {s['gone']} | {cell('; '.join(e['reasons']))} |"
        )
    out += [
        "",
        "## APIs × environments",
        "",
        "Each cell: contracts of the API that changed in that environment; an environment that did not run "
        "says so once.",
        "",
    ]
    out += [
        "| API | "
        + " | ".join(f"`{e['name']}`" + (" (unreleased)" if e.get("unreleased") else "") for e in envs)
        + " |",
        "|---|" + "---|" * len(envs),
    ]
    for i, a in enumerate(report.get("apis", [])):
        cells = []
        for e in envs:
            if e not in ran:
                cells.append(f"not run: {cell(_reason(e))}" if i == 0 else "″")
            else:
                counts = a["cells"][e["name"]]
                text = counts_text(counts)
                cells.append(f"**{text}**" if counts["broken"] or counts["gone"] else text)
        out.append(f"| `{a['api']}` ({a['contracts']}) | " + " | ".join(cells) + " |")
    if any(e.get("speed") for e in envs):  # issue 12: one speed row, a cell per environment
        cells = [cell(report_speed.matrix_cell(e.get("speed"))) if e in ran else "not run" for e in envs]
        out.append("| speed (3 training steps) | " + " | ".join(cells) + " |")
    for kind in matrix_beyond_rows(envs):  # issue 10: one row per section beyond the contracts
        out.append(f"| {BEYOND_TITLES[kind]} | " + " | ".join(cell(beyond_cell(e, kind)[1]) for e in envs) + " |")
    if any(e.get("upstream_tests") for e in envs):  # issue 27: optax's own tests, cross-run (section below)
        out.append("| upstream tests (cross-run) | " + " | ".join(cell(upstream_cell(e)[1]) for e in envs) + " |")
    differing = [c for c in report["contracts"] if c.get("differs")]
    out += ["", f"## Contracts that differ somewhere ({len(differing)} of {len(report['contracts'])})", ""]
    if differing and ran:
        out += [
            "| contract | API | " + " | ".join(f"`{e['name']}`" for e in ran) + " |",
            "|---|---|" + "---|" * len(ran),
        ]
        for c in differing:
            out.append(
                f"| `{c['id']}` | `{c['api']}` | "
                + " | ".join(c["cells"][e["name"]]["change"] if e["name"] in c["cells"] else "—" for e in ran)
                + " |"
            )
    not_run = [e["name"] for e in envs if e not in ran]
    if not_run:
        out += [
            "",
            f"Not run, so left out of the contract table: {', '.join(f'`{n}`' for n in not_run)} (reasons above).",
        ]
    out += upstream_tests_section(envs)
    out += ["", "The colour grid is `report.html` beside this file; per-environment evidence is in `runs/`."]
    return "\n".join(out) + "\n"


def _contract_line(c: ContractRow, cell: Cell) -> str:
    e = html.escape
    name, params = findings.test_name(c["id"])
    row = {**cell, "defect": c.get("defect", ""), "baseline": c.get("baseline"), "candidate": cell.get("outcome")}
    return (
        f'<li><b class="{e(cell["change"])}">{e(cell["change"])}</b> {e(name)}'
        + (f" <code>[{e(params)}]</code>" if params else "")
        + f' <span class="detail">{e(details.outcome_words(row))}: {e(details.plain_detail(row))}</span></li>'
    )


def _api_cell(a: ApiRow, env: EnvironmentRow, contracts: list[ContractRow]) -> str:
    e = html.escape
    counts = a["cells"][env["name"]]
    worst = counts["worst"]
    style = f"background:{COLOURS[worst]}"
    text = counts_text(counts)
    if worst == "unchanged":
        return f'<td class="cell unchanged" style="{style}">{e(text)}</td>'
    mine = [
        c
        for c in contracts
        if c["api"] == a["api"] and env["name"] in c["cells"] and c["cells"][env["name"]]["change"] != "unchanged"
    ]
    mine.sort(key=lambda c: (WORST.index(c["cells"][env["name"]]["change"]), c["id"]))  # broken first
    lines = [_contract_line(c, c["cells"][env["name"]]) for c in mine]
    return (
        f'<td class="cell {e(worst)}" '
        f'style="{style}"><details><summary>{e(text)}</summary><ul>{"".join(lines)}</ul></details></td>'
    )


def _api_details(a: ApiRow, ran: list[EnvironmentRow], contracts: list[ContractRow]) -> str:
    e = html.escape
    mine = [c for c in contracts if c["api"] == a["api"]]  # differing first (matrix.merge)
    differ = sum(1 for c in mine if c.get("differs"))
    head = "".join(f"<th>{e(x['name'])}</th>" for x in ran)
    rows = []
    for c in mine:
        tds = []
        for x in ran:
            cell = c["cells"].get(x["name"], {"change": "gone", "outcome": None, "detail": ""})
            row = {
                **cell,
                "defect": c.get("defect", ""),
                "baseline": c.get("baseline"),
                "candidate": cell.get("outcome"),
            }
            tip = f"{details.outcome_words(row)}: {details.plain_detail(row)}"
            tds.append(
                f'<td class="{e(cell["change"])}" style="background:{COLOURS[cell["change"]]}" '
                f'title="{e(tip)}">{e(cell["change"])}</td>'
            )
        rows.append(
            '<tr><th class="id" '
            f'title="{e(c["guide"])}">{e(c["id"].split("::", 1)[-1])}<br><small>{e(c["kind"])}</small></th>'
            f"{''.join(tds)}</tr>"
        )
    return (
        f'<details class="api" id="api-{e(a["api"])}"><summary><b>{e(a["api"])}</b>: {a["contracts"]} contracts, '
        f'{differ} differ</summary><table class="contracts"><thead><tr><th>contract</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></details>"
    )


def html_grid(report: MatrixReport) -> str:
    """A self-contained HTML page (no script, no external resource): the API x
    environment grid, each cell expandable to its contracts, then one
    expandable contract table per API (see the module docstring)."""
    envs = report["environments"]
    ran = [x for x in envs if x.get("ran", x.get("status") == "ran")]
    apis = report.get("apis", [])
    e = html.escape
    head = "".join(
        f'<th style="background:{VERDICT_COLOURS[x["verdict"]]};color:#fff" title="{e(" ".join(x["specs"]))}">'
        f"{e(x['name'])}<br><small>{e(x['verdict'])}</small>"
        + (f'<br><small class="unreleased"><i>{e(unreleased_words(x))}</i></small>' if x.get("unreleased") else "")
        + "</th>"
        for x in envs
    )
    rows = []
    for i, a in enumerate(apis):
        tds = []
        for x in envs:
            if x in ran:
                tds.append(_api_cell(a, x, report["contracts"]))
            elif i == 0:
                tds.append(
                    f'<td class="not-run" rowspan="{len(apis)}" style="background:{NOT_RUN}"><b>not '
                    f"verified</b><br>{e(_reason(x))}</td>"
                )
        rows.append(
            f'<tr class="api"><th class="api"><a href="#api-{e(a["api"])}">{e(a["api"])}</a>'
            f"<br><small>{a['contracts']} contracts</small></th>{''.join(tds)}</tr>"
        )
    if any(x.get("speed") for x in envs):  # issue 12: one speed row, a cell per environment
        tds = []
        for x in envs:
            change = readings.worst(x.get("speed")) if x in ran else "not-measured"
            colour = COLOURS.get(change, NOT_RUN)
            text = report_speed.matrix_cell(x.get("speed")) if x in ran else "not run"
            tds.append(f'<td class="cell speed {e(change)}" style="background:{colour}">{e(text)}</td>')
        rows.append(
            '<tr class="speed"><th class="api">speed<br><small>3 training steps vs '
            f"baseline</small></th>{''.join(tds)}</tr>"
        )
    for kind in matrix_beyond_rows(envs):  # issue 10: one row per section beyond the contracts
        tds = []
        for x in envs:
            change, text = beyond_cell(x, kind)
            tds.append(
                f'<td class="cell beyond {e(change)}" style="background:{COLOURS.get(change, NOT_RUN)}">{e(text)}</td>'
            )
        rows.append(
            f'<tr class="beyond"><th class="api">{e(BEYOND_TITLES[kind])}<br><small>beyond the '
            f"contracts</small></th>{''.join(tds)}</tr>"
        )
    if any(x.get("upstream_tests") for x in envs):  # issue 27: optax's own tests, cross-run (never the verdict)
        tds = []
        for x in envs:
            change, text = upstream_cell(x)
            colour = VERDICT_COLOURS["not-verified"] if change == "not-verified" else COLOURS.get(change, NOT_RUN)
            tds.append(f'<td class="cell upstream-tests {e(change)}" style="background:{colour}">{e(text)}</td>')
        rows.append(
            f'<tr class="upstream-tests"><th class="api">upstream tests (cross-run)<br><small>optax\'s own tests, '
            f"not the verdict</small></th>{''.join(tds)}</tr>"
        )
    legend = " ".join(
        f'<span style="background:{v};padding:2px 8px;margin-right:4px">{k}</span>' for k, v in COLOURS.items()
    )
    details = "\n".join(_api_details(a, ran, report["contracts"]) for a in apis)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Optax release matrix</title>
<style>
body {{ font-family: sans-serif; margin: 1em; }}
table {{ border-collapse: collapse; font-size: 13px; }}
th, td {{ border: 1px solid #ccc; padding: 4px 8px; text-align: center; vertical-align: top; }}
th.api, th.id {{ text-align: left; font-weight: normal; }}
td.cell {{ min-width: 9em; }}
td.broken, td.gone {{ color: #fff; }}
td.not-run {{ vertical-align: middle; max-width: 16em; color: #333; }}
td details ul {{ text-align: left; margin: 4px 0; padding-left: 1.2em; max-width: 40em; }}
td details li {{ color: #000; background: #fff; padding: 2px 4px; margin-bottom: 2px; }}
.detail {{ color: #444; font-size: 12px; }}
b.broken {{ color: #d7301f; }} b.changed {{ color: #b35806; }} b.fixed {{ color: #1a9850; }} b.gone {{ color: #7b3294; }}
summary {{ cursor: pointer; }}
details.api {{ margin: 4px 0; }}
</style></head><body>
<h1>Optax release matrix</h1>
<p>Rows: APIs; columns: environments against the pinned baseline. Each cell counts the API's contracts by change and is
coloured by the worst; click a cell for its contracts. {legend}</p>
<table class="grid">
<thead><tr><th>API</th>{head}</tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody></table>
<h2>Contracts per API</h2>
{details}
</body></html>
"""  # noqa: E501 (a script or page written out as it runs)
