"""Mutants of the derivative corners of losses and schedules
(``tests/contracts/test_surface_corners_derivatives.py``): every loss's
floating arguments behind a wrong ``custom_vjp`` (its reverse rule
doubles the cotangent; forward mode cannot go through it), and schedules that
cast their hyperparameters to Python floats (not differentiable: a tracer
error).
"""

from __future__ import annotations

import functools
from typing import Any

from optax_gate.mutants.families.surface_sweep import replace_paths
from optax_gate.mutants.registry import family

mutant = family("surface_corners_derivatives", "tests/contracts/test_surface_corners_derivatives.py")


def _losses() -> Any:
    from optax_gate.kit.surface.derivatives import losses

    return losses()


def _schedules() -> Any:
    from optax_gate.kit.surface.derivatives import schedules

    return schedules()


@mutant(
    "surface-corners-derivatives-custom-vjp",
    "every loss's floating arguments pass through a custom_vjp whose reverse rule doubles the cotangent: "
    "reverse mode is wrong and forward mode raises",
)
def custom_vjp(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    @jax.custom_vjp
    def through(r: Any) -> Any:
        return r

    through.defvjp(lambda r: (r, None), lambda _, g: (2.0 * g,))

    def make(orig: Any, path: Any) -> Any:
        @functools.wraps(orig)
        def loss(*args: Any, **kwargs: Any) -> Any:
            return orig(
                *(through(a) if hasattr(a, "dtype") and jnp.issubdtype(a.dtype, jnp.floating) else a for a in args),
                **kwargs,
            )

        return loss

    return replace_paths(_losses(), make)


@mutant(
    "surface-corners-derivatives-schedule-concrete",
    "every schedule factory turns its float hyperparameters into Python floats (float(x)): they can no longer "
    "be traced or differentiated",
)
def schedule_concrete(optax: Any) -> Any:
    def make(orig: Any, path: Any) -> Any:
        @functools.wraps(orig)
        def factory(*args: Any, **kwargs: Any) -> Any:
            return orig(
                *args,
                **{
                    k: (
                        float(v)
                        if isinstance(v, float)
                        or (hasattr(v, "dtype") and getattr(v, "ndim", 1) == 0 and "float" in str(v.dtype))
                        else v
                    )
                    for k, v in kwargs.items()
                },
            )

        return factory

    return replace_paths(_schedules(), make)
