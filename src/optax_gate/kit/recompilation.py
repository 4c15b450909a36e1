"""Count XLA compilations, to pin "a second call with the same shapes does not
recompile" (JAX's public ``jax.monitoring`` events, no private cache API).

JAX records ``BACKEND_COMPILE`` around its compile-or-fetch step, so a program
served from the persistent compilation cache (``optax_gate.gate.
compilation_cache``) counts too, and "does not recompile" keeps its meaning
with the cache on (``tests/meta/gate/test_compilation_cache.py`` shows it)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import jax.monitoring

BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"


@dataclass
class Compilations:
    """Number of backend compilations seen since the counter started."""

    count: int = 0


@contextlib.contextmanager
def counting() -> Iterator[Compilations]:
    """Yield a :class:`Compilations` counter updated while the block runs."""
    seen = Compilations()

    def listener(event: str, duration: float, **kwargs: Any) -> None:
        if event == BACKEND_COMPILE:
            seen.count += 1

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield seen
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
