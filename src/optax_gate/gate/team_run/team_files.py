"""The team's folder around the runs of ``gate --run``: every run starts from the folder as it was before the
gate, and the folder is left as it was.

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
from pathlib import Path

#: Most files of ``--run-dir`` looked at (a larger folder is not looked at, nor kept).
WATCHED_FILES = 20_000
#: Folders of ``--run-dir`` not looked at: version control, caches and environments the command's Python may write.
NOT_WATCHED = {
    ".git",
    ".hg",
    ".svn",
    "__pycache__",
    ".nox",
    ".venv",
    "venv",
    ".mypy_cache",
    ".pytest_cache",
    "node_modules",
}
#: Most bytes of the team's files copied before the first run (smallest files first): 256 MiB.
KEPT_BYTES = 256 * 2**20


def _watched(root: str, dirs: list[str], skip: frozenset[str]) -> list[str]:
    return sorted(d for d in dirs if d not in NOT_WATCHED and os.path.realpath(os.path.join(root, d)) not in skip)


def scan(
    run_dir: Path, skip: frozenset[str] = frozenset(), limit: int | None = None
) -> tuple[dict[str, tuple[int, int]] | None, set[str]]:
    """One walk of ``run_dir``: each file (relative name -> modification
    time in ns, size in bytes; None past ``limit`` files, default
    :data:`WATCHED_FILES`, 0: no limit) and each folder (relative names),
    :data:`NOT_WATCHED` folders and the folders of ``skip`` (real paths)
    left out, links to files followed."""
    limit = WATCHED_FILES if limit is None else limit
    out: dict[str, tuple[int, int]] = {}
    folders: set[str] = set()
    for root, dirs, names in os.walk(run_dir):
        dirs[:] = _watched(root, dirs, skip)
        folders.update(os.path.relpath(os.path.join(root, d), run_dir) for d in dirs)
        for file in names:
            path = os.path.join(root, file)
            try:
                st = os.stat(path)
            except OSError:  # a dangling link, a file gone meanwhile
                continue
            out[os.path.relpath(path, run_dir)] = (st.st_mtime_ns, st.st_size)
            if limit and len(out) > limit:
                return None, folders
    return out, folders


@dataclasses.dataclass
class Before:
    """The folder before the first run: ``state`` (:func:`scan`), the
    folders there were, the files copied into ``store`` (``kept``), and what
    the runs have changed so far (``changed``: created, changed or deleted;
    ``existed``: those of them that were there before; ``not_restored``:
    those that could not be put back)."""

    run_dir: Path
    state: dict[str, tuple[int, int]]
    folders: set[str]
    store: Path
    kept: set[str]
    skip: frozenset[str] = frozenset()
    changed: list[str] = dataclasses.field(default_factory=list)
    existed: list[str] = dataclasses.field(default_factory=list)
    not_restored: list[str] = dataclasses.field(default_factory=list)

    def note(self, names: list[str], existed: bool = False, not_restored: bool = False) -> None:
        """Add ``names`` to the changed files, and to those that existed before or could not be put back."""
        for name in names:
            for flag, into in ((True, self.changed), (existed, self.existed), (not_restored, self.not_restored)):
                if flag and name not in into:
                    into.append(name)


def take(run_dir: Path, store: Path, skip: tuple[Path, ...] = ()) -> Before | None:
    """Look at ``run_dir`` and copy its files into ``store`` (smallest first,
    up to :data:`KEPT_BYTES` in all); None when the folder has more than
    :data:`WATCHED_FILES` files. ``skip``: folders never looked at, should
    they lie in ``run_dir`` (the gate's own output, caches and environments,
    which the gate writes while the command runs); ``store`` is one of them.

    Raises:
      OSError: ``store`` cannot be written (a file of the team that cannot be
        read is not kept, and is named if a run changes it).
    """
    skipped = frozenset(os.path.realpath(p) for p in (*skip, store))
    state, folders = scan(run_dir, skipped)
    if state is None:
        return None
    shutil.rmtree(store, ignore_errors=True)
    store.mkdir(parents=True)
    kept, total = set(), 0
    for name, (_, size) in sorted(state.items(), key=lambda item: (item[1][1], item[0])):
        if total + size > KEPT_BYTES:
            break
        try:
            (store / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(run_dir / name, store / name)
        except OSError:
            continue
        kept.add(name)
        total += size
    return Before(run_dir, state, folders, store, kept, skipped)


def settle(before: Before, outputs: Path | None) -> list[str]:
    """After a run: move what it created into ``outputs`` (None: delete it),
    copy what it changed there, put back each changed or deleted file from
    its copy, and remove the folders it created; return the names it created,
    changed or deleted (also noted in ``before``). Never raises: a file that
    cannot be moved or put back is named in ``before.not_restored``."""
    # every file, however many the run created: past the limit, the originals read as deleted and the new ones stayed
    now, folders = scan(before.run_dir, before.skip, limit=0)  # no limit: never None
    if now is None:
        raise AssertionError("scan with limit=0 never gives up")
    names = sorted(set(now) | set(before.state))
    touched = [n for n in names if now.get(n) != before.state.get(n)]
    for name in touched:
        here, saved = before.run_dir / name, before.store / name
        try:
            if outputs is not None and name in now:
                (outputs / name).parent.mkdir(parents=True, exist_ok=True)
                (shutil.copy2 if name in before.state else shutil.move)(here, outputs / name)
            elif name not in before.state:
                here.unlink()
            if name in before.state:
                if name not in before.kept:
                    before.note([name], existed=True, not_restored=True)
                    continue
                here.parent.mkdir(parents=True, exist_ok=True)  # the run may have removed its folder
                shutil.copy2(saved, here)
            before.note([name], existed=name in before.state)
        except OSError:
            before.note([name], existed=name in before.state, not_restored=True)
    for folder in sorted(folders - before.folders, key=len, reverse=True):  # moving files leaves the folders
        with contextlib.suppress(OSError):
            (before.run_dir / folder).rmdir()  # only an empty one: a file it still holds is named above
    return touched


def discard(before: Before) -> None:
    """Remove the copies (once every run is settled)."""
    shutil.rmtree(before.store, ignore_errors=True)
