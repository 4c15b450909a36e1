"""Contracts of ``optax.incremental_update`` (Polyak averaging).

Guide: 004_ac3a64a51466adca.txt. Source read: optax 0.2.6
``optax/_src/update.py``: ``jax.tree.map(lambda new, old: None if new is None
else step_size * new + (1.0 - step_size) * old, new_tensors, old_tensors,
is_leaf=lambda x: x is None)``; ``step_size`` is not validated.

Inputs: ``new_tensors`` (online params) and ``old_tensors`` (the averaged
copy), PyTrees of one structure; ``step_size`` a scalar in [0, 1].
Output: a new PyTree of the same structure.
"""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hypothesis import given
from hypothesis import strategies as st

from optax_gate.kit import dtypes, guides, jit_parity, pinned, strategies, trajectories
from optax_gate.kit.references import core as references
from optax_gate.kit.tolerances import ELEMENTWISE, EXACT, assert_close
from optax_gate.kit.trees import assert_dtype, leaves64, seeded_layer, to_jax

pytestmark = pytest.mark.contract(api="optax.incremental_update", guide=guides.POLYAK)


@pytest.mark.golden
def test_guide_example() -> None:
    """Guide 004 lines 5, 18-19, 24: 0.25 * 4 + 0.75 * 0 = 1."""
    result = optax.incremental_update({"w": jnp.array([4.0])}, {"w": jnp.array([0.0])}, step_size=0.25)
    assert_close(result["w"], [1.0], dtype=jnp.float32, ulps=ELEMENTWISE, what="averaged")


@pytest.mark.golden
def test_guide_example_leaves_both_inputs_unchanged() -> None:
    """Guide 004 lines 5, 20-21, 53: neither argument is mutated (NumPy inputs,
    which could be) and the result is a new PyTree."""
    online = {"w": np.array([4.0], np.float32)}
    averaged = {"w": np.array([0.0], np.float32)}
    result = optax.incremental_update(online, averaged, step_size=0.25)
    np.testing.assert_array_equal(online["w"], [4.0])
    np.testing.assert_array_equal(averaged["w"], [0.0])
    assert result is not online and result is not averaged


@pytest.mark.negative
def test_swapped_new_and_old_give_another_result() -> None:
    """Guide 004 line 46 (do not swap new_tensors and old_tensors): swapped, the
    guide's example gives 0.25 * 0 + 0.75 * 4 = 3, not 1; nothing detects it."""
    result = optax.incremental_update({"w": jnp.array([0.0])}, {"w": jnp.array([4.0])}, step_size=0.25)
    assert_close(result["w"], [3.0], dtype=jnp.float32, ulps=ELEMENTWISE, what="swapped")


@pytest.mark.negative
def test_step_size_outside_unit_interval_is_not_validated() -> None:
    """Guide 004 line 10 (choose step_size in [0, 1]): the baseline does not
    check it; 1.5 extrapolates to 1.5 * 4 - 0.5 * 0 = 6."""
    result = optax.incremental_update({"w": jnp.array([4.0])}, {"w": jnp.array([0.0])}, step_size=1.5)
    assert_close(result["w"], [6.0], dtype=jnp.float32, ulps=ELEMENTWISE, what="extrapolated")


@pytest.mark.negative
def test_trees_of_another_structure_raise_value_error() -> None:
    """Guide 004 line 9 (online and averaged trees of one structure)."""
    with pytest.raises(ValueError, match=pinned.PYTREE_STRUCTURE):
        optax.incremental_update({"w": jnp.ones(1)}, {"v": jnp.ones(1)}, 0.5)


@pytest.mark.negative
def test_leaves_of_another_shape_raise_type_error() -> None:
    """Regression protocol: a deliberately incompatible shape, (2,) vs (3,)."""
    with pytest.raises(TypeError, match=pinned.INCOMPATIBLE_SHAPES):
        optax.incremental_update({"w": jnp.ones(2)}, {"w": jnp.ones(3)}, 0.5)


@pytest.mark.property
@given(pair=strategies.pytree_pairs(), step=st.floats(0.0, 1.0))
def test_matches_float64_reference(pair: Any, step: Any) -> None:
    """Guide 004 lines 12 and 51: ``step*new + (1-step)*old`` on every leaf of
    generated PyTrees, against ``references.incremental_update``."""
    new, old = to_jax(pair[0]), to_jax(pair[1])
    result = optax.incremental_update(new, old, step)
    assert jax.tree.structure(result) == jax.tree.structure(new)
    for got, want, n, o in zip(
        jax.tree.leaves(result),
        references.incremental_update(leaves64(new), leaves64(old), step),
        leaves64(new),
        leaves64(old),
        strict=True,
    ):
        scale = max(float(np.max(np.abs(n))), float(np.max(np.abs(o))))
        assert_close(got, want, dtype=jnp.float32, ulps=ELEMENTWISE, scale=scale, what="averaged")


@pytest.mark.property
@given(pair=strategies.pytree_pairs())
def test_step_zero_returns_old_and_step_one_returns_new(pair: Any) -> None:
    """Formula at the ends of [0, 1]: exactly ``old`` at 0 and ``new`` at 1."""
    new, old = to_jax(pair[0]), to_jax(pair[1])
    for step, want in ((0.0, old), (1.0, new)):
        for got, exp in zip(jax.tree.leaves(optax.incremental_update(new, old, step)), leaves64(want), strict=True):
            assert_close(got, exp, dtype=jnp.float32, ulps=EXACT, what=f"step_size={step}")


@pytest.mark.acceptance
def test_result_shapes_dtypes_and_finiteness(dtype: Any) -> None:
    """Guides' acceptance criteria 2, 3, 5: shapes and dtypes kept, finite
    values, reference formula; asymmetric shapes (3x5x2); every dtype (float64
    under x64)."""
    rng = np.random.default_rng(2)
    new = to_jax({"kernel": rng.normal(size=(3, 5, 2)), "bias": rng.normal(size=(2,))}, dtype)
    old = to_jax({"kernel": rng.normal(size=(3, 5, 2)), "bias": rng.normal(size=(2,))}, dtype)
    result = optax.incremental_update(new, old, 0.25)
    for name in new:
        assert result[name].shape == new[name].shape and result[name].dtype == dtype, name
        assert bool(jnp.all(jnp.isfinite(result[name]))), name
    for got, want in zip(
        jax.tree.leaves(result), references.incremental_update(leaves64(new), leaves64(old), 0.25), strict=True
    ):
        assert_close(got, want, dtype=dtype, ulps=ELEMENTWISE, what="averaged")


@pytest.mark.acceptance
def test_jit_matches_eager_and_does_not_recompile() -> None:
    """The jitted call equals the eager one; a second call with new values (and
    a new step size, passed as an array) compiles nothing."""
    new, old = {"w": jnp.array([4.0, -2.0])}, {"w": jnp.array([0.0, 1.0])}
    jit_parity.assert_jit_matches_eager(
        optax.incremental_update, [(new, old, jnp.float32(0.25)), (old, new, jnp.float32(0.5))], ulps=ELEMENTWISE
    )


@pytest.mark.acceptance
@pytest.mark.parametrize(("dtype_name", "schedule"), dtypes.trajectory_cases())
def test_averaged_copy_over_a_training_run(dtype_name: Any, schedule: Any) -> None:
    """Guide 004 lines 9-12 and 55 as a loop: three momentum-SGD steps (lr
    constant or scheduled), the averaged copy updated with step size 0.25
    after each accepted step, kept apart from the online params. Online and
    averaged trajectories follow the float64 references; the online params
    never take the averaged values (guide 004 line 45)."""
    with dtypes.precision(dtype_name) as dtype:
        lr = optax.linear_schedule(0.1, 0.02, transition_steps=2) if schedule else 0.1
        ref_lr = references.linear_schedule(0.1, 0.02, 2) if schedule else 0.1
        params, grads = seeded_layer(steps=3, seed=41)
        p0, gs = to_jax(params, dtype), [to_jax(g, dtype) for g in grads]
        steps = trajectories.run(optax.sgd(lr, momentum=0.9), p0, gs)
        averaged, avg = [], p0
        for s in steps:
            avg = optax.incremental_update(s.params, avg, 0.25)
            averaged.append(avg)
        online_ref = references.sgd_trajectory(leaves64(p0), [leaves64(g) for g in gs], ref_lr, momentum=0.9)
        trajectories.assert_follows_in(
            dtype_name, schedule, [s.params for s in steps], online_ref, initial=p0, what="online"
        )
        trajectories.assert_follows_in(
            dtype_name,
            schedule,
            averaged,
            references.polyak_trajectory(online_ref, leaves64(p0), 0.25),
            initial=p0,
            per_step=2 * ELEMENTWISE,
            what="averaged",
        )
        assert_dtype(averaged, dtype, "averaged copies")
        assert not np.allclose(leaves64(steps[-1].params)[1], leaves64(averaged[-1])[1])


@pytest.mark.negative
def test_edge_inputs_none_empty_zero_size_zeros() -> None:
    """Regression protocol edges, pinned to the baseline: a None leaf stays
    None; an empty PyTree gives an empty one; zero-size leaves pass; zeros
    average to zeros."""
    out = optax.incremental_update({"w": jnp.ones(2), "b": None}, {"w": jnp.zeros(2), "b": None}, 0.25)
    assert out["b"] is None
    assert_close(out["w"], [0.25, 0.25], dtype=jnp.float32, ulps=ELEMENTWISE, what="w")
    assert optax.incremental_update({}, {}, 0.25) == {}
    assert optax.incremental_update({"w": jnp.ones((0, 3))}, {"w": jnp.ones((0, 3))}, 0.25)["w"].shape == (0, 3)
    assert_close(
        optax.incremental_update({"w": jnp.zeros(2)}, {"w": jnp.zeros(2)}, 0.25)["w"],
        [0.0, 0.0],
        dtype=jnp.float32,
        ulps=EXACT,
        what="zeros",
    )


@pytest.mark.negative
def test_non_finite_values_propagate_even_with_step_size_zero() -> None:
    """No guard at the baseline: NaN in the online params reaches the average;
    an inf online value poisons the average even at step size 0 (0 * inf is
    NaN), so a zero step size does not protect the averaged copy."""
    out = optax.incremental_update({"w": jnp.array([jnp.nan, 1.0])}, {"w": jnp.zeros(2)}, 0.25)
    assert np.isnan(float(out["w"][0]))
    out = optax.incremental_update({"w": jnp.array([jnp.inf, 1.0])}, {"w": jnp.array([2.0, 2.0])}, 0.0)
    assert np.isnan(float(out["w"][0])) and float(out["w"][1]) == 2.0
