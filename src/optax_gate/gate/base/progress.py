"""Progress lines of a gate run: one line per phase, with the time elapsed
since the start, on stderr (plain lines, readable in a terminal and in CI logs
alike; the report's own output goes to stdout).

Written here (a dozen lines) rather than with ``rich``: the gate's tool
environment stays small, and CI logs want plain lines, not redrawn bars.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO


class Progress:
    """``Progress()("resolving the candidate")`` prints
    ``optax-gate [   3.1 s] resolving the candidate``."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.start = time.monotonic()
        self.stream = stream or sys.stderr
        self._write_lock = threading.Lock()  # not `_lock`: Heartbeat holds its own `_lock` around this call

    def __call__(self, message: str) -> None:
        # one write per line, under a lock: the two sides' threads print at once, and print() writes the
        # text and its newline apart ("baseline: running the contractsoptax-gate [ 33.5 s] candidate: ...")
        """Write ``message`` as one line, prefixed with the seconds since the command started."""
        line = f"optax-gate [{time.monotonic() - self.start:6.1f} s] {message}\n"
        with self._write_lock:
            self.stream.write(line)
            self.stream.flush()

    def contracts(self, label: str) -> Callable[[int, int], None]:
        """A ``(done, total)`` callback for :func:`optax_gate.gate.run.runner.run`
        that prints at each tenth of the contracts (and at the end)."""
        last = {"tenth": -1}

        def report(done: int, total: int) -> None:
            if not total:  # still collecting
                return
            tenth = done * 10 // total
            if tenth != last["tenth"]:
                last["tenth"] = tenth
                self(f"{label}: {done}/{total} contracts")

        return report
