"""A planted slowdown for the speed drift check (a mutant-like patch, used only
by ``tests/meta/releases/test_speed.py``): ``python -m tests.meta.speed_plant --serve``
runs ``optax_gate.kit.environment.speed`` with ``optax.apply_updates`` patched to sleep
``OPTAX_GATE_SPEED_PLANT`` (``sleep_ms:N``, default 2) milliseconds per call
inside the compiled step (``jax.debug.callback``, which XLA never removes).

Every set-up calls ``optax.apply_updates`` once per step (``nnx.Optimizer.update``
does, flax 0.12.12 ``flax/nnx/training/optimizer.py``), so every step time
grows by about N ms (20 N ms for the scan of 20 steps); compile times barely
move. The variable is read here only: the kit itself has no slowdown switch.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from typing import Any

import jax
import optax

from optax_gate.kit.environment import speed

VARIABLE = "OPTAX_GATE_SPEED_PLANT"


def plant(spec: str) -> str:
    """Patch ``optax.apply_updates``; return the plant's description. Raises ValueError on a bad spec."""
    kind, _, value = spec.partition(":")
    if kind != "sleep_ms":
        raise ValueError(f"{VARIABLE}: unknown plant {spec!r} (only sleep_ms:N)")
    seconds = float(value) / 1000.0
    original = optax.apply_updates

    @functools.wraps(original)
    def slow_apply_updates(params: Any, updates: Any) -> Any:
        jax.debug.callback(functools.partial(time.sleep, seconds))
        return original(params, updates)

    optax.apply_updates = slow_apply_updates
    return spec


if __name__ == "__main__":
    sys.exit(speed.main(plant=plant(os.environ.get(VARIABLE, "sleep_ms:2"))))
