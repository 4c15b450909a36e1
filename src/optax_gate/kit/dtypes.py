"""The floating dtypes every contract is run in, and how to enter each.

float64 needs ``jax_enable_x64``; :func:`precision` turns it on for the body of
one test only (``jax.enable_x64`` context manager), so the other dtypes keep
JAX's default 32-bit mode.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp

FLOAT_DTYPES = ("float32", "bfloat16", "float16", "float64")


def trajectory_cases() -> list[Any]:
    """``(dtype_name, scheduled)`` pytest parameters: every dtype, with constant
    and with scheduled hyperparameters. The float64 + scheduled case carries
    ``known_defect("schedule-float32-under-x64")``: optax schedules evaluate in
    float32 even in x64 mode, so that run is only float32-accurate (see
    ``trajectories.assert_float32_hyperparameters``)."""
    import pytest

    cases = []
    for name in FLOAT_DTYPES:
        for scheduled in (False, True):
            marks = (
                [pytest.mark.known_defect("schedule-float32-under-x64")]
                if (name, scheduled) == ("float64", True)
                else []
            )
            cases.append(
                pytest.param(name, scheduled, marks=marks, id=f"{name}-{'scheduled' if scheduled else 'constant'}")
            )
    return cases


@contextlib.contextmanager
def precision(name: str) -> Iterator[jnp.dtype]:
    """Yield the JAX dtype ``name`` with x64 mode on exactly when it is float64.

    Raises:
      KeyError: for a name outside ``FLOAT_DTYPES``.
    """
    if name not in FLOAT_DTYPES:
        raise KeyError(name)
    with jax.enable_x64(name == "float64"):
        yield jnp.dtype(name)
