"""The float64 references of the wrappers and the training recipe reproduce
closed-form numbers by themselves."""

import numpy as np
import pytest

from optax_gate.kit.references import optimizers as ro
from optax_gate.kit.references import wrappers as rw


def test_zero_nans_and_clip_references() -> None:
    leaves, found = rw.zero_nans([np.array([np.nan, np.inf, 1.0]), np.array([2.0])])
    np.testing.assert_array_equal(leaves[0], [0.0, np.inf, 1.0])
    assert found == [True, False]
    np.testing.assert_array_equal(rw.clip([np.array([-2.0, 0.3, np.inf])], 0.5)[0], [-0.5, 0.3, 0.5])


def test_apply_if_finite_reference_counts_and_gives_up() -> None:
    steps = rw.apply_if_finite(
        [[np.array([1.0])], [np.array([np.nan])], [np.array([np.inf])], [np.array([2.0])]], 1, lambda g: [-x for x in g]
    )
    assert [s["applied"] for s in steps] == [True, False, True, True]
    assert [(s["notfinite_count"], s["total_notfinite"]) for s in steps] == [(0, 0), (1, 1), (2, 2), (0, 2)]


def test_warmup_cosine_reference_boundaries() -> None:
    s = rw.warmup_cosine_decay(0.0, 1.0, 2, 6, 0.1)
    assert [s(0), s(1), s(2)] == [0.0, 0.5, 1.0]
    assert s(4) == pytest.approx(0.55, rel=1e-15)
    assert s(6) == pytest.approx(0.1, rel=1e-15) and s(100) == pytest.approx(0.1, rel=1e-15)


def test_adam_first_direction_is_the_sign_and_recipe_adds_decay_times_lr() -> None:
    _, (u,) = ro.adam_trajectory(
        [np.zeros(2)], [[np.array([3.0, -4.0])]], 1.0, eps=0.0
    )  # the recipe's one Adam reference
    np.testing.assert_allclose(-u[0], [1.0, -1.0], rtol=1e-15)
    p = rw.adamw_recipe(
        [np.array([1.0, -1.0])], [[np.array([3.0, -4.0])]], 1e-3, weight_decay=0.1, max_norm=1.0, eps=0.0
    )
    np.testing.assert_allclose(p[0][0], [1.0 - 1.1e-3, -1.0 + 1.1e-3], rtol=1e-15)


def test_multi_steps_means_of_complete_cycles() -> None:
    means = rw.multi_steps_means([[np.array([1.0])], [np.array([3.0])], [np.array([5.0])]], 2)
    assert len(means) == 1 and means[0][0][0] == 2.0
