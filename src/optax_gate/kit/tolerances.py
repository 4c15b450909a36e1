"""The tolerance policy of the suite, per dtype, with the reason: the budgets below and their reasons are in
``docs/tolerances.md`` (one place; ``tests/meta/kit/test_tolerances.py`` holds it to these constants)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

EXACT = 0
ELEMENTWISE = 4
#: ``gate --run``: within this many times the spread of the run's own ensemble of perturbed baseline runs is rounding.
ENSEMBLE_FACTOR = 8
#: Largest distance, in float32 ULPs of the params' magnitude, between the
#: params of ``inject_hyperparams(adam)`` and of ``adam`` after 50 steps on the
#: same gradients (``test_training_recipes``). Not bit-identical: injected
#: hyperparameters are float32 *arrays*, so ``1 - b1`` and ``1 - b2`` are
#: computed in float32 (1 - float32(0.9) = 0.100000024) where ``adam`` takes
#: them from Python floats rounded once (0.1 -> 0.1 in float32); each step's
#: moments differ by about one rounding, which carries into the next step.
#: Budget: ELEMENTWISE per step for 50 steps.
INJECT_DRIFT = 50 * 4

#: One step of an arbitrary public transformation (the generated surface
#: contracts, ``optax_gate.kit.surface.probe``), float32, jit against eager:
#: XLA fuses and reorders a step's elementwise stages under ``jit``; a step of
#: the surface is at most eight such stages (moments, bias correction, root,
#: division, scaling, clipping, decay, the update) plus a norm over the
#: representative PyTree's 23 elements. Scale: the params' magnitude, 1.
SURFACE_STEP = 8 * ELEMENTWISE + (ELEMENTWISE + 2 * 23)
#: The generated trajectory snapshots: three such steps carried in a scan
#: (``accumulated(3, SURFACE_STEP)``), as both ``atol`` and ``rtol`` in ULPs.
SURFACE_TRAJECTORY = 3 * SURFACE_STEP

#: The compiled memory of a jitted update (``kit/surface/memory.py``,
#: ``test_surface_memory``): a figure (argument, output or temporary bytes)
#: has changed when it moves by more than ``MEMORY_RTOL`` of the baseline's
#: figure *and* more than ``MEMORY_ATOL`` bytes. Not ULPs: the figures are
#: byte counts of XLA's buffer assignment, exact for one program and one
#: compiler; measured 2026-12-06 on CPU for the 113 transformations, in the
#: four environments optax 0.2.6/0.2.8 x jax 0.11.2/0.12.0.1, they followed
#: Optax's code only (a params buffer no longer read, 136 KiB; lars' 128 KiB
#: temporary gone; muon's rolled Newton-Schulz loop, -69 % of its
#: temporaries), never JAX's. The tolerance lets a compiler's reshuffle of
#: alignment and small scalars pass (12 bytes seen) and flags a buffer the
#: size of a leaf (the tree's smallest leaf that matters, the 512-byte bias,
#: is below it; its 4.5 KiB convolution kernel is above it).
MEMORY_RTOL = 0.10
MEMORY_ATOL = 4096

#: Machine epsilon per dtype name; bfloat16 is not a NumPy dtype, hence a table.
EPS: dict[str, float] = {
    "float64": 2.0**-52,
    "float32": 2.0**-23,
    "float16": 2.0**-10,
    "bfloat16": 2.0**-7,
}

#: The floor of every bound (see :func:`bound`): the smallest normal number
#: (``numpy.finfo(dtype).tiny``) where XLA on CPU flushes subnormals to zero
#: (float64, float32, and bfloat16, computed through float32); for float16,
#: whose subnormals survive (computed in float32, rounded once), its smallest
#: subnormal 2**-24, the spacing of floats near zero.
TINY: dict[str, float] = {
    "float64": 2.0**-1022,
    "float32": 2.0**-126,
    "float16": 2.0**-24,
    "bfloat16": 2.0**-126,
}


def reduction(n_terms: int) -> int:
    """ULP budget of a sum or norm over ``n_terms`` elements.

    Args:
      n_terms: number of elements reduced (>= 0).

    Returns:
      ``4 + 2 * n_terms`` ULPs (see the module docstring for the source).

    Raises:
      ValueError: if ``n_terms`` is negative.
    """
    if n_terms < 0:
        raise ValueError(f"n_terms must be >= 0, got {n_terms}")
    return ELEMENTWISE + 2 * n_terms


def accumulated(steps: int, per_step: int = ELEMENTWISE) -> int:
    """ULP budget after ``steps`` steps of a recurrence whose single step stays
    within ``per_step`` ULPs: ``steps * per_step`` (errors add, see the table).

    Raises:
      ValueError: if ``steps`` < 1.
    """
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    return steps * per_step


def bias_correction(decay: float, step: int, dtype: Any) -> int:
    """ULP budget, in ULPs of ``dtype``, of dividing by ``1 - decay**step``
    when that factor is computed in float32 (float64 under x64) whatever the
    moment's dtype (optax 0.2.6 ``tree_bias_correction``; see the table).

    Raises:
      ValueError: if ``step`` < 1 or ``decay`` is not in (0, 1).
    """
    if step < 1 or not 0.0 < decay < 1.0:
        raise ValueError(f"need step >= 1 and 0 < decay < 1, got {step}, {decay}")
    name = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    compute = "float64" if name == "float64" else "float32"
    cond = decay**step / (1.0 - decay**step)
    return math.ceil((ELEMENTWISE + step) * cond * EPS[compute] / EPS[name])


def eps(dtype: Any) -> float:
    """Machine epsilon of a floating dtype given by name, NumPy or JAX dtype.

    Raises:
      KeyError: for a dtype outside the policy (integers have no ULP budget:
        compare them with ``ulps=EXACT`` through ``numpy.testing``).
    """
    return EPS[np.dtype(dtype).name if not isinstance(dtype, str) else dtype]


def bound(expected: np.ndarray, dtype: Any, ulps: int, scale: float | None = None) -> np.ndarray:
    """Per-element absolute error bound of the policy.

    Args:
      expected: float64 reference values, any shape.
      dtype: dtype the result was computed in.
      ulps: budget in ULPs (``EXACT``, ``ELEMENTWISE`` or ``reduction(n)``).
      scale: magnitude of the operands; defaults to ``max(|expected|)``.

    The bound is never below the dtype's smallest normal number (``TINY``):
    XLA on CPU flushes subnormal results and operands to zero (FTZ/DAZ), so a
    result whose exact value lies below it may come out as 0 (hypothesis found
    ``wd = 1.4e-45`` in a chain's decay: expected -1.4e-46, got -0.0).

    Returns:
      float64 array of ``expected``'s shape.
    """
    expected = np.asarray(expected, dtype=np.float64)
    if scale is None:
        scale = float(np.max(np.abs(expected), initial=0.0))
    name = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    return np.maximum(ulps * eps(dtype) * np.maximum(np.abs(expected), scale), TINY[name])


def ulp_distance(actual: Any, expected: Any, dtype: Any) -> float:
    """Largest error of ``actual`` against ``expected`` in ULPs of ``dtype`` at 1.0
    scaled by ``max(|expected|)``; used in failure messages and drift reports."""
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    if a.size == 0:
        return 0.0
    scale = float(np.max(np.abs(e)))
    if scale == 0.0:
        return 0.0 if not np.any(a) else math.inf
    return float(np.max(np.abs(a - e)) / (eps(dtype) * scale))


def assert_close(
    actual: Any, expected: Any, *, dtype: Any, ulps: int, scale: float | None = None, what: str = "value"
) -> None:
    """Assert ``actual`` is within the policy's bound of ``expected``.

    Args:
      actual: array-like result (any dtype, converted to float64).
      expected: float64 reference or golden value of the same shape.
      dtype: dtype the result was computed in (selects ``eps``).
      ulps: ULP budget.
      scale: operand magnitude (see :func:`bound`).
      what: name used in the failure message (API, argument, leaf path).

    Raises:
      AssertionError: on a shape mismatch, a non-finite value where the
        reference is finite, or an element outside the bound; the message gives
        the worst element, its error in ULPs and the budget.
    """
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    if a.shape != e.shape:
        raise AssertionError(f"{what}: shape {a.shape} != expected {e.shape}")
    nonfinite = np.isfinite(e) & ~np.isfinite(a)
    if nonfinite.any():
        raise AssertionError(f"{what}: non-finite result {a[nonfinite][:3]} where the reference is finite")
    tol = bound(e, dtype, ulps, scale)
    err = np.abs(a - e)
    if (err > tol).any():
        i = np.unravel_index(int(np.argmax(err - tol)), err.shape) if err.ndim else ()
        raise AssertionError(
            f"{what}: element {tuple(int(x) for x in i)} is {a[i]!r}, expected {e[i]!r} "
            f"(error {err[i]:.3g}, bound {tol[i]:.3g} = {ulps} ULP of "
            f"{np.dtype(dtype).name if not isinstance(dtype, str) else dtype}"
            f"; worst error {ulp_distance(a, e, dtype):.2f} ULP)"
        )
