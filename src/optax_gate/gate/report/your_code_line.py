"""The Markdown after a finding's line that names the team's code: its lines, what their arguments say, what the team's
run says there."""

from __future__ import annotations

from optax_gate.gate.base import model
from optax_gate.gate.team_code import attribution, call_sites


def _run_words(said: model.LineRun) -> str:
    """What the team's run says of a finding's site (``judging._point_sites``): it diverges there for
    another finding's cause, calls Optax there and computes the same, calls it with inputs that already differ, or does
    not reach the line."""
    if said.get("run") == "same":
        until = said.get("until")  # a run that failed in the candidate: "" when the failure's line is not the team's
        return (
            "your run calls it here and computes the same"
            + (" within the ULP budget, not bit for bit" if said.get("bits") else "")
            + ("" if until is None else f", up to its failure{f' at `{until}`' if until else ''}")
        )
    if said.get("run") == "not-reached":
        return "your run does not reach this line"
    if said.get("run") == "inputs-differ":
        return (
            "your run calls it here with inputs that already differ, as a consequence of where it diverges: "
            "whether this call computes the same cannot be told from your run"
        )
    if said.get("run") == "structure":
        return (
            "your run calls it here; compared by its arguments and structure only, no value computed here was compared"
        )
    if said.get("run") == "not-reached-candidate":
        return "your run fails before this line in the candidate"
    by = ", ".join(f"[F{n}](#f{n})" for n in said.get("findings") or [])
    return "your run diverges here for another cause" + (f", explained by {by}" if by else "")


def attributed_lines(item: model.Finding, shown: int | None = call_sites.SHOWN) -> str:
    """Markdown after a finding's line: what a recipe changes for a program that does what it does
    (once), then each line of the team's code with what its arguments say (affected lines first, then
    cannot tell, then not affected); ``shown``: at most that many lines (None: all, report.html)."""
    attributed = item.get("your_code_attribution") or {}
    if not attributed:
        return ""
    shown = len(attributed) if shown is None else shown
    order = sorted(attributed.items(), key=lambda kv: attribution.VERDICTS.index(kv[1]["verdict"]))
    words = {"affected": "**affected**", "cannot-tell": "cannot tell without --run", "not-affected": "not affected"}
    parts = []
    for where, a in order[:shown]:
        why = a["why"].removesuffix(": cannot tell without --run").removesuffix("cannot tell without --run")
        parts.append(f"`{where}` {a['calls']}: {words[a['verdict']]}" + (f" ({why})" if why else ""))
    more = f" and {len(order) - shown} more" if len(order) > shown else ""
    recipe = f" ({item['your_code_recipe']})" if item.get("your_code_recipe") else ""
    return f" — **your code**{recipe}: " + "; ".join(parts) + more


def suffix(item: model.Finding, shown: int | None = call_sites.SHOWN) -> str:
    """Markdown to append to a finding's line: ``; your code: a.py:3, b.py:9``
    and the files not scanned that may use its APIs (empty without ``--usage``);
    ``shown``: at most that many lines (None: every one, report.html)."""
    out = ""
    where = item.get("your_code") or []
    shown = max(len(where), len(item.get("your_code_attribution") or {})) if shown is None else shown
    if item.get("your_code_attribution"):  # what each line's arguments say (optax_gate.gate.team_code.attribution)
        out += attributed_lines(item, shown)
    elif where:
        more = f" and {len(where) - shown} more" if len(where) > shown else ""
        notes = item.get("your_code_notes") or {}
        run = item.get("your_code_run") or {}
        out += (
            " — **your code**: "
            + ", ".join(
                f"`{w}`"
                + (f" (API surface: {notes[w]})" if w in notes else "")
                + (f" ({_run_words(run[w])})" if w in run else "")
                for w in where[:shown]
            )
            + more
        )
    run_sites = item.get("run_sites") or []
    if run_sites:
        out += " — **your run diverges** at " + ", ".join(f"`{s}`" for s in run_sites[: call_sites.SHOWN])
    unscanned = item.get("your_code_not_scanned") or []
    if unscanned:
        out += " — cannot tell for files not scanned: " + ", ".join(f"`{w}`" for w in unscanned[: call_sites.SHOWN])
    return out
