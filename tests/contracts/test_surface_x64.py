"""Generated x64 contracts of the sweep's schedules and losses (issue 18 item
3): each called as ``test_surface_sweep.py`` calls it, with ``jax_enable_x64``
on for that call only (``jax.enable_x64(True)``; the sweep's inputs are built
inside the call, so a loss gets float64 arrays and int64 labels).

Outputs: a schedule's values at ``SCHEDULE_STEPS`` as Python ints
(``x64_python_int_steps``) and as int32 arrays (``x64_int32_steps``, what an
optimizer state's ``count`` is); a loss's numeric result leaves
(``x64_<leaf>``).

- ``test_x64_dtype[path]``: each output's dtype, shape and whether it is
  finite (``float64[10] finite``), or ``raises <type>``, as a labelled
  snapshot of optax 0.2.6 (``data_regression``): a schedule that stays float32
  under x64 is pinned as it behaves (ledger ``schedule-float32-under-x64`` for
  the hand-written schedules), so a candidate that changes the dtype reads
  ``changed``.
- ``test_x64_values[path]``: the values (``ndarrays_regression``), within
  ``tolerances.SURFACE_STEP`` float32 ULPs like the sweep's ``test_values``
  (a change of precision alone is the dtype contract's).
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from optax_gate.kit import tolerances
from optax_gate.kit.surface import build as surface_build
from optax_gate.kit.surface import generated as surface_generated
from optax_gate.kit.surface.calls import CALLS, EXPECT, SCHEDULE_STEPS

GUIDE = "docs: JAX jax_enable_x64 (64-bit mode); optax 0.2.6 schedules' and losses' docstrings"
#: The schedules and the losses the sweep calls directly (as ``test_surface_sweep.SCHEDULES``/``LOSSES``).
PATHS = [
    p
    for p, (kind, _, _) in CALLS.items()
    if kind == "schedule" or (kind == "loss" and p not in EXPECT and "make_" not in p)
]


def _numeric(tree: Any) -> dict[str, np.ndarray]:
    out = {}
    for k, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
        arr = np.asarray(leaf)
        if arr.dtype.kind in "biuf":
            out["x64_" + (jax.tree_util.keystr(k).strip("[]'.") or "result")] = arr
    return out


@functools.cache
def outputs(path: str) -> dict[str, np.ndarray] | str:
    """The x64 outputs of ``path`` (see the module docstring), or
    ``"raises <type>"`` when the call raises."""
    kind, _, call = CALLS[path]
    try:
        with jax.enable_x64(True):
            result = call(surface_build.resolve(path))
            if kind == "schedule":
                return {
                    "x64_python_int_steps": np.stack([np.asarray(result(s)) for s in SCHEDULE_STEPS]),
                    "x64_int32_steps": np.stack(
                        [np.asarray(result(jnp.asarray(s, jnp.int32))) for s in SCHEDULE_STEPS]
                    ),
                }
            return _numeric(result)
    except Exception as exc:  # the outcome is the exception's type
        return f"raises {type(exc).__name__}"


def _case(path: Any) -> Any:
    return pytest.param(
        path,
        id=path,
        marks=[pytest.mark.contract(api=path, guide=surface_generated.guide(path, GUIDE)), pytest.mark.snapshot],
    )


@pytest.mark.parametrize("path", [_case(p) for p in PATHS])
def test_x64_dtype(path: Any, data_regression: Any) -> None:
    """Each output's dtype, shape and finiteness under x64 (baseline snapshot)."""
    out = outputs(path)
    if isinstance(out, str):
        data_regression.check({"x64": out})
        return
    data_regression.check(
        {
            k: f"{a.dtype}[{', '.join(map(str, a.shape))}] {'finite' if np.all(np.isfinite(a)) else 'non-finite'}"
            for k, a in out.items()
        }
    )


@pytest.mark.parametrize("path", [_case(p) for p in PATHS])
def test_x64_values(path: Any, ndarrays_regression: Any) -> None:
    """The values under x64 (baseline snapshot)."""
    out = outputs(path)
    values = out if isinstance(out, dict) and out else {"no numeric leaf": np.zeros(0)}
    tol = tolerances.SURFACE_STEP * tolerances.eps("float32")
    ndarrays_regression.check(values, default_tolerance={"atol": tol, "rtol": tol})
