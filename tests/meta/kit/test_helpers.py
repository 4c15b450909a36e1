"""The contracts' own helpers: trajectory comparison, dtype cases, compile counting."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from optax_gate.kit import dtypes, recompilation, trajectories


def test_trajectory_within_budget_passes_and_drift_fails() -> None:
    want = [[np.array([1.0, 2.0])], [np.array([1.5, 2.5])]]
    got = [[np.float32(1.0) * np.array([1.0, 2.0], np.float32)], [np.array([1.5, 2.5], np.float32)]]
    trajectories.assert_follows(got, want, dtype="float32", initial=[np.array([1.0, 2.0])])
    got[1][0] = got[1][0] * (1 + 1e-5)
    with pytest.raises(AssertionError, match="step 2"):
        trajectories.assert_follows(got, want, dtype="float32", initial=[np.array([1.0, 2.0])])


def test_float64_scheduled_case_pins_float32_accuracy_both_ways() -> None:
    want = [[np.array([0.1])]]
    float32_accurate = [[np.array([0.1 * (1 + 2e-8)])]]
    trajectories.assert_follows_in("float64", True, float32_accurate, want, initial=[np.array([0.1])])
    with pytest.raises(AssertionError, match="no longer reproduces"):
        trajectories.assert_follows_in("float64", True, [[np.array([0.1])]], want, initial=[np.array([0.1])])
    with pytest.raises(AssertionError):
        trajectories.assert_follows_in("float64", True, [[np.array([0.2])]], want, initial=[np.array([0.1])])


def test_trajectory_cases_mark_only_float64_scheduled() -> None:
    marked = [c.id for c in dtypes.trajectory_cases() if c.marks]
    assert marked == ["float64-scheduled"] and len(dtypes.trajectory_cases()) == 8


def test_precision_turns_x64_on_for_float64_only() -> None:
    with dtypes.precision("float64"):
        assert jnp.ones(1, jnp.float64).dtype == jnp.float64
    with dtypes.precision("bfloat16") as dt, pytest.warns(UserWarning, match="truncated to dtype float32"):
        assert dt == jnp.bfloat16 and jnp.ones(1, jnp.float64).dtype == jnp.float32


def test_compile_counter_sees_a_new_shape_and_not_a_cached_one() -> None:
    f = jax.jit(lambda x: x * 3)
    a, b, c = jnp.ones(5), jnp.zeros(5), jnp.ones(6)
    with recompilation.counting() as compiled:
        f(a)
        after_first = compiled.count
        f(b)
        assert compiled.count == after_first
        f(c)
    assert compiled.count == after_first + 1
