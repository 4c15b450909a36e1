"""Contracts of ``optax.apply_if_finite`` (skip the steps whose gradient holds
an inf or a NaN, give up after ``max_consecutive_errors`` of them in a row).

Source of the expected values: the documented behaviour (docstrings of
``apply_if_finite`` and ``ApplyIfFiniteState``) written as the float64
reference ``references_wrappers.apply_if_finite``. Source read to pin the
rest: optax 0.2.6 ``optax/transforms/_conditionality.py``: one ``isfinite``
over every leaf; ``notfinite_count`` and ``total_notfinite`` are int32 counters
advanced by ``numerics.safe_increment`` (saturating at the int32 maximum);
the inner update runs under ``lax.cond(isfinite or notfinite_count >
max_consecutive_errors)``, the skipped branch returns zeros and the inner state
unchanged.

Input: gradients of the params' structure. Output: updates of that structure;
state ``ApplyIfFiniteState(notfinite_count, last_finite, total_notfinite,
inner_state)``.
"""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hypothesis import given
from hypothesis import strategies as st

from optax_gate.kit import dtypes, jit_parity, pinned, trajectories
from optax_gate.kit.references import core as references
from optax_gate.kit.references import wrappers as references_wrappers
from optax_gate.kit.tolerances import ELEMENTWISE, EXACT, assert_close
from optax_gate.kit.trees import assert_dtype, leaves64, seeded_layer, to_jax

pytestmark = pytest.mark.contract(
    api="optax.apply_if_finite",
    guide="docs: optax.apply_if_finite and ApplyIfFiniteState (skip non-finite steps, counters)",
)

LR = 0.1
NAN, INF = float("nan"), float("inf")
PARAMS = {"w": jnp.array([1.0, -1.0])}


def counters(state: Any) -> Any:
    return int(state.notfinite_count), bool(state.last_finite), int(state.total_notfinite)


def sgd_ref(g: Any) -> Any:
    return references.sgd_updates(g, LR)


@pytest.mark.golden
def test_counters_and_skipped_steps_over_a_bad_run() -> None:
    """max_consecutive_errors=2, gradients finite, nan, inf, nan, finite:
    updates -0.1*g, 0, 0, NaN (third bad step in a row: gives up and accepts),
    -0.1*g; notfinite_count 0,1,2,3,0; last_finite T,F,F,F,T;
    total_notfinite 0,1,2,3,3 (never reset)."""
    tx = optax.apply_if_finite(optax.sgd(LR), max_consecutive_errors=2)
    state = tx.init(PARAMS)
    assert counters(state) == (0, True, 0)
    values = [1.0, NAN, INF, NAN, 2.0]
    seen, firsts = [], []
    for v in values:
        updates, state = tx.update({"w": jnp.array([v, 1.0])}, state, PARAMS)
        seen.append(counters(state))
        firsts.append(float(updates["w"][0]))
    assert seen == [(0, True, 0), (1, False, 1), (2, False, 2), (3, False, 3), (0, True, 3)]
    assert firsts[0] == pytest.approx(-0.1, rel=1e-6) and firsts[1:3] == [0.0, 0.0]
    assert np.isnan(firsts[3]) and firsts[4] == pytest.approx(-0.2, rel=1e-6)


@pytest.mark.golden
def test_a_skipped_step_leaves_the_inner_state_untouched() -> None:
    """With momentum 0.9: a NaN step between two finite ones returns zero
    updates and keeps the trace bit for bit, so the third step's trace is
    ``g3 + 0.9 * g1`` as if the bad step never happened."""
    tx = optax.apply_if_finite(optax.sgd(LR, momentum=0.9), max_consecutive_errors=5)
    state = tx.init(PARAMS)
    _, state = tx.update({"w": jnp.array([1.0, 2.0])}, state, PARAMS)
    before = np.asarray(state.inner_state[0].trace["w"])
    updates, state = tx.update({"w": jnp.array([NAN, 2.0])}, state, PARAMS)
    assert_close(updates["w"], [0.0, 0.0], dtype=jnp.float32, ulps=EXACT, what="skipped update")
    np.testing.assert_array_equal(np.asarray(state.inner_state[0].trace["w"]), before)
    updates, _ = tx.update({"w": jnp.array([3.0, 4.0])}, state, PARAMS)
    assert_close(updates["w"], [-0.1 * 3.9, -0.1 * 5.8], dtype=jnp.float32, ulps=ELEMENTWISE, what="third update")


_JITTED: dict[Any, Any] = {}


def _jitted(max_errors: Any) -> Any:
    """One transformation and one compiled update per max_consecutive_errors
    (the property draws 4 values; compiling once each keeps it fast)."""
    if max_errors not in _JITTED:
        tx = optax.apply_if_finite(optax.sgd(LR), max_consecutive_errors=max_errors)
        _JITTED[max_errors] = (tx, jax.jit(tx.update))
    return _JITTED[max_errors]


@pytest.mark.property
@given(
    bad=st.lists(st.sampled_from(["ok", "nan", "inf", "-inf"]), min_size=1, max_size=8),
    max_errors=st.integers(0, 3),
    data=st.data(),
)
def test_counters_and_updates_match_the_reference(bad: Any, max_errors: Any, data: Any) -> None:
    """Any sequence of finite and non-finite gradients and any
    max_consecutive_errors: counters, skipped steps and updates equal
    ``references_wrappers.apply_if_finite`` around the SGD reference (EXACT
    for skipped zeros and counters; NaN where an accepted step holds one)."""
    values = data.draw(st.lists(st.floats(-10, 10), min_size=len(bad) * 2, max_size=len(bad) * 2))
    poison = {"ok": None, "nan": NAN, "inf": INF, "-inf": -INF}
    grads = []
    for k, b in enumerate(bad):
        g = np.array(values[2 * k : 2 * k + 2])
        if poison[b] is not None:
            g[k % 2] = poison[b]
        grads.append({"w": jnp.asarray(g, jnp.float32)})
    tx, update = _jitted(max_errors)
    state = tx.init(PARAMS)
    want = references_wrappers.apply_if_finite([leaves64(g) for g in grads], max_errors, sgd_ref)
    for k, (g, w) in enumerate(zip(grads, want, strict=True), 1):
        updates, state = update(g, state, PARAMS)
        assert counters(state) == (w["notfinite_count"], w["last_finite"], w["total_notfinite"]), k
        got, exp = np.asarray(updates["w"], np.float64), w["updates"][0]
        finite = np.isfinite(exp)
        np.testing.assert_array_equal(got[~finite], exp[~finite], err_msg=f"step {k}")
        assert_close(
            got[finite], exp[finite], dtype=jnp.float32, ulps=ELEMENTWISE if w["applied"] else EXACT, what=f"step {k}"
        )


@pytest.mark.acceptance
@pytest.mark.parametrize(("dtype_name", "schedule"), dtypes.trajectory_cases())
def test_trajectory_skips_the_bad_step(dtype_name: Any, schedule: Any) -> None:
    """Four jitted steps of ``apply_if_finite(sgd(lr, momentum=0.9), 1)`` with
    an inf in step 2's kernel gradient, every dtype: params follow the float64
    SGD reference run on steps 1, 3, 4 only (the schedule advances on accepted
    steps: the inner state is untouched by a skipped one); params after step 2
    equal those after step 1 bit for bit; dtypes kept."""
    with dtypes.precision(dtype_name) as dtype:
        lr = optax.linear_schedule(0.1, 0.02, transition_steps=2) if schedule else LR
        ref_lr = references.linear_schedule(0.1, 0.02, 2) if schedule else LR
        params, grads = seeded_layer(steps=4, seed=31)
        grads[1]["kernel"][2, 0] = np.inf
        p0, gs = to_jax(params, dtype), [to_jax(g, dtype) for g in grads]
        steps = trajectories.run(optax.apply_if_finite(optax.sgd(lr, momentum=0.9), 1), p0, gs, jit=True)
        accepted = references.sgd_trajectory(
            leaves64(p0), [leaves64(g) for k, g in enumerate(gs) if k != 1], ref_lr, momentum=0.9
        )
        want = [accepted[0], accepted[0], accepted[1], accepted[2]]
        trajectories.assert_follows_in(dtype_name, schedule, [s.params for s in steps], want, initial=p0)
        for a, b in zip(jax.tree.leaves(steps[0].params), jax.tree.leaves(steps[1].params), strict=True):
            np.testing.assert_array_equal(np.asarray(a, np.float64), np.asarray(b, np.float64))
        assert [counters(s.state) for s in steps] == [(0, True, 0), (1, False, 1), (0, True, 1), (0, True, 1)]
        for k, s in enumerate(steps, 1):
            assert_dtype({"params": s.params, "updates": s.updates}, dtype, f"step {k}")


@pytest.mark.snapshot
@pytest.mark.parametrize("dtype_name", ["float32", "bfloat16"])
def test_state_snapshot(data_regression: Any, dtype_name: Any) -> None:
    """Baseline snapshot (drift, not correctness): ``ApplyIfFiniteState``
    around SGD with momentum after init and three steps (the second one NaN):
    counters with their values, ``last_finite``'s dtype, the inner trace.
    Recorded from optax 0.2.6 by ``./noxw -s update-snapshots``."""
    params, grads = seeded_layer(steps=3, seed=31)
    grads[1]["bias"][0] = np.nan
    dtype = jnp.dtype(dtype_name)
    tx = optax.apply_if_finite(optax.sgd(LR, momentum=0.9), 2)
    data_regression.check(trajectories.state_signatures(tx, to_jax(params, dtype), [to_jax(g, dtype) for g in grads]))


@pytest.mark.acceptance
def test_jit_matches_eager_and_does_not_recompile() -> None:
    """Both branches (accept, skip) live in one compiled program: after the
    first call, a NaN call and a finite call compile nothing; jitted updates
    and counters equal eager ones."""
    tx = optax.apply_if_finite(optax.sgd(LR), 3)
    calls = [{"w": jnp.array([1.0, 2.0])}, {"w": jnp.array([NAN, 2.0])}, {"w": jnp.array([3.0, 4.0])}]
    steps = [(calls[0], tx.init(PARAMS), PARAMS)] + [lambda previous, g=g: (g, previous[1], PARAMS) for g in calls[1:]]
    jitted, eager = jit_parity.run(tx.update, steps)
    for (uj, sj), (ue, se) in zip(jitted, eager, strict=True):
        assert_close(uj["w"], np.asarray(ue["w"], np.float64), dtype=jnp.float32, ulps=ELEMENTWISE, what="jit vs eager")
        assert counters(sj) == counters(se)


@pytest.mark.negative
def test_zero_max_consecutive_errors_accepts_the_first_bad_step() -> None:
    """max_consecutive_errors=0 skips nothing: the first NaN step is applied
    (NaN update), counted in both counters."""
    tx = optax.apply_if_finite(optax.sgd(LR), 0)
    updates, state = tx.update({"w": jnp.array([NAN, 1.0])}, tx.init(PARAMS), PARAMS)
    assert np.isnan(float(updates["w"][0]))
    assert_close(updates["w"][1], -0.1, dtype=jnp.float32, ulps=ELEMENTWISE, what="finite element")
    assert counters(state) == (1, False, 1)


@pytest.mark.negative
def test_gradients_of_another_structure_raise_value_error() -> None:
    """A gradient PyTree unlike the params' fails in the inner SGD's
    ``jax.tree.map`` with its trace."""
    tx = optax.apply_if_finite(optax.sgd(LR, momentum=0.9), 2)
    with pytest.raises(ValueError, match=pinned.PYTREE_STRUCTURE):
        tx.update({"v": jnp.array([1.0, 2.0])}, tx.init(PARAMS), PARAMS)


@pytest.mark.negative
def test_edge_inputs_saturating_counters_none_empty(dtype: Any) -> None:
    """Regression protocol edges, pinned to the baseline: counters at the
    int32 maximum stay there (saturating, no wrap to negative); a None leaf
    stays None; an empty PyTree counts as finite; a zero-size leaf passes;
    every float dtype is checked for finiteness (float64 under x64)."""
    tx = optax.apply_if_finite(optax.sgd(LR), 2)
    top = np.iinfo(np.int32).max
    state = tx.init(PARAMS)._replace(notfinite_count=jnp.int32(top), total_notfinite=jnp.int32(top))
    _, state = tx.update({"w": jnp.array([NAN, 1.0])}, state, PARAMS)
    assert (int(state.notfinite_count), int(state.total_notfinite)) == (top, top)
    with_none = {"w": jnp.ones(2, dtype), "b": None}
    updates, state = tx.update(with_none, tx.init(with_none), with_none)
    assert updates["b"] is None and counters(state) == (0, True, 0)
    updates, state = tx.update({}, tx.init({}), {})
    assert updates == {} and counters(state) == (0, True, 0)
    zero = {"z": jnp.ones((0, 3), dtype)}
    assert tx.update(zero, tx.init(zero), zero)[0]["z"].shape == (0, 3)
    p = {"w": jnp.ones(2, dtype)}
    updates, state = tx.update({"w": jnp.array([INF, 1.0], dtype)}, tx.init(p), p)
    assert counters(state) == (1, False, 1) and updates["w"].dtype == dtype
    assert_close(updates["w"], [0.0, 0.0], dtype=dtype, ulps=EXACT, what="skipped")
