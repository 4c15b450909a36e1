"""Atomic file writes: a reader sees the old file or the new one, never half.

Written here (about ten lines) rather than taken from a package: the one
maintained option on PyPI for this, ``atomicwrites``, is archived by its
author, and the standard library's ``os.replace`` is atomic on POSIX and
Windows when source and target share a directory.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically, creating parent folders.

    The text goes to a temporary file in the same folder, is flushed and
    fsynced, then renamed over ``path``.

    Returns:
      the path written.

    Raises:
      OSError: when the folder cannot be created or written; ``path`` is then
        left as it was.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; a report is as readable as any other file
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
