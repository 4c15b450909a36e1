"""The compiled memory of each whole step the team transformed (inside the environment under test).

At the first call of each recorded whole step (``jax.jit``, ``jax.pmap``, ``flax.nnx.jit``... from the team's
files), the step is lowered and compiled once more on the call's own arguments (``.lower(...).compile()``:
nothing runs, nothing is donated), traced as the real program is (Optax's wrappers passing through), and the
compiled program's argument, output and temporary bytes (``memory_analysis()``) are written as a
``{"memory": api, "site": file:line, ...}`` event. Not in an ensemble member (its inputs are the same
shapes: its figures would be the baseline's), not where the step has no ``lower`` (an eager ``scan``).
"""

from __future__ import annotations

import os
from typing import Any

from optax_gate.recorder import perturb, process

#: The figures of an event, by their name in ``CompiledMemoryStats``.
FIGURES = {
    "argument_bytes": "argument_size_in_bytes",
    "output_bytes": "output_size_in_bytes",
    "temp_bytes": "temp_size_in_bytes",
}


def measure(real: Any, args: tuple[Any, ...], kwargs: dict[str, Any], graph: bool, api: str, site: str) -> None:
    """Compile ``real`` (a transformed step with ``lower``) for ``args``/``kwargs`` (on a clone of the ``nnx``
    graph nodes when ``graph``) and write its memory figures, or ``{"error": ...}`` when lowering or compiling
    raises (the real call raises it for the team, if it does)."""
    lower = getattr(real, "lower", None)
    if lower is None or process.writer is None or os.environ.get(perturb.PERTURB_ENV):
        return
    event: dict[str, Any] = {"memory": api, "site": site}
    process.thread.depth = process.depth() + 1  # traced as the real program is: Optax's wrappers pass through
    try:
        if graph:
            from flax import nnx

            args, kwargs = nnx.clone((args, kwargs))
        import jax

        stats = lower(*args, **kwargs).compile().memory_analysis()
        event.update({name: int(getattr(stats, attr)) for name, attr in FIGURES.items()}, backend=jax.default_backend())
    except Exception as exc:  # the team's program is not concerned
        event["error"] = f"{type(exc).__name__}: {exc}"[:300]
    finally:
        process.thread.depth -= 1
    process.writer.emit(event)
