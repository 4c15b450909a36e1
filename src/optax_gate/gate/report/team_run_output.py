"""What the team's command printed and wrote, as the report shows it: its output's end without the recorder's
frames, and the files its runs wrote."""

from __future__ import annotations

import re
from collections.abc import Sequence

from optax_gate.gate.base import model
from optax_gate.gate.report.table_cell import cell

#: Lines of a failing run's output shown in report.md.
TAIL_LINES = 15


_RECORDER_FRAME = re.compile(r'^\s*File ".*[/\\]optax_gate[/\\]recorder[/\\]')


def _without_recorder(text: str) -> tuple[list[str], int]:
    """A traceback's lines without the frames of the gate's own recorder (its
    wrapper sits between the team's call and Optax's; the log keeps them), and
    how many frames were left out."""
    out, dropped, skipping = [], 0, False
    for line in text.splitlines():
        if _RECORDER_FRAME.match(line):
            dropped, skipping = dropped + 1, True
            continue
        if skipping and line.startswith("    "):  # the frame's source line and its ^^^ marks
            continue
        skipping = False
        out.append(line)
    return out, dropped


def output_tail(runs: Sequence[model.CommandRun], lines: int = TAIL_LINES) -> list[str]:
    """The end of a run's output, folded (the whole log is in the run folder's
    evidence), without the recorder's frames."""
    if not runs or not runs[0].get("tail", "").strip():
        return []
    run = runs[0]
    kept, dropped = _without_recorder(run["tail"].rstrip())
    note = [f"(the gate's recorder: {dropped} frame(s) left out here; the log has them)"] if dropped else []
    text = "\n".join(kept[-lines:] + note).replace("```", "` ` `")
    return [
        f"<details><summary>the end of the {run['label']} run's output (evidence/{run.get('log', '')})</summary>",
        "",
        "```",
        text,
        "```",
        "",
        "</details>",
    ]


def _names(names: list[str]) -> str:
    return ", ".join(f"`{cell(f)}`" for f in names)


def wrote_words(team: model.TeamRun, wrote: model.Wrote, runs: Sequence[model.CommandRun]) -> str:
    """The paragraph on the files the runs wrote in the team's folder: put
    back after each run (``kept``: where each run's outputs are), or, in a
    report written before 2026-12-02 (no ``kept``), left as the last run wrote them."""
    more = f" and {wrote['count'] - len(wrote['files'])} more" if wrote["count"] > len(wrote["files"]) else ""
    head = (
        f"Your command wrote {wrote['count']} file(s) in `{cell(team['run_dir'])}` during these runs: "
        f"{_names(wrote['files'])}{more}."
    )
    existed, lost = wrote.get("existed") or [], wrote.get("not_restored")
    if lost is None:  # the gate did not put the folder back then
        last = runs[-1]["label"].replace("-repeat", " (repeat)") if runs else "last"
        over = (
            f" {len(existed)} of them existed before the gate and were overwritten: {_names(existed)}."
            if existed
            else ""
        )
        return f"{head} They now hold the {last} run's output, not your own run's.{over}"
    kept = wrote.get("kept") or []
    where = (
        f" Each run's outputs are kept in the run's `evidence/` ({_names([k + '/' for k in kept])})." if kept else ""
    )
    if not lost:
        return (
            f"{head} Each run started from your folder as it was before the gate, and the gate put it back after "
            f"each: your own files are as they were.{where}"
        )
    return (
        f"{head} Each run started from your folder as it was before the gate, except {len(lost)} file(s) too large to "
        f"keep a copy of ({_names(lost)}): they hold the last run's output now, over your own. The others are "
        f"as they were.{where}"
    )
