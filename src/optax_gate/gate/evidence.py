"""The gate's evidence folders: one folder per run, made current only once whole.

Layout under ``--out`` (default ``reports/gate``)::

    runs/<UTC time, µs>-<short id>/  one gate run (names sort in start order): report.md, report.json,
        INCOMPLETE                present until the run's report is written and linked
        REFUSED                   the run refused its input (no contract ran); kept only while latest
        candidate-lock.txt        the candidate's lock (absent when there was none)
        evidence/                 run records, pytest output, report logs, JUnit XML
        checkpoints/              the baseline's resume checkpoints
    latest -> runs/<...>          the newest *complete* run (a symlink, replaced atomically)
    report.md -> latest/report.md, report.json -> latest/report.json, report.html -> latest/report.html

A run that is interrupted (Ctrl-C, SIGTERM, a crash that kills the process)
keeps its ``INCOMPLETE`` marker and never becomes ``latest``; the previous
complete run and its evidence are untouched, because no run writes outside its
own folder. An output folder that cannot be written at some point leaves the
same state: the links are made in a temporary name first, and the marker goes
only once they exist, so the previous complete run stays the one linked.
Older runs are pruned to ``keep`` complete ones (the current one included);
refused runs never count toward ``keep`` and are deleted once no longer
``latest``; incomplete folders of processes no longer alive are pruned too.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

from optax_gate.gate import atomic

MARKER = "INCOMPLETE"
#: Marks a run that refused its input (``complete(..., refused=...)``).
REFUSED = "REFUSED"
LATEST = "latest"
#: Files at the top of ``--out`` that always show the latest complete run.
CURRENT = ("report.md", "report.json", "report.html")


@dataclass(frozen=True)
class RunFolder:
    """One gate run's folder (``path``) under the output folder (``root``)."""

    root: Path
    path: Path

    @property
    def evidence(self) -> Path:
        return self.path / "evidence"

    @property
    def checkpoints(self) -> Path:
        return self.path / "checkpoints"

    @property
    def candidate_lock(self) -> Path:
        return self.path / "candidate-lock.txt"

    @property
    def name(self) -> str:
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
    return path.is_dir() and not (path / MARKER).exists()


def complete(run: RunFolder, keep: int, refused: str = "") -> None:
    """Mark ``run`` complete and make it ``latest``; then prune old runs.

    The order keeps every state consistent: the marker goes only after the
    report files are in place (the caller writes them first) and after the new
    links exist under temporary names; ``latest`` and the report links then
    move by atomic renames of symlinks. ``refused``: why the run refused its
    input (written to ``REFUSED``; such a run does not count toward ``keep``).

    Raises:
      OSError: the links or the marker could not be written or removed; the
        previous links are then untouched and ``run`` stays incomplete.
    """
    links = [(run.root / LATEST, Path("runs") / run.name)]
    for name in CURRENT:
        link = run.root / name
        if not (link.is_symlink() and os.readlink(link) == f"{LATEST}/{name}"):
            links.append((link, Path(LATEST) / name))
    made: list[tuple[Path, Path]] = []
    try:
        for link, target in links:
            tmp = link.with_name(f".{link.name}.{secrets.token_hex(4)}.tmp")
            os.symlink(target, tmp)
            made.append((tmp, link))
        if refused:
            atomic.write_text(run.path / REFUSED, refused + "\n")
        (run.path / MARKER).unlink()
    except BaseException:
        for tmp, _ in made:
            tmp.unlink(missing_ok=True)
        raise
    for tmp, link in made:
        os.replace(tmp, link)
    try:
        prune(run.root, keep, current=run.path)
    except OSError:  # the run is complete and linked; old runs stay until a later prune can remove them
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def prune(root: Path, keep: int, current: Path) -> list[Path]:
    """Delete complete runs beyond the newest ``keep``, refused runs, and
    incomplete runs whose process is gone; never ``current`` nor the run
    ``latest`` points to. Refused runs do not count toward ``keep``.
    Returns the folders deleted."""
    runs = sorted((p for p in (root / "runs").iterdir() if p.is_dir()), reverse=True)
    latest = (root / LATEST).resolve() if (root / LATEST).exists() else None
    kept, removed = 0, []
    for path in runs:
        complete, refused = is_complete(path), (path / REFUSED).exists()
        if complete and not refused:
            kept += 1
        if path == current or path.resolve() == latest:
            continue
        if complete and not refused and kept <= keep:
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
