"""What the recorder holds for the whole process (inside the environment under test): the trace writer, the team's
folder, the recorder's own wrappers, and the per-thread depth of recorded calls."""

from __future__ import annotations

import functools
import json
import os
import sys
import threading
import time
import weakref
from typing import IO, Any

from optax_gate.recorder import VERSION

#: Per thread: ``depth`` (recorded calls under way), ``mode`` (``"shadow"`` while a shadow runs), ``warnings`` (a list
#: per
#: recorded call under way, of the warnings it raised), ``noted`` (the last warning noted by ``warnings.warn``).
thread = threading.local()
#: The recorder's own wrappers. Not an attribute: ``functools.wraps`` copies a function's ``__dict__``, so Optax's
#: ``inject_hyperparams(optax.adam)`` (which wraps the recorded ``adam``) would read as recorded and its
#: transformation go unwrapped (seen: its ``init`` and ``update`` were never recorded).
RECORDED: weakref.WeakSet[Any] = weakref.WeakSet()


def mark(fn: Any) -> None:
    """Note ``fn`` as one of the recorder's wrappers (never wrapped again)."""
    RECORDED.add(fn)


def is_recorded(fn: Any) -> bool:
    """Whether ``fn`` is one of the recorder's wrappers."""
    try:
        return fn in RECORDED
    except TypeError:  # not weakly referenceable: never one of ours
        return False


class Writer:
    """Writes the trace of this process (``trace-<pid>.jsonl`` in ``folder``): its first line at the first event, then
    one
    JSON line per event, numbered (``seq``) and flushed at once."""

    def __init__(self, folder: str) -> None:
        self.folder, self.seq, self.lock = folder, 0, threading.Lock()
        self.file: IO[str] | None = None

    def emit(self, event: dict[str, Any]) -> int:
        """Append ``event`` to this process's trace file (opened on the first event); its sequence number."""
        with self.lock:
            file = self.file
            if file is None:
                os.makedirs(self.folder, exist_ok=True)
                file = self.file = open(os.path.join(self.folder, f"trace-{os.getpid()}.jsonl"), "a", encoding="utf-8")  # noqa: SIM115 (open for the process's life)
                file.write(
                    json.dumps({"trace": VERSION, "pid": os.getpid(), "start": time.time(), "argv": sys.argv[:20]})
                    + "\n"
                )
            self.seq += 1
            event["seq"] = self.seq
            file.write(json.dumps(event, default=repr) + "\n")
            file.flush()
            return self.seq


#: The trace writer and the team's folder (its realpath), set once by ``optax_gate.recorder.hook.install``.
writer: Writer | None = None


def emit(event: dict[str, Any]) -> int:
    """Write ``event`` into the trace (:meth:`Writer.emit`); its number.

    Raises:
      RuntimeError: the recorder is not installed (no writer): a recorded call is only made once it is.
    """
    if writer is None:
        raise RuntimeError("the recorder is not installed: no trace writer")
    return writer.emit(event)


root = ""


@functools.lru_cache(maxsize=4096)
def team_file(filename: str) -> str | None:
    """``filename`` relative to the team's folder, or None when it is not the team's."""
    if not filename or filename.startswith("<"):
        return None
    path = os.path.realpath(filename)
    if not path.startswith(root + os.sep):
        return None
    prefix = os.path.realpath(sys.prefix) + os.sep
    if "site-packages" in path.split(os.sep) or path.startswith(prefix):
        return None
    return os.path.relpath(path, root).replace(os.sep, "/")


def depth() -> int:
    """How many recorded calls are under way on this thread (a call inside one is not recorded)."""
    return getattr(thread, "depth", 0)


#: True while a replay runs: the shadow's host callbacks inside the operations it runs whole (a ``lax.scan`` body)
#: record nothing then (they run on XLA's threads: a module flag, not a thread-local one).
replaying = [False]
