"""A gate's recorded team run read back for ``compare`` (``--team-run FILE``): its outcome, its files named from
here."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, cast

from optax_gate.gate.base import model
from optax_gate.gate.base.run_record import RunRecord
from optax_gate.gate.team_run import recording


def recorded(path: Path, baseline: RunRecord, candidate: RunRecord, usage: tuple[Path, ...] = ()) -> model.TeamRun:
    """The team run a gate recorded (``compare --team-run``): the ``team_run``
    of a gate's ``report.json``, or of the ``report.json`` of a run folder
    given instead, for re-use by ``compare`` on the same run records (compare
    runs no code). Its ``affected`` lines are left out: :func:`apply` makes
    them anew from the findings compare forms.

    Args:
      path: a gate's ``report.json``, or the run folder holding it.
      baseline, candidate: the run records compare judges (``evidence/*.json``).
      usage: compare's ``--usage`` paths: the recorded run's folder must lie
        under one of them, or hold one (another team's recorded run is
        refused: its verdict would be that team's).

    Returns a copy of the recorded ``team_run``.

    Raises:
      validate.InvalidInput: the file cannot be read, is not a gate's
        ``report.json`` (a run record, another JSON), holds no team run (the
        gate ran without ``--run``), its sides are not the records' (another
        Optax, JAX or Flax on either side: its run judged other versions), or
        it ran in a folder that ``usage`` neither holds nor lies in.
    """
    import copy
    import json

    from optax_gate.gate.inputs import validate

    file = Path(path) / "report.json" if Path(path).is_dir() else Path(path)
    try:
        report = json.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise validate.InvalidInput(
            f"--team-run {validate.shown(file)} cannot be read: {exc.strerror or exc} (give a gate's "
            "report.json, or its run folder)"
        ) from None
    except ValueError as exc:
        raise validate.InvalidInput(
            f"--team-run {validate.shown(file)} is not a gate's report.json (not JSON: {exc})"
        ) from None
    if RunRecord.is_json(report):
        raise validate.InvalidInput(
            f"--team-run {validate.shown(file)} is a run record, not a gate's report.json (give the run "
            "folder, or its report.json)"
        )
    if not isinstance(report, dict) or "verdict" not in report:
        raise validate.InvalidInput(
            f"--team-run {validate.shown(file)} is not a gate's report.json (give the run folder, or its report.json)"
        )
    team = report.get("team_run")
    if not isinstance(team, dict) or team.get("outcome") not in recording.OUTCOMES:
        raise validate.InvalidInput(
            f"--team-run {validate.shown(file)} holds no team run: it is not the report of a gate run with "
            "--run (a compare report, or a gate run without it; give the report.json of a gate run with "
            "--run)"
        )
    for label, record in (("baseline", baseline), ("candidate", candidate)):
        theirs = (report.get(label) or {}).get("versions") or {}
        ours = record.versions or {}
        moved = sorted(p for p in ("optax", "jax", "jaxlib", "flax") if theirs.get(p) != ours.get(p))
        if moved:
            said = ", ".join(f"{p} {theirs.get(p) or '(none)'} there, {ours.get(p) or '(none)'} here" for p in moved)
            raise validate.InvalidInput(
                f"--team-run {validate.shown(file)} ran the team's command against another {label} "
                f"({said}): give the report.json of the gate that recorded these run records"
            )
    ran_in = Path(os.path.abspath(str(team.get("run_dir") or "")))
    given = [Path(os.path.abspath(p)) for p in usage]
    if given and not any(ran_in == p or ran_in.is_relative_to(p) or p.is_relative_to(ran_in) for p in given):
        raise validate.InvalidInput(
            f"--team-run {validate.shown(file)} ran `{team.get('command')}` in {ran_in}, which is "
            f"not the code of --usage {', '.join(map(str, usage))}: give the report.json of a gate "
            "that ran this team's command"
        )
    team = copy.deepcopy(team)
    team.pop("affected", None)
    return cast(model.TeamRun, named_here(team))  # a gate's report.json holds it, its outcome checked above


def named_here(team: dict[str, Any]) -> dict[str, Any]:
    """A recorded team run with its sites named relative to this command's
    user folder, as ``--usage`` names the same files here: the gate named
    them relative to its own (``named_from``), and a compare started from
    another folder matched none of its call sites with the run's lines."""
    from optax_gate.gate.inputs import usage_files

    base, here = team.get("named_from"), usage_files.user_folder()
    if not base or os.path.abspath(base) == here:
        return team

    def name(site: str) -> str:
        path, sep, line = site.rpartition(":")
        if not sep or not line.isdigit():
            return site
        return f"{usage_files.display_name(Path(base) / path, here)}:{line}"

    old = (
        [s for s in team.get("sites") or []]
        + [c["site"] for c in team.get("causes") or []]
        + [team.get("raised_at") or ""]
    )
    moved = {s: name(s) for s in old if s and name(s) != s}
    out = recording.renamed(team, name)
    if out.get("raised_at"):
        out["raised_at"] = name(out["raised_at"])
    for key in ("reason", "failure"):  # sentences that name the sites
        text = out.get(key) or ""
        for before in sorted(moved, key=len, reverse=True):
            text = text.replace(before, moved[before])
        if key in out:
            out[key] = text
    out["named_from"] = here
    return out
