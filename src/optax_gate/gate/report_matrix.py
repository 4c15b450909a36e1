"""Renderings of the matrix report: Markdown (a verdict per environment and
the contracts that differ anywhere) and a self-contained HTML grid, contract x
environment, colour-coded by change, for scanning by eye."""

from __future__ import annotations

import html
from typing import Any

from optax_gate.gate.report_markdown import VERSION_KEYS

COLOURS = {  # change -> background; readable on white, distinct for common colour blindness
    "broken": "#d7301f", "changed": "#fdae61", "fixed": "#1a9850", "new": "#74add1",
    "gone": "#7b3294", "unchanged": "#f0f0f0",
}
VERDICT_COLOURS = {"pass": "#1a9850", "fail": "#d7301f", "not-verified": "#7b3294"}


def _cell(text: Any) -> str:
    return str(text if text is not None else "—").replace("|", "\\|").replace("\n", " ")


def markdown(report: dict[str, Any]) -> str:
    """The matrix report as Markdown text ending in a newline."""
    envs = report["environments"]
    out = ["# Optax release matrix", ""]
    found = ", ".join(f"{p}: {', '.join(vs) or 'none'}" for p, vs in report["discovered"].items())
    out += [f"Releases found on the index newer than the baseline — {found}.", ""]
    base = report["baseline"].get("versions") or {}
    out += [f"Baseline: {', '.join(f'{k} {base.get(k, '?')}' for k in VERSION_KEYS)} — status **{report['baseline'].get('status')}**.", ""]
    out += ["| environment | verdict | broken | changed | fixed | gone | reason |", "|---|---|---|---|---|---|---|"]
    for e in envs:
        s = e["summary"]
        out.append(f"| `{e['name']}` ({' '.join(e['specs'])}) | **{e['verdict']}** | {s['broken']} | {s['changed']} | "
                   f"{s['fixed']} | {s['gone']} | {_cell('; '.join(e['reasons']))} |")
    differing = [c for c in report["contracts"] if any(cell["change"] not in ("unchanged", "gone") for cell in c["cells"].values())]
    out += ["", f"## Contracts that differ somewhere ({len(differing)} of {len(report['contracts'])})", ""]
    if differing:
        out += ["| contract | " + " | ".join(e["name"] for e in envs) + " |", "|---|" + "---|" * len(envs)]
        for c in differing:
            out.append(f"| `{c['id']}` | " + " | ".join(c["cells"].get(e["name"], {}).get("change", "—") for e in envs) + " |")
    out += ["", "Environments not verified list their contracts as `gone`; see each one's reason above.",
            "The colour grid is `report.html` beside this file; per-environment evidence is in `runs/`."]
    return "\n".join(out) + "\n"


def html_grid(report: dict[str, Any]) -> str:
    """A self-contained HTML page (no script, no external resource): one row per
    contract, one column per environment, each cell coloured by its change and
    titled with the outcome and detail."""
    envs = report["environments"]
    e = html.escape
    head = "".join(
        f'<th style="background:{VERDICT_COLOURS[x["verdict"]]};color:#fff" title="{e("; ".join(x["reasons"]) or x["verdict"])}">'
        f'{e(x["name"])}<br><small>{e(x["verdict"])}</small></th>' for x in envs)
    rows = []
    for c in report["contracts"]:
        tds = []
        for x in envs:
            cell = c["cells"].get(x["name"], {"change": "gone", "outcome": None, "detail": ""})
            tip = f'{cell["outcome"] or "did not run"}: {cell.get("detail") or ""}'
            tds.append(f'<td class="{e(cell["change"])}" style="background:{COLOURS[cell["change"]]}" title="{e(tip)}">{e(cell["change"])}</td>')
        rows.append(f'<tr><th class="id" title="{e(c["api"])} — {e(c["guide"])}">{e(c["id"].split("::", 1)[-1])}'
                    f'<br><small>{e(c["api"])} · {e(c["kind"])}</small></th>{"".join(tds)}</tr>')
    legend = " ".join(f'<span style="background:{v};padding:2px 8px;margin-right:4px">{k}</span>' for k, v in COLOURS.items())
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Optax release matrix</title>
<style>
body {{ font-family: sans-serif; margin: 1em; }}
table {{ border-collapse: collapse; font-size: 12px; }}
th, td {{ border: 1px solid #ccc; padding: 2px 6px; text-align: center; }}
th.id {{ text-align: left; font-weight: normal; }}
td.broken, td.gone {{ color: #fff; }}
</style></head><body>
<h1>Optax release matrix</h1>
<p>Each cell: change of the contract in that environment against the pinned baseline. {legend}</p>
<table>
<thead><tr><th>contract</th>{head}</tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody></table>
</body></html>
"""
