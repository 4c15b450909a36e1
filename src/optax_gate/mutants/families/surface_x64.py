"""Mutants of the generated x64 contracts (``tests/contracts/test_surface_x64.py``):
with ``jax_enable_x64`` on, every swept schedule and loss returning float32
(precision lost), float64 (every result promoted), or values off by a
relative 1e-3 plus 1e-3; off x64 they are untouched. Each one patches the canonical
paths and returns {}.
"""

from __future__ import annotations

import functools
from typing import Any

from optax_gate.mutants.families.surface_sweep import callables, map_floats, replace_paths
from optax_gate.mutants.registry import family

mutant = family("surface_x64", "tests/contracts/test_surface_x64.py")


def _under_x64(change: Any) -> Any:
    """Every swept schedule and loss (a schedule: the values it returns) passed
    through ``change`` when x64 is on."""
    import jax

    from optax_gate.kit.surface.calls import CALLS

    def wrapped(result: Any) -> Any:
        if not jax.config.jax_enable_x64:
            return result
        return map_floats(result, change)

    def make(orig: Any, path: Any) -> Any:
        if CALLS[path][0] == "schedule":
            return functools.wraps(orig)(lambda *a, **k: (lambda s: lambda count: wrapped(s(count)))(orig(*a, **k)))
        return functools.wraps(orig)(lambda *a, **k: wrapped(orig(*a, **k)))

    return replace_paths([p for p in callables("schedule") + callables("loss") if "make_" not in p], make)


@mutant("surface-x64-float32", "under x64 every schedule and loss result comes back as float32")
def as_float32(optax: Any) -> Any:
    import jax.numpy as jnp

    return _under_x64(lambda x: jnp.asarray(x, jnp.float32))


@mutant("surface-x64-float64", "under x64 every schedule and loss result comes back as float64")
def as_float64(optax: Any) -> Any:
    import jax.numpy as jnp

    return _under_x64(lambda x: jnp.asarray(x, jnp.float64))


@mutant("surface-x64-values-drift", "under x64 every schedule and loss result scaled by 1 + 1e-3 and shifted by 1e-3")
def values_drift(optax: Any) -> Any:
    return _under_x64(lambda x: x * (1 + 1e-3) + 1e-3)  # shifted too: several losses are 0 on the sweep inputs
