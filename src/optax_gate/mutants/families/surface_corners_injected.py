"""Mutants of the injected-hyperparameter grid (``tests/contracts/test_surface_corners_injected.py``): float
hyperparameters kept float32 over narrower params (what optax 0.2.8 does), integer hyperparameters injected as
floats, NumPy scalars injected as arrays, and a factory that compares a hyperparameter in Python (as a
``weight_decay == 0.0`` shortcut without an ``isinstance`` guard would). Each one patches
``optax.inject_hyperparams`` or the grid's factories.
"""

from __future__ import annotations

import functools
from typing import Any

from optax_gate.mutants.families.surface_sweep import replace_paths
from optax_gate.mutants.patches import hyperparams_in
from optax_gate.mutants.registry import family

mutant = family("surface_corners_injected", "tests/contracts/test_surface_corners_injected.py")


def _arguments(optax: Any, change: Any) -> Any:
    """``optax.inject_hyperparams`` whose built factory is called with each argument ``v`` as ``change(v)``."""
    orig = optax.inject_hyperparams

    def inject_hyperparams(factory: Any, *a: Any, **k: Any) -> Any:
        made = orig(factory, *a, **k)
        return functools.wraps(made)(
            lambda *args, **kwargs: made(*map(change, args), **{n: change(v) for n, v in kwargs.items()})
        )

    return {"inject_hyperparams": inject_hyperparams}


@mutant(
    "surface-corners-injected-float32",
    "float hyperparameters are cast to float32 whatever the params' dtype (optax 0.2.8's promotion)",
)
def float32(optax: Any) -> Any:
    return hyperparams_in(optax, "float32")


@mutant(
    "surface-corners-injected-int-as-float",
    "an integer hyperparameter (ns_steps, patience, decay_offset) is injected as a float",
)
def int_as_float(optax: Any) -> Any:
    return _arguments(optax, lambda v: float(v) if type(v) is int else v)


@mutant(
    "surface-corners-injected-numpy-scalar",
    "a NumPy scalar hyperparameter is injected as a 0-d array instead of passed through as a static argument",
)
def numpy_scalar(optax: Any) -> Any:
    import numpy as np

    return _arguments(optax, lambda v: np.asarray(v) if isinstance(v, np.generic) else v)


@mutant(
    "surface-corners-injected-python-compare",
    "each factory of the grid compares its float hyperparameters with 0 in Python (a shortcut without an "
    "isinstance guard): "
    "a traced hyperparameter under jax.jit raises",
)
def python_compare(optax: Any) -> Any:
    import jax.numpy as jnp

    from optax_gate.kit.corners.injected import inject_grid

    def make(orig: Any, path: Any) -> Any:
        @functools.wraps(orig)
        def factory(*args: Any, **kwargs: Any) -> Any:
            for v in kwargs.values():
                if hasattr(v, "dtype") and jnp.issubdtype(v.dtype, jnp.floating) and not getattr(v, "shape", ()):
                    bool(v == 0.0)
            return orig(*args, **kwargs)

        return factory

    return replace_paths(inject_grid(), make)
