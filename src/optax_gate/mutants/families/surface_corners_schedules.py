"""Mutants of the schedules' corner grid
(``tests/contracts/test_surface_corners_schedules.py``): NaN at a zero-length
interval, a Python float for a Python-int step, and a schedule that needs a
concrete step (raises under ``jax.jit``), and typed hyperparameters turned
into Python floats (a bfloat16 one no longer sets the dtype). Each one replaces the schedule
factories of the grid (the sweep's schedules less
``corners.schedules.SCHEDULE_LEFT_OUT``) and returns {}.
"""

from __future__ import annotations

import functools
from typing import Any

from optax_gate.mutants.families.surface_sweep import replace_paths
from optax_gate.mutants.registry import family

mutant = family("surface_corners_schedules", "tests/contracts/test_surface_corners_schedules.py")

#: The interval lengths whose 0 the zero-interval mutant turns into NaN.
_LENGTHS = ("transition_steps", "decay_steps", "warmup_steps")


def _paths() -> list[str]:
    from optax_gate.kit.corners.schedules import SCHEDULE_LEFT_OUT
    from optax_gate.kit.surface.calls import CALLS

    return [p for p, (kind, _, _) in CALLS.items() if kind == "schedule" and p not in SCHEDULE_LEFT_OUT]


def _around(change: Any) -> Any:
    """Every grid schedule factory returning ``change(schedule, kwargs)``."""

    def make(orig: Any, path: Any) -> Any:
        @functools.wraps(orig)
        def factory(*args: Any, **kwargs: Any) -> Any:
            return change(orig(*args, **kwargs), kwargs)

        return factory

    return replace_paths(_paths(), make)


@mutant(
    "surface-corners-schedules-zero-interval-nan",
    "a schedule built with a zero-length interval (transition_steps, decay_steps or warmup_steps 0) gives NaN "
    "at every step",
)
def zero_interval_nan(optax: Any) -> Any:
    def change(schedule: Any, kwargs: Any) -> Any:
        if any(kwargs.get(n) == 0 for n in _LENGTHS):
            return lambda count: schedule(count) * float("nan")
        return schedule

    return _around(change)


@mutant(
    "surface-corners-schedules-int-step-python-float",
    "a schedule at a Python-int step returns a Python float (an array at an array step)",
)
def int_step_python_float(optax: Any) -> Any:
    def change(schedule: Any, kwargs: Any) -> Any:
        return lambda count: float(schedule(count)) if isinstance(count, int) else schedule(count)

    return _around(change)


@mutant(
    "surface-corners-schedules-concrete-step",
    "a schedule converts its step with int(): eager steps work, a jitted step raises (a traced count has no "
    "concrete value)",
)
def concrete_step(optax: Any) -> Any:
    def change(schedule: Any, kwargs: Any) -> Any:
        return lambda count: schedule(int(count))

    return _around(change)


@mutant(
    "surface-corners-schedules-hyper-float",
    "a schedule factory turns every 0-d array or NumPy scalar hyperparameter into a Python float: a bfloat16 "
    "hyperparameter no longer sets the values' dtype",
)
def hyper_float(optax: Any) -> Any:
    def make(orig: Any, path: Any) -> Any:
        @functools.wraps(orig)
        def factory(*args: Any, **kwargs: Any) -> Any:
            return orig(*args, **{k: float(v) if getattr(v, "shape", None) == () else v for k, v in kwargs.items()})

        return factory

    return replace_paths(_paths(), make)
