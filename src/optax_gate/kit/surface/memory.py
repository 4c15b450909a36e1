"""The compiled memory of each transformation's jitted ``update``: argument, output and temporary bytes
(``jax.stages.Compiled.memory_analysis()``), on a PyTree the size of a small layer.

A team fears an out-of-memory error after an upgrade more than a last-digit change: a transformation whose
values stay the same but whose compiled program holds more temporaries (a loop unrolled or no longer
unrolled, a state leaf kept in float32, a copy not donated) shows here and nowhere else.
"""

from __future__ import annotations

from typing import Any

#: The PyTree whose ``update`` is compiled: a dense kernel, a 2-D convolution kernel (rank 4) and a bias,
#: float32 (about 160 KiB), named by rank so that an entry's ``skip_leaves`` (``r4``) drops a leaf.
MEMORY_SHAPES = {"r2": (256, 128), "r4": (3, 3, 8, 16), "r1": (128,)}
#: The three figures a record holds, by their name in ``CompiledMemoryStats``.
FIGURES = {
    "argument_bytes": "argument_size_in_bytes",
    "output_bytes": "output_size_in_bytes",
    "temp_bytes": "temp_size_in_bytes",
}


def memory_paths() -> list[str]:
    """The surface table's transformations whose ``update`` is compiled here: not ``left_out``, not ``slow``
    (a line search's or a Hessian estimate's compilation takes seconds)."""
    from optax_gate.kit.surface.table import TRANSFORMATIONS

    return [p for p, e in TRANSFORMATIONS.items() if not e.left_out and not e.slow]


def memory_params(skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """The PyTree of :data:`MEMORY_SHAPES` (float32, seeded values; ``skip``'s leaves left out)."""
    import jax.numpy as jnp
    import numpy as np

    rng = np.random.default_rng(0)
    return {n: jnp.asarray(rng.standard_normal(s), jnp.float32) for n, s in MEMORY_SHAPES.items() if n not in skip}


def backend() -> str:
    """The platform whose compiler made the figures (``cpu``, ``gpu``, ``tpu``): each has its own snapshot."""
    import jax

    return jax.default_backend()


def memory_record(path: str) -> dict[str, int]:
    """``{argument_bytes, output_bytes, temp_bytes}`` of ``jax.jit(tx.update)`` compiled for ``path``'s
    transformation (built as the surface table builds it) on :func:`memory_params`, with the extra
    arguments it needs (``value``, ``grad``, ``value_fn`` closed over, not traced). Raises what building,
    lowering or compiling raises."""
    import jax

    from optax_gate.kit.surface import build as surface_build
    from optax_gate.kit.surface.probe import extra_args
    from optax_gate.kit.surface.table import TRANSFORMATIONS

    entry = TRANSFORMATIONS[path]
    tx = surface_build.build(path, entry.args, entry.builder)
    p = memory_params(tuple(entry.skip_leaves))
    extra = extra_args(entry, p)
    traced = {k: v for k, v in extra.items() if not callable(v)}
    fixed = {k: v for k, v in extra.items() if callable(v)}

    def update(g: Any, state: Any, params: Any, traced: Any) -> Any:
        return tx.update(g, state, params, **traced, **fixed)

    g = jax.tree.map(lambda x: x * 0.5, p)
    stats = jax.jit(update).lower(g, tx.init(p), p, traced).compile().memory_analysis()
    return {name: int(getattr(stats, attr)) for name, attr in FIGURES.items()}
