"""Mutants of the compiled-memory contracts (``tests/contracts/test_surface_memory.py``): Newton-Schulz loops
no longer unrolled (optax main's muon, values unchanged), a float32 copy of the params kept in every state, a
sorted copy of the updates held as a temporary, and an update that raised now passing its updates through.
Each one replaces the factories of the grid (``kit.surface.memory.memory_paths``) or ``jax.lax`` and returns {}.
"""

from __future__ import annotations

import functools
from typing import Any

from optax_gate.mutants.families.surface_sweep import replace_paths, replace_updates
from optax_gate.mutants.patches import with_update
from optax_gate.mutants.registry import family

mutant = family("surface_memory", "tests/contracts/test_surface_memory.py")


def _paths() -> list[str]:
    from optax_gate.kit.surface.memory import memory_paths

    return memory_paths()


@mutant(
    "surface-memory-rolled-loop",
    "jax.lax.fori_loop never unrolls (muon's Newton-Schulz iterations as a rolled loop, as on optax main): "
    "the same values, other temporaries",
)
def rolled_loop(optax: Any) -> Any:
    import jax

    orig = jax.lax.fori_loop

    @functools.wraps(orig)
    def fori_loop(lower: Any, upper: Any, body_fun: Any, init_val: Any, *, unroll: Any = None) -> Any:
        return orig(lower, upper, body_fun, init_val)

    jax.lax.fori_loop = fori_loop
    return {}


@mutant(
    "surface-memory-state-copy",
    "every transformation keeps a float32 copy of the params in its state (argument and output bytes grow by "
    "the params' size)",
)
def state_copy(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    def make(orig: Any, path: Any) -> Any:
        @functools.wraps(orig)
        def factory(*args: Any, **kwargs: Any) -> Any:
            tx = orig(*args, **kwargs)

            def init(params: Any) -> Any:
                return tx.init(params), jax.tree.map(lambda x: jnp.asarray(x, jnp.float32), params)

            def update(updates: Any, state: Any, params: Any = None, **extra: Any) -> Any:
                u, s = tx.update(updates, state[0], params, **extra)
                return u, (s, jax.tree.map(lambda c, x: c + 0 * x, state[1], u))

            return optax.GradientTransformationExtraArgs(init, update)

        return factory

    return replace_paths(_paths(), make)


@mutant(
    "surface-memory-sorted-temp",
    "every update holds a sorted float32 copy of all its updates as a temporary (temporary bytes grow by the "
    "updates' size)",
)
def sorted_temp(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    def change(u: Any, extra: Any) -> Any:
        leaves = jax.tree.leaves(u)
        if not leaves:
            return u
        flat = jnp.sort(jnp.concatenate([jnp.ravel(x).astype(jnp.float32) for x in leaves]))
        return jax.tree.map(lambda x: x + (0 * flat[-1]).astype(x.dtype), u)

    return replace_updates(optax, _paths(), lambda tx: with_update(optax, tx, change).update)


@mutant(
    "surface-memory-raise-gone",
    "an update that raised while being traced passes its updates through instead (scale_by_muon's default "
    "dimension numbers no longer raise)",
)
def raise_gone(optax: Any) -> Any:
    def around(tx: Any) -> Any:
        def update(updates: Any, state: Any, params: Any = None, **extra: Any) -> Any:
            try:
                return tx.update(updates, state, params, **extra)
            except ValueError:
                return updates, state

        return update

    return replace_updates(optax, _paths(), around)
