"""Contracts of ``optax.clip`` (element-wise clipping of the updates).

Source of the expected values: the documented contract ("clips updates
element-wise, to be in [-max_delta, +max_delta]") written as the float64
reference ``references_wrappers.clip``. Source read to pin the rest: optax
0.2.6 ``optax/transforms/_clipping.py`` (``clip``: ``optax.tree.clip(updates,
-max_delta, max_delta)``, stateless) and ``optax/tree_utils/_tree_math.py``
(``tree_clip``: ``jnp.clip`` per leaf, so NaN stays NaN, +-inf become
+-max_delta, and a negative ``max_delta`` is not rejected).

Input: updates PyTree of any structure; output: same structure, shapes, dtypes;
state ``EmptyState``.
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
from optax_gate.kit.tolerances import EXACT, assert_close
from optax_gate.kit.trees import assert_dtype, leaves64, seeded_layer, to_jax

pytestmark = pytest.mark.contract(api="optax.clip", guide="docs: optax.clip (element-wise to [-max_delta, +max_delta])")

NAN, INF = float("nan"), float("inf")


def clip(updates: Any, max_delta: Any = 0.5) -> Any:
    tx = optax.clip(max_delta)
    return tx.update(updates, tx.init(updates))[0]


@pytest.mark.golden
def test_each_element_is_clipped_on_its_own() -> None:
    """clip(0.5): [-2, -0.5, 0.3, 0.7, 5] -> [-0.5, -0.5, 0.3, 0.5, 0.5]; a
    second leaf [0.1] is untouched (no global norm involved)."""
    got = clip({"a": jnp.array([-2.0, -0.5, 0.3, 0.7, 5.0]), "b": jnp.array([0.1])})
    assert_close(got["a"], [-0.5, -0.5, 0.3, 0.5, 0.5], dtype=jnp.float32, ulps=1, what="a")
    assert_close(got["b"], [0.1], dtype=jnp.float32, ulps=1, what="b")


@pytest.mark.negative
def test_nan_passes_and_infinities_are_clipped() -> None:
    """NaN is not a number to clip: it stays NaN; +inf -> 0.5, -inf -> -0.5."""
    got = np.asarray(clip({"a": jnp.array([NAN, INF, -INF])})["a"])
    assert np.isnan(got[0])
    np.testing.assert_array_equal(got[1:], np.float32([0.5, -0.5]))


@pytest.mark.negative
def test_a_negative_max_delta_is_not_rejected() -> None:
    """clip(-1.0) raises nothing: ``jnp.clip(x, 1, -1)`` puts every element at
    -1 (the upper bound wins), whatever its sign."""
    got = clip({"a": jnp.array([-2.0, 0.3, 4.0])}, -1.0)
    assert_close(got["a"], [-1.0, -1.0, -1.0], dtype=jnp.float32, ulps=EXACT, what="a")


@pytest.mark.property
@given(tree=strategies.pytrees(), max_delta=st.floats(1e-3, 1e3))
def test_matches_float64_reference(tree: Any, max_delta: Any) -> None:
    """Generated PyTrees: each leaf equals ``references_wrappers.clip`` (the
    bound itself rounded once to float32: 1 ULP) and no element exceeds
    max_delta in magnitude (beyond that rounding)."""
    updates = to_jax(tree)
    got = clip(updates, max_delta)
    bound = float(np.float32(max_delta))
    for a, e in zip(jax.tree.leaves(got), references_wrappers.clip(leaves64(updates), max_delta), strict=True):
        assert_close(a, e, dtype=jnp.float32, ulps=1, scale=max_delta, what="clipped")
        assert float(np.max(np.abs(np.asarray(a)), initial=0.0)) <= bound


@pytest.mark.acceptance
@pytest.mark.parametrize(("dtype_name", "schedule"), dtypes.trajectory_cases())
def test_trajectory_in_a_chain_with_momentum_sgd(dtype_name: Any, schedule: Any) -> None:
    """Three jitted steps of ``chain(clip(0.5), sgd(lr, momentum=0.9))`` in
    every dtype, gradients of scale 2 (most elements clipped): params follow
    the float64 reference; updates and params keep the dtype."""
    with dtypes.precision(dtype_name) as dtype:
        lr = optax.linear_schedule(0.1, 0.02, transition_steps=2) if schedule else 0.1
        ref_lr = references.linear_schedule(0.1, 0.02, 2) if schedule else 0.1
        params, grads = seeded_layer(steps=3, seed=41, scale=2.0)
        p0, gs = to_jax(params, dtype), [to_jax(g, dtype) for g in grads]
        steps = trajectories.run(optax.chain(optax.clip(0.5), optax.sgd(lr, momentum=0.9)), p0, gs, jit=True)
        clipped = [references_wrappers.clip(leaves64(g), 0.5) for g in gs]
        want = references.sgd_trajectory(leaves64(p0), clipped, ref_lr, momentum=0.9)
        trajectories.assert_follows_in(dtype_name, schedule, [s.params for s in steps], want, initial=p0)
        for k, s in enumerate(steps, 1):
            assert_dtype({"params": s.params, "updates": s.updates}, dtype, f"step {k}")


@pytest.mark.snapshot
@pytest.mark.parametrize("dtype_name", ["float32", "bfloat16"])
def test_state_snapshot(data_regression: Any, dtype_name: Any) -> None:
    """Baseline snapshot (drift, not correctness): state of
    ``chain(clip(0.5), sgd(0.1, momentum=0.9))`` after init and two steps
    (clip's ``EmptyState``, the trace). Recorded from optax 0.2.6 by
    ``./noxw -s update-snapshots``."""
    params, grads = seeded_layer(steps=2, seed=41)
    dtype = jnp.dtype(dtype_name)
    tx = optax.chain(optax.clip(0.5), optax.sgd(0.1, momentum=0.9))
    data_regression.check(trajectories.state_signatures(tx, to_jax(params, dtype), [to_jax(g, dtype) for g in grads]))


@pytest.mark.acceptance
def test_jit_matches_eager_and_does_not_recompile() -> None:
    """Jitted clipping equals eager bit for bit; a second call with the same
    shapes and new values compiles nothing."""
    tx = optax.clip(0.5)
    u1, u2 = {"a": jnp.array([3.0, -0.2])}, {"a": jnp.array([0.4, -4.0])}
    state = tx.init(u1)
    jit_parity.assert_jit_matches_eager(tx.update, [(u1, state), (u2, state)], ulps=EXACT)


@pytest.mark.negative
def test_edge_inputs_none_empty_zero_size_zero_and_infinite_bound(dtype: Any) -> None:
    """Regression protocol edges, pinned to the baseline, in every dtype
    (float64 under x64): a None leaf stays None; an empty PyTree gives an empty
    one; a zero-size leaf passes; clip(0) zeroes every finite element;
    clip(inf) is the identity; a bfloat16 bound (an array, not a Python
    float) takes part in JAX's type promotion: float32, float64 and bfloat16
    leaves keep their dtype, a float16 leaf comes back float32 (float16 with
    bfloat16 promotes to float32)."""
    assert clip({"a": jnp.ones(2, dtype), "b": None})["b"] is None
    assert clip({}) == {}
    assert clip({"z": jnp.ones((0, 3), dtype)})["z"].shape == (0, 3)
    x = jnp.array([-3.0, 0.25, 7.0], dtype)
    assert_close(clip({"a": x}, 0.0)["a"], [0.0, 0.0, 0.0], dtype=dtype, ulps=EXACT, what="clip(0)")
    assert_close(clip({"a": x}, INF)["a"], [-3.0, 0.25, 7.0], dtype=dtype, ulps=EXACT, what="clip(inf)")
    got = clip({"a": x}, jnp.asarray(0.5, jnp.bfloat16))["a"]
    assert got.dtype == (jnp.float32 if dtype == jnp.float16 else dtype)
    assert_close(got, [-0.5, 0.25, 0.5], dtype=dtype, ulps=EXACT, what="bfloat16 bound")
