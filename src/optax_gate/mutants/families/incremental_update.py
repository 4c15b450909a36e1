"""Mutants of optax.incremental_update: deliberately broken variants that the contracts
of ``tests/contracts/test_incremental_update.py`` must catch."""

from __future__ import annotations

from typing import Any

from optax_gate.mutants.patches import lenient, nan_to_zero, none_as_zeros, to_f32, traced, tree_map
from optax_gate.mutants.registry import family

mutant = family("polyak", "tests/contracts/test_incremental_update.py")


@mutant("polyak-swapped", "swaps new_tensors and old_tensors")
def _(optax: Any) -> Any:
    orig = optax.incremental_update
    return {"incremental_update": lambda new, old, step_size: orig(old, new, step_size)}


@mutant("polyak-clamped", "clamps step_size into [0, 1]")
def _(optax: Any) -> Any:
    orig = optax.incremental_update
    return {"incremental_update": lambda new, old, step_size: orig(new, old, min(max(step_size, 0.0), 1.0))}


@mutant("polyak-off-by-ulps", "computes old + step*(new - old), a different rounding")
def _(optax: Any) -> Any:
    return {
        "incremental_update": lambda new, old, step_size: tree_map(
            lambda n, o: o + step_size * (n - o) + 1e-6 * step_size * (1 - step_size), new, old
        )
    }


@mutant("polyak-in-place", "writes the average into NumPy old_tensors in place")
def _(optax: Any) -> Any:
    import numpy as np

    orig = optax.incremental_update

    def f(new: Any, old: Any, step_size: Any) -> Any:
        import jax

        out = orig(new, old, step_size)
        for o, r in zip(jax.tree.leaves(old), jax.tree.leaves(out), strict=True):
            if isinstance(o, np.ndarray):
                np.copyto(o, np.asarray(r))
        return out

    return {"incremental_update": f}


@mutant("polyak-lenient", "pairs leaves by order and resizes: no structure or shape error")
def _(optax: Any) -> Any:
    return {"incremental_update": lenient(optax.incremental_update)}


@mutant("polyak-upcast", "returns float32 whatever the dtype")
def _(optax: Any) -> Any:
    orig = optax.incremental_update
    return {"incremental_update": lambda new, old, step_size: to_f32(orig(new, old, step_size))}


@mutant("polyak-jit-differs", "perturbs the result by 1e-3 only under jax.jit")
def _(optax: Any) -> Any:
    orig = optax.incremental_update

    def f(new: Any, old: Any, step_size: Any) -> Any:
        out = orig(new, old, step_size)
        return tree_map(lambda x: x * 1.001, out) if traced(new) else out

    return {"incremental_update": f}


@mutant("polyak-guarded", "zeroes non-finite values and turns None leaves into zeros")
def _(optax: Any) -> Any:
    orig = optax.incremental_update
    return {
        "incremental_update": lambda new, old, step_size: none_as_zeros(
            orig(nan_to_zero(new), nan_to_zero(old), step_size)
        )
    }
