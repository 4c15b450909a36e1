"""Contracts of ``optax.zero_nans`` (a robustness wrapper teams put in front of
their optimizer).

Source of the expected values: the documented contract ("replaces NaNs with
0"; the state has the params' structure, one boolean per leaf, True iff a NaN
was seen in that leaf at the last ``update``), written as the float64 reference
``references_wrappers.zero_nans``. Source read to pin the rest: optax 0.2.6
``optax/transforms/_constraining.py`` (``zero_nans``, ``ZeroNansState``):
``jnp.where(jnp.isnan(u), 0, u)`` per leaf, so infinities pass; the incoming
state is ignored (``del opt_state``).

Input: updates PyTree of any structure and float dtype. Output: same structure,
shapes and dtypes; state ``ZeroNansState(found_nan)`` with a bool[] per leaf.
"""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hypothesis import given
from hypothesis import strategies as st

from optax_gate.kit import dtypes, jit_parity, strategies, trajectories
from optax_gate.kit.references import core as references
from optax_gate.kit.references import wrappers as references_wrappers
from optax_gate.kit.tolerances import ELEMENTWISE, EXACT, assert_close
from optax_gate.kit.trees import assert_dtype, leaves64, seeded_layer, to_jax

pytestmark = pytest.mark.contract(
    api="optax.zero_nans", guide="docs: optax.zero_nans (replaces NaNs with 0; found_nan per leaf)"
)

NAN, INF = float("nan"), float("inf")


def zero(updates: Any, state: Any = None) -> Any:
    tx = optax.zero_nans()
    return tx.update(updates, tx.init(updates) if state is None else state)


@pytest.mark.golden
def test_nans_become_zero_and_the_flag_names_the_leaf() -> None:
    """{a: [nan, 1, -nan], b: [2, 3]} -> {a: [0, 1, 0], b: [2, 3]};
    found_nan = {a: True, b: False}; init's flags are all False."""
    updates = {"a": jnp.array([NAN, 1.0, -NAN]), "b": jnp.array([2.0, 3.0])}
    init = optax.zero_nans().init(updates)
    assert {k: bool(v) for k, v in init.found_nan.items()} == {"a": False, "b": False}
    got, state = zero(updates)
    assert_close(got["a"], [0.0, 1.0, 0.0], dtype=jnp.float32, ulps=EXACT, what="a")
    assert_close(got["b"], [2.0, 3.0], dtype=jnp.float32, ulps=EXACT, what="b")
    assert {k: bool(v) for k, v in state.found_nan.items()} == {"a": True, "b": False}


@pytest.mark.negative
def test_infinities_pass_through_unchanged() -> None:
    """zero_nans is not a finiteness guard: +inf and -inf are kept, and they do
    not set found_nan."""
    got, state = zero({"a": jnp.array([INF, -INF, 1.0])})
    np.testing.assert_array_equal(np.asarray(got["a"]), [INF, -INF, 1.0])
    assert not bool(state.found_nan["a"])


@pytest.mark.negative
def test_the_incoming_state_is_not_checked() -> None:
    """The state passed to ``update`` is ignored: a state built for another
    PyTree is accepted and replaced by flags of the updates' structure."""
    other = optax.zero_nans().init({"x": jnp.ones(1), "y": jnp.ones(1), "z": jnp.ones(1)})
    got, state = zero({"a": jnp.array([NAN])}, other)
    assert set(state.found_nan) == {"a"} and bool(state.found_nan["a"])
    assert_close(got["a"], [0.0], dtype=jnp.float32, ulps=EXACT, what="a")


@pytest.mark.property
@given(tree=strategies.pytrees(), data=st.data())
def test_matches_float64_reference(tree: Any, data: Any) -> None:
    """Generated PyTrees with NaNs put at drawn elements: each leaf equals
    ``references_wrappers.zero_nans`` bit for bit, and found_nan is True
    exactly for the leaves that received a NaN."""
    leaves, treedef = jax.tree.flatten(tree)
    poisoned = []
    for x in leaves:
        mask = data.draw(st.lists(st.booleans(), min_size=x.size, max_size=x.size)) if x.size else []
        poisoned.append(np.where(np.reshape(np.asarray(mask, bool), x.shape), np.nan, x))
    updates = to_jax(jax.tree.unflatten(treedef, poisoned))
    got, state = zero(updates)
    want, found = references_wrappers.zero_nans(leaves64(updates))
    for a, e in zip(jax.tree.leaves(got), want, strict=True):
        assert_close(a, e, dtype=jnp.float32, ulps=EXACT, what="zeroed")
    assert [bool(f) for f in jax.tree.leaves(state.found_nan)] == found


@pytest.mark.acceptance
@pytest.mark.parametrize(("dtype_name", "schedule"), dtypes.trajectory_cases())
def test_trajectory_in_front_of_momentum_sgd(dtype_name: Any, schedule: Any) -> None:
    """Three steps of ``chain(zero_nans(), sgd(lr, momentum=0.9))`` with a NaN
    in the kernel's gradient at step 2, in every dtype, jitted: params follow
    the float64 reference fed the gradients with NaNs replaced by 0; found_nan
    is True at step 2 only; updates and params keep the dtype."""
    with dtypes.precision(dtype_name) as dtype:
        lr = optax.linear_schedule(0.1, 0.02, transition_steps=2) if schedule else 0.1
        ref_lr = references.linear_schedule(0.1, 0.02, 2) if schedule else 0.1
        params, grads = seeded_layer(steps=3, seed=21)
        grads[1]["kernel"][0, 1] = np.nan
        p0, gs = to_jax(params, dtype), [to_jax(g, dtype) for g in grads]
        steps = trajectories.run(optax.chain(optax.zero_nans(), optax.sgd(lr, momentum=0.9)), p0, gs, jit=True)
        clean = [references_wrappers.zero_nans(leaves64(g))[0] for g in gs]
        want = references.sgd_trajectory(leaves64(p0), clean, ref_lr, momentum=0.9)
        trajectories.assert_follows_in(dtype_name, schedule, [s.params for s in steps], want, initial=p0)
        assert [bool(s.state[0].found_nan["kernel"]) for s in steps] == [False, True, False]
        for k, s in enumerate(steps, 1):
            assert_dtype({"params": s.params, "updates": s.updates}, dtype, f"step {k}")


@pytest.mark.snapshot
@pytest.mark.parametrize("dtype_name", ["float32", "bfloat16"])
def test_state_snapshot(data_regression: Any, dtype_name: Any) -> None:
    """Baseline snapshot (drift, not correctness): state of
    ``chain(zero_nans(), sgd(0.1, momentum=0.9))`` after init and two steps
    (the found_nan flags' structure and dtype, the trace). Recorded from optax
    0.2.6 by ``./noxw -s update-snapshots``."""
    params, grads = seeded_layer(steps=2, seed=21)
    dtype = jnp.dtype(dtype_name)
    tx = optax.chain(optax.zero_nans(), optax.sgd(0.1, momentum=0.9))
    data_regression.check(trajectories.state_signatures(tx, to_jax(params, dtype), [to_jax(g, dtype) for g in grads]))


@pytest.mark.acceptance
def test_jit_matches_eager_and_does_not_recompile() -> None:
    """Jitted ``update`` equals eager bit for bit (a select, no arithmetic);
    a second call with the same shapes and new values compiles nothing."""
    tx = optax.zero_nans()
    u1, u2 = {"a": jnp.array([NAN, 2.0])}, {"a": jnp.array([3.0, NAN])}
    state = tx.init(u1)
    jitted, _ = jit_parity.run(tx.update, [(u1, state), (u2, state)])
    for got, u in zip(jitted, (u1, u2), strict=True):
        assert_close(
            got[0]["a"], np.asarray(zero(u)[0]["a"], np.float64), dtype=jnp.float32, ulps=EXACT, what="jit vs eager"
        )
    assert bool(jitted[1][1].found_nan["a"])


@pytest.mark.negative
def test_edge_inputs_none_empty_zero_size_and_dtypes(dtype: Any) -> None:
    """Regression protocol edges, pinned to the baseline: a None leaf stays
    None in the updates and in found_nan; an empty PyTree gives empty updates
    and flags; a zero-size leaf passes with flag False; every float dtype
    keeps its dtype and zeroes its NaN (float64 under x64)."""
    got, state = zero({"a": jnp.array([NAN, 1.0], dtype), "b": None})
    assert got["b"] is None and state.found_nan["b"] is None
    assert got["a"].dtype == dtype
    assert_close(got["a"], [0.0, 1.0], dtype=dtype, ulps=EXACT, what="a")
    assert zero({}) == ({}, optax.zero_nans().init({}))
    got, state = zero({"z": jnp.ones((0, 2), dtype)})
    assert got["z"].shape == (0, 2) and not bool(state.found_nan["z"])
    assert_close(zero({"s": jnp.asarray(NAN, dtype)})[0]["s"], 0.0, dtype=dtype, ulps=ELEMENTWISE, what="0-d leaf")
