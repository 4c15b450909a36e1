"""Contracts of the skip functions a ``MultiSteps`` takes, ``optax.skip_not_finite`` and
``optax.skip_large_updates`` (issue 56 item 4: the functions a wrapper takes, judged as functions and through
their wrapper), on each updates corner (``optax_gate.kit.corners.skips``).

Source read: optax 0.2.6 ``optax/transforms/_accumulation.py``: ``skip_not_finite`` counts the elements that
are not finite (``jnp.isfinite``: a complex element with a NaN part is not) and skips when the count is above 0;
``skip_large_updates`` sums ``p**2`` over the leaves and skips unless that sum is below ``max_squared_norm``
(NaN included); ``MultiSteps`` with ``should_skip_update_fn`` returns zero updates and keeps its state when the
function says skip, and puts the function's info dict in ``skip_state``.

Expected values: float64 NumPy references of those definitions (the count of non-finite elements, the sum of
squares, ``-lr * g`` for one SGD step); the corner grid is a labelled snapshot of optax 0.2.6 (``snapshot``,
recorded by ``./noxw -s update-snapshots -- -k skip_corners``), read for drift: an empty tree's count is a
float32 there, and a complex update's "squared norm" is ``sum(u**2)``, a complex number, not ``sum(|u|**2)``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from optax_gate.kit import tolerances
from optax_gate.kit.corners.skips import CORNERS, FORMS, FUNCTIONS, function, skip_outcome, updates

GUIDE = "docs: optax 0.2.6 skip_not_finite, skip_large_updates and MultiSteps(should_skip_update_fn) docstrings"
REAL = ("finite", "nan_inf", "large", "empty_leaf", "bfloat16")


def _contract(name: str) -> Any:
    return pytest.mark.contract(api=f"optax.{name}", guide=GUIDE)


def _host(u: Any) -> list[np.ndarray]:
    return [np.asarray(x).astype(np.float64) for x in jax.tree.leaves(u)]


@pytest.mark.golden
@_contract("skip_not_finite")
@pytest.mark.parametrize("corner", (*REAL, "complex", "complex_nan"))
@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_skip_not_finite_counts_what_is_not_finite(corner: Any, mode: Any) -> None:
    """``num_not_finite`` is the count of NaN and inf elements (of either part of a complex one), ``should_skip``
    whether it is above 0, eagerly and under ``jax.jit``."""
    u = updates(corner)
    fn = function("skip_not_finite")
    skip, info = (jax.jit(fn) if mode == "jit" else fn)(u, jnp.int32(0), None)
    count = sum(int(np.sum(~np.isfinite(np.asarray(x).astype(np.complex128)))) for x in jax.tree.leaves(u))
    assert (
        int(info["num_not_finite"]) == count and bool(skip) is (count > 0) and bool(info["should_skip"]) is (count > 0)
    )


@pytest.mark.golden
@_contract("skip_large_updates")
@pytest.mark.parametrize("corner", REAL)
def test_skip_large_updates_compares_the_sum_of_squares(corner: Any) -> None:
    """``norm_squared`` is the sum of the squared elements (float64 reference, within the reduction's ULPs in the
    updates' dtype), ``should_skip`` whether it is not below ``max_squared_norm`` = 10 (NaN skips)."""
    u = updates(corner)
    skip, info = function("skip_large_updates")(u, jnp.int32(0), None)
    squares = sum(float(np.sum(x**2)) for x in _host(u))
    dtype = jax.tree.leaves(u)[0].dtype if jax.tree.leaves(u) else jnp.float32
    n = max(sum(x.size for x in _host(u)), 1)
    if np.isfinite(squares):
        tolerances.assert_close(
            info["norm_squared"], squares, dtype=dtype, ulps=tolerances.reduction(n), what="norm_squared"
        )
    else:
        assert np.isnan(float(info["norm_squared"]))
    assert bool(skip) is (not squares < 10.0)


@pytest.mark.golden
@_contract("MultiSteps")
@pytest.mark.parametrize("name", list(FUNCTIONS))
@pytest.mark.parametrize("corner", ["finite", "nan_inf", "large"])
def test_multisteps_skips_the_update_its_function_skips(name: Any, corner: Any) -> None:
    """Through ``MultiSteps(sgd(1.0), every_k_schedule=1, should_skip_update_fn=fn)``: a step the function skips
    gives zero updates and leaves the mini-step and gradient step where they were; another gives ``-g``
    (one SGD step, exact), and ``skip_state`` is the function's info dict."""
    u = updates(corner)
    tx = optax.MultiSteps(optax.sgd(1.0), every_k_schedule=1, should_skip_update_fn=function(name))
    state = tx.init(u)
    new, after = tx.update(u, state, u)
    host = _host(u)  # the decision from the definitions: a non-finite element; a sum of squares not below 10
    skip = (
        any(not np.all(np.isfinite(x)) for x in host)
        if name == "skip_not_finite"
        else not sum(float(np.sum(x**2)) for x in host) < 10.0
    )
    expected = [np.zeros_like(x) if skip else -x for x in host]
    for got, want in zip(jax.tree.leaves(new), expected, strict=True):
        np.testing.assert_array_equal(np.asarray(got).astype(np.float64), want)
    assert int(after.gradient_step) == (0 if skip else 1) and bool(after.skip_state["should_skip"]) is skip


@pytest.mark.golden
@pytest.mark.known_defect("skip-large-updates-complex-square")
@_contract("skip_large_updates")
def test_skip_large_updates_squares_complex_updates_without_their_modulus() -> None:
    """Complex updates ``[1+2j, -1j]``: ``norm_squared`` is ``sum(u**2)`` = -4+4j (a complex number), not the
    squared norm ``sum(|u|**2)`` = 6; the comparison with ``max_squared_norm`` reads its real part."""
    u = updates("complex")
    skip, info = function("skip_large_updates")(u, jnp.int32(0), None)
    defective = complex(sum(complex(np.sum(np.asarray(x).astype(np.complex128) ** 2)) for x in jax.tree.leaves(u)))
    assert complex(np.asarray(info["norm_squared"])) == defective == complex(-4, 4)
    assert not bool(skip)


@pytest.mark.snapshot
@pytest.mark.parametrize("name", [pytest.param(n, marks=_contract(n)) for n in FUNCTIONS])
def test_skip_corners(name: Any, data_regression: Any) -> None:
    """Each corner alone and through MultiSteps: the skip decision, the info's dtypes and values (baseline snapshot)."""
    data_regression.check({f"corner.{c}/{f}": skip_outcome(name, c, f) for c in CORNERS for f in FORMS})
