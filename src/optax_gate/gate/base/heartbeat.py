"""Progress lines that never go quiet: :class:`Heartbeat` is a
:class:`~optax_gate.gate.base.progress.Progress` that, when nothing was printed for
``every`` seconds (25 by default), prints what is running and how far it got
(``optax-0.2.8: 412/723 contracts (still running)``), so a matrix run of
several environments, one after the other, says something at least every
30 s while each runs (issue 17).

A background thread (standard library ``threading``) sleeps until the silence
would reach ``every``; printing goes through one lock, so a heartbeat line
never interleaves with a progress line.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TextIO

from optax_gate.gate.base.progress import Progress


class Heartbeat(Progress):
    """``with Heartbeat() as say: say("optax-0.2.8: building")`` — a progress
    printer whose thread repeats the latest state after ``every`` quiet seconds.

    Args:
      every: seconds of silence before a heartbeat line (> 0).
      stream: where lines go (default stderr, as ``Progress``).
    """

    def __init__(self, every: float = 25.0, stream: TextIO | None = None) -> None:
        super().__init__(stream)
        if not every > 0:
            raise ValueError(f"every must be > 0, got {every}")
        self.every = every
        self._lock = threading.Lock()
        self._last = time.monotonic()
        self._state = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __call__(self, message: str) -> None:
        """Say ``message`` (as :class:`Progress` does) and remember it as the state the next beat repeats."""
        with self._lock:
            super().__call__(message)
            self._last = time.monotonic()
            self._state = message

    def contracts(self, label: str) -> Callable[[int, int], None]:
        """``Progress.contracts``, also keeping ``label: done/total contracts``
        as the state a heartbeat repeats."""
        inner = super().contracts(label)

        def report(done: int, total: int) -> None:
            if total:
                self._state = f"{label}: {done}/{total} contracts"
            inner(done, total)

        return report

    def idle(self) -> None:
        """Nothing is running (between environments): no heartbeat until the next line."""
        self._state = ""

    def _beat(self) -> None:
        wait = self.every
        while not self._stop.wait(wait):
            with self._lock:  # wakes when the silence reaches `every`, not on a coarser tick
                wait = self._last + self.every - time.monotonic()
                if wait <= 0 and self._state:
                    Progress.__call__(self, f"{self._state.removesuffix(' (still running)')} (still running)")
                    self._last = time.monotonic()
                    wait = self.every
                elif wait <= 0:
                    wait = self.every

    def __enter__(self) -> Heartbeat:
        self._thread = threading.Thread(target=self._beat, name="optax-gate-heartbeat", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
