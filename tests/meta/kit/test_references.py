"""The float64 references reproduce the guides' numbers by themselves (so a
contract that agrees with both is checked twice, independently)."""

import numpy as np

from optax_gate.kit.references import core as references


def test_clip_reference_gives_guide_000_numbers() -> None:
    sums, count = references.per_example_global_norm_clip([np.array([[3.0, 4.0], [0.6, 0.8]])], 1.0)
    np.testing.assert_allclose(sums[0], [1.2, 1.6], rtol=1e-15)
    assert count == 1


def test_clip_reference_zero_norm_and_zero_threshold() -> None:
    sums, count = references.per_example_global_norm_clip([np.zeros((2, 3))], 0.0)
    np.testing.assert_array_equal(sums[0], np.zeros(3))
    assert count == 0


def test_sgd_reference_gives_guide_001_numbers_and_momentum() -> None:
    np.testing.assert_allclose(references.sgd_updates([np.array([0.5, -0.5])], 0.1)[0], [-0.05, 0.05], rtol=1e-15)
    traj = references.sgd_trajectory([np.array([1.0])], [[np.array([1.0])], [np.array([1.0])]], 0.1, momentum=0.9)
    np.testing.assert_allclose([t[0][0] for t in traj], [0.9, 0.9 - 0.19], rtol=1e-15)
    nest = references.sgd_trajectory([np.array([1.0])], [[np.array([1.0])]], 0.1, momentum=0.9, nesterov=True)
    np.testing.assert_allclose(nest[0][0], [1.0 - 0.1 * 1.9], rtol=1e-15)


def test_polyak_reference_gives_guide_004_number() -> None:
    np.testing.assert_allclose(references.incremental_update([np.array([4.0])], [np.array([0.0])], 0.25)[0], [1.0])


def test_masked_decay_and_multi_steps_references() -> None:
    out = references.masked_decayed_updates(
        [np.ones(2), np.ones(2)], [np.full(2, 2.0), np.full(2, 2.0)], 0.1, [True, False]
    )
    np.testing.assert_allclose(out[0], [1.2, 1.2]) and np.testing.assert_array_equal(out[1], [1.0, 1.0])
    ups = references.multi_steps_sgd_updates([[np.array([1.0, 2.0])], [np.array([3.0, 4.0])]], 2, 0.1)
    np.testing.assert_array_equal(ups[0][0], [0.0, 0.0])
    np.testing.assert_allclose(ups[1][0], [-0.2, -0.3])


def test_optimizer_references_give_the_hand_computed_golden_values() -> None:
    """The numbers the optimizer contracts' golden tests derive by hand."""
    from optax_gate.kit.references import optimizers as ro

    _, (u1, u2) = ro.adam_trajectory(
        [np.zeros(2)], [[np.array([5.0, -5.0])], [np.array([1.0, -1.0])]], 0.1, b1=0.5, b2=0.5, eps=0.0
    )
    np.testing.assert_allclose(np.concatenate([u1[0], u2[0]]), [-0.1, 0.1, -7 / 90, 7 / 90], rtol=1e-14)
    _, (n1,) = ro.adam_trajectory([np.zeros(1)], [[np.array([5.0])]], 0.1, b1=0.5, b2=0.5, eps=0.0, nesterov=True)
    np.testing.assert_allclose(n1[0], [-2 / 15], rtol=1e-14)
    _, (w1,) = ro.adam_trajectory(
        [np.array([2.0])], [[np.array([5.0])]], 0.1, b1=0.5, b2=0.5, eps=0.0, weight_decay=0.5
    )
    np.testing.assert_allclose(w1[0], [-0.2], rtol=1e-14)
    _, (l1, l2) = ro.lion_trajectory(
        [np.zeros(3)], [[np.array([2.0, -3.0, 0.0])], [np.array([-1.0, 1.0, 0.0])]], 0.1, weight_decay=0.0
    )
    np.testing.assert_allclose(np.concatenate([l1[0], l2[0]]), [-0.1, 0.1, 0.0, 0.1, -0.1, 0.0], rtol=1e-14)
    _, (r1,) = ro.rmsprop_trajectory([np.zeros(1)], [[np.array([2.0])]], 0.1, decay=0.5, eps=0.0, centered=True)
    np.testing.assert_allclose(r1[0], [-0.2], rtol=1e-14)
    _, (a1,) = ro.adafactor_trajectory([np.ones((2, 2))], [[np.array([[2.0, 0.0], [0.0, 2.0]])]], 0.1, [True])
    np.testing.assert_allclose(a1[0], -0.1 * np.sqrt(2.0) * np.eye(2), rtol=1e-14, atol=1e-300)
