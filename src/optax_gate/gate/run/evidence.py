"""The gate's evidence folders: one folder per run, made current only once whole, and kept by what it judged.

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import secrets
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optax_gate.gate.base import atomic

MARKER = "INCOMPLETE"
#: Marks a complete run that did not judge both sides (``complete(..., judged=False)``); holds why.
NOT_JUDGED = "NOT-JUDGED"
#: The marker of refused runs before NOT-JUDGED existed; such folders are read as not judged.
OLD_REFUSED = "REFUSED"
LATEST = "latest"
#: Files at the top of ``--out`` that always show the latest run that judged both sides.
CURRENT = ("report.md", "report.json", "report.html")
#: Files of a run that its report links to by a relative path (``![...](speed.svg)``): linked at
#: the top of ``--out`` too when the run has them, so ``report.md``/``report.html`` there find them.
LINKED_FROM_REPORT = ("speed.svg",)
#: The link to the newest run that judged nothing, and its report files at the top of ``--out``.
NOT_JUDGED_LINK = "not-judged"
NOT_JUDGED_FILES = {"not-judged.md": "report.md", "not-judged.json": "report.json", "not-judged.html": "report.html"}


@dataclass(frozen=True)
class RunFolder:
    """One gate run's folder (``path``) under the output folder (``root``)."""

    root: Path
    path: Path

    @property
    def evidence(self) -> Path:
        """The run's records and logs."""
        return self.path / "evidence"

    @property
    def checkpoints(self) -> Path:
        """The resume checkpoints the run's baseline wrote."""
        return self.path / "checkpoints"

    @property
    def candidate_lock(self) -> Path:
        """The candidate's resolved lock."""
        return self.path / "candidate-lock.txt"

    @property
    def name(self) -> str:
        """The run folder's name (its start time and a random suffix)."""
        return self.path.name


def start(root: Path, argv: list[str]) -> RunFolder:
    """Create a new run folder, marked incomplete, under ``root/runs``.

    Raises:
      OSError: when the folder cannot be created.
    """
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S.%fZ")  # microseconds: names sort in creation order
    path = root / "runs" / f"{stamp}-{secrets.token_hex(3)}"
    path.mkdir(parents=True)
    atomic.write_text(path / MARKER, json.dumps({"pid": os.getpid(), "started": stamp, "argv": argv}) + "\n")
    return RunFolder(root, path)


def is_complete(path: Path) -> bool:
    """Whether the run folder ``path`` exists and is not marked INCOMPLETE."""
    return path.is_dir() and not (path / MARKER).exists()


def is_judged(path: Path) -> bool:
    """Whether the run folder ``path`` is complete and judged both sides."""
    return is_complete(path) and not (path / NOT_JUDGED).exists() and not (path / OLD_REFUSED).exists()


def not_run(report: Mapping[str, Any]) -> list[str]:
    """The sides (``baseline``, ``candidate``) of ``report`` whose contracts did not run (``status`` not ``"ran"``)."""
    return [side for side in ("baseline", "candidate") if (report.get(side) or {}).get("status") != "ran"]


def judged(report: Mapping[str, Any]) -> bool:
    """Whether ``report`` (a gate report, ``report.json``'s dict) judged both
    sides: the baseline's and the candidate's contracts both ran (``status``
    ``"ran"``), whatever the verdict. A refusal, a side that could not be
    resolved, installed or imported, or a crash before both ran is not."""
    return not not_run(report)


def stamp_time(name: str) -> str:
    """``20261201T153012.123456Z-ab12cd`` (a run folder's name) as ``2026-12-01 15:30 UTC``; the name itself if it is
    not one."""
    try:
        return dt.datetime.strptime(name.split("-", 1)[0], "%Y%m%dT%H%M%S.%fZ").strftime("%Y-%m-%d %H:%M UTC")
    except ValueError:
        return name


def report_now(root: Path) -> str:
    """What ``root/report.md`` is now, as a clause: ``ROOT/report.md still
    shows the run of 2026-12-01 15:30 UTC (verdict fail)``, or, before any
    run there judged both sides, ``there is no ROOT/report.md yet (no run
    here has judged both sides)`` (never "report.md still shows no run yet"
    where no such file is)."""
    latest = root / LATEST
    if not latest.exists():
        return f"there is no {root / 'report.md'} yet (no run here has judged both sides)"
    try:
        verdict = json.loads((latest / "report.json").read_text(encoding="utf-8")).get("verdict", "?")
    except (OSError, ValueError):
        verdict = "unreadable"
    return f"{root / 'report.md'} still shows the run of {stamp_time(latest.resolve().name)} (verdict {verdict})"


#: Set while :func:`complete` moves the marker and the links: the command line's signal handlers
#: (``optax_gate.gate.cli``) then only record a Ctrl-C or SIGTERM in :data:`DEFERRED`, and
#: :func:`complete` raises it once the run is complete and current, never between the marker and the
#: links (a run unmarked but not linked, or links half moved).
COMMITTING: list[bool] = []
DEFERRED: list[BaseException] = []


def complete(run: RunFolder, keep: int, judged: bool = False, why: str = "") -> None:
    """Mark ``run`` complete; make it ``latest`` when it ``judged`` both sides
    (:func:`judged` of its report), else ``not-judged`` (its marker
    ``NOT-JUDGED`` holds ``why``); then prune old runs. The default is not
    judged: a run counts toward ``keep`` only when its caller says it judged.

    The order keeps every state consistent: the marker goes only after the
    report files are in place (the caller writes them first) and after the new
    links exist under temporary names; the links then move by atomic renames
    of symlinks. A run that judged nothing never moves ``latest`` nor
    ``report.md`` / ``report.json``.

    Raises:
      OSError: the links or the marker could not be written or removed; the
        previous links are then untouched and ``run`` stays incomplete.
    """
    head, files = (LATEST, {name: name for name in CURRENT}) if judged else (NOT_JUDGED_LINK, NOT_JUDGED_FILES)
    if judged:  # files the reports link to by a relative path (the speed plot): beside the report.md link too
        files.update({name: name for name in LINKED_FROM_REPORT if (run.path / name).exists()})
    links = [(run.root / head, Path("runs") / run.name)]
    for name, linked in files.items():
        link = run.root / name
        if not (link.is_symlink() and os.readlink(link) == f"{head}/{linked}"):
            links.append((link, Path(head) / linked))
    made: list[tuple[Path, Path]] = []
    try:
        for link, target in links:
            tmp = link.with_name(f".{link.name}.{secrets.token_hex(4)}.tmp")
            os.symlink(target, tmp)
            made.append((tmp, link))
        if not judged:
            atomic.write_text(run.path / NOT_JUDGED, (" ".join(why.split()) or "not both sides' contracts ran") + "\n")
        COMMITTING.append(True)  # from the marker to the last link, a signal waits (see COMMITTING)
        (run.path / MARKER).unlink()
    except BaseException:
        COMMITTING.clear()
        for tmp, _ in made:
            tmp.unlink(missing_ok=True)
        raise
    try:
        for tmp, link in made:
            os.replace(tmp, link)
    finally:
        COMMITTING.clear()
    if DEFERRED:  # the run is complete and current: the signal that waited stops the command now
        raise DEFERRED.pop(0)
    with contextlib.suppress(OSError):  # the run is complete and linked; old runs stay until a later prune removes them
        prune(run.root, keep, current=run.path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def prune(root: Path, keep: int, current: Path) -> list[Path]:
    """Delete judged runs beyond the newest ``keep``, runs that judged nothing
    but the one ``not-judged`` points to, and incomplete runs whose process is
    gone; never ``current`` nor a linked run. Runs that judged nothing do not
    count toward ``keep``. Returns the folders deleted."""
    runs = sorted((p for p in (root / "runs").iterdir() if p.is_dir()), reverse=True)
    linked = {(root / name).resolve() for name in (LATEST, NOT_JUDGED_LINK) if (root / name).exists()}
    kept, removed = 0, []
    for path in runs:
        complete, counted = is_complete(path), is_judged(path)
        if counted:
            kept += 1
        if path == current or path.resolve() in linked:
            continue
        if counted and kept <= keep:
            continue
        if not complete:
            try:
                pid = int(json.loads((path / MARKER).read_text())["pid"])
            except (OSError, ValueError, KeyError, TypeError):
                pid = -1
            if pid > 0 and _alive(pid):
                continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed
