"""Contracts of ``optax.per_example_global_norm_clip``.

Guide: 000_1767c3f5f037268a.txt. Source read: optax 0.2.6
``optax/transforms/_clipping.py`` (``per_example_global_norm_clip`` and
``_check_arrays_have_batch_dim``): the batch check only compares each leaf's
axis 0 with the first leaf's, the multipliers are ``min(C / norm, 1)`` with NaN
mapped to 1, and the count is ``sum(multiplier < 1)``.

Input: a PyTree whose every leaf has the batch on axis 0, shape ``(B, ...)``.
Output: ``(sum, count)``: a PyTree of leaves of shape ``leaf.shape[1:]`` and a
scalar int32 count of clipped *examples*.
"""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from optax_gate.kit import dtypes, guides, jit_parity, strategies, tolerances, trajectories
from optax_gate.kit.references import core as references
from optax_gate.kit.tolerances import ELEMENTWISE, EXACT, assert_close
from optax_gate.kit.trees import assert_dtype, leaves64, seeded_layer, to_jax

pytestmark = pytest.mark.contract(api="optax.per_example_global_norm_clip", guide=guides.PER_EXAMPLE_CLIP)

# Guide 000, line 29: one leaf, two examples with norms 5 and 1.
GUIDE_GRADS = [[3.0, 4.0], [0.6, 0.8]]


@pytest.mark.golden
def test_guide_example_returns_sum_and_count() -> None:
    """Guide 000 lines 12, 31-32, 39: sum [1.2, 1.6], clipped count 1."""
    summed, clipped = optax.per_example_global_norm_clip([jnp.array(GUIDE_GRADS)], l2_norm_clip=1.0)
    assert_close(summed[0], [1.2, 1.6], dtype=jnp.float32, ulps=ELEMENTWISE, what="sum")
    assert int(clipped) == 1


@pytest.mark.golden
def test_guide_example_mean_by_explicit_division() -> None:
    """Guide 000 lines 33-34 and 94: mean = sum / batch size = [0.6, 0.8]."""
    grads = [jnp.array(GUIDE_GRADS)]
    summed, _ = optax.per_example_global_norm_clip(grads, l2_norm_clip=1.0)
    assert_close(summed[0] / grads[0].shape[0], [0.6, 0.8], dtype=jnp.float32, ulps=ELEMENTWISE, what="mean")


@pytest.mark.golden
@pytest.mark.parametrize(
    ("example", "expected", "count"),
    [([3.0, 4.0], [0.6, 0.8], 1), ([0.6, 0.8], [0.6, 0.8], 0)],
    ids=["norm5-scaled-to-unit", "norm1-unchanged"],
)
def test_guide_each_example_alone(example: Any, expected: Any, count: Any) -> None:
    """Guide 000 line 12: [3, 4] is scaled to [0.6, 0.8]; [0.6, 0.8] stays."""
    summed, clipped = optax.per_example_global_norm_clip([jnp.array([example])], l2_norm_clip=1.0)
    assert_close(summed[0], expected, dtype=jnp.float32, ulps=ELEMENTWISE, what="clipped example")
    assert int(clipped) == count


@pytest.mark.negative
def test_returned_tree_is_the_sum_not_the_mean() -> None:
    """Guide 000 line 77: two unclipped equal examples sum to twice one of them."""
    summed, clipped = optax.per_example_global_norm_clip([jnp.array([[0.3, 0.4], [0.3, 0.4]])], l2_norm_clip=1.0)
    assert_close(summed[0], [0.6, 0.8], dtype=jnp.float32, ulps=ELEMENTWISE, what="sum")
    assert int(clipped) == 0


@pytest.mark.negative
def test_count_counts_examples_not_elements() -> None:
    """Guide 000 line 78: one clipped example of 3 elements and another of 2
    leaves count 2 (examples), not 7 (elements) nor 5."""
    grads = {"a": jnp.array([[3.0, 4.0, 12.0], [0.0, 0.1, 0.0]]), "b": jnp.array([[1.0, 1.0], [9.0, 9.0]])}
    _, clipped = optax.per_example_global_norm_clip(grads, l2_norm_clip=1.0)
    assert clipped.shape == () and int(clipped) == 2


@pytest.mark.negative
@pytest.mark.known_defect("clip-1d-gradient-misread")
def test_averaged_gradient_without_batch_axis_is_silently_misread() -> None:
    """Guide 000 line 76 (do not pass an averaged gradient without a batch
    axis). At the baseline nothing detects it: a 1-D averaged gradient
    ``[3, 4]`` is read as a batch of two scalar examples, each clipped to norm
    1, giving sum 2.0 and count 2 instead of the unit vector [0.6, 0.8]."""
    summed, clipped = optax.per_example_global_norm_clip([jnp.array([3.0, 4.0])], l2_norm_clip=1.0)
    assert summed[0].shape == ()
    assert_close(summed[0], 2.0, dtype=jnp.float32, ulps=ELEMENTWISE, what="misread sum")
    assert int(clipped) == 2


@pytest.mark.negative
@pytest.mark.known_defect("clip-scalar-leaf-index-error")
def test_scalar_leaf_without_batch_axis_raises_index_error() -> None:
    """A 0-d (fully averaged, scalar) gradient has no axis 0: the baseline
    raises IndexError from the batch check, not a ValueError naming the
    contract (an unhelpful error type, pinned as it is)."""
    with pytest.raises(IndexError, match="tuple index out of range"):
        optax.per_example_global_norm_clip([jnp.array(3.0)], l2_norm_clip=1.0)


@pytest.mark.negative
def test_inconsistent_batch_sizes_raise_value_error() -> None:
    """Guide 000 line 43: all leaves must share one batch size."""
    with pytest.raises(ValueError, match="batch dimension in the 0th axis"):
        optax.per_example_global_norm_clip([jnp.ones((2, 3)), jnp.ones((3, 3))], l2_norm_clip=1.0)


@pytest.mark.negative
@pytest.mark.known_defect("clip-empty-tree-index-error")
def test_empty_gradient_list_raises_index_error() -> None:
    """No leaf at all: the baseline's batch check indexes the first leaf and
    raises IndexError."""
    with pytest.raises(IndexError, match="list index out of range"):
        optax.per_example_global_norm_clip([], l2_norm_clip=1.0)


def _clip_scale(leaves: Any, clip: Any) -> Any:
    """Per-leaf operand magnitude ``sum_b |factor_b * g_b|`` for the tolerance."""
    norms = references.per_example_global_norm(leaves)
    factor = np.minimum(1.0, clip / np.where(norms > 0, norms, 1.0))
    return [float(np.max(np.tensordot(factor, np.abs(g), axes=1), initial=0.0)) for g in leaves]


@pytest.mark.property
@given(tree=strategies.batched_pytrees(), clip=st.floats(0.0, 2e3))
def test_matches_float64_reference(tree: Any, clip: Any) -> None:
    """Sum and count agree with the float64 reference of Abadi et al. 2016
    (``references.per_example_global_norm_clip``) on PyTrees of 1-6 leaves."""
    grads = to_jax(tree)
    leaves = leaves64(grads)
    norms = references.per_example_global_norm(leaves)
    n_terms = sum(x[0].size for x in leaves) + leaves[0].shape[0]
    # An example whose norm sits within rounding of C may be counted either way.
    assume(np.all(np.abs(norms - clip) > tolerances.reduction(n_terms) * tolerances.eps("float32") * max(clip, 1.0)))
    # Jitted with the threshold traced: one compilation per example, not one per eager op.
    summed, clipped = jax.jit(optax.per_example_global_norm_clip)(grads, jnp.float32(clip))
    want, want_count = references.per_example_global_norm_clip(leaves, float(np.float32(clip)))
    for got, exp, scale in zip(jax.tree.leaves(summed), want, _clip_scale(leaves, clip), strict=True):
        assert_close(got, exp, dtype=jnp.float32, ulps=tolerances.reduction(n_terms), scale=scale, what="clipped sum")
    assert int(clipped) == want_count


@pytest.mark.property
@given(tree=strategies.batched_pytrees(), clip=st.floats(1e-2, 2e3))
def test_each_clipped_example_norm_never_exceeds_threshold(tree: Any, clip: Any) -> None:
    """Guide 000 line 43 (compare per-example norms with the threshold): each
    example, clipped alone (batch of one), has global norm <= C up to rounding."""
    grads = to_jax(tree)
    batch = jax.tree.leaves(grads)[0].shape[0]
    for b in range(batch):
        one = jax.tree.map(lambda g, b=b: g[b : b + 1], grads)
        summed, _ = optax.per_example_global_norm_clip(one, l2_norm_clip=clip)
        n_terms = sum(x.size for x in jax.tree.leaves(summed))
        norm = float(np.sqrt(sum(np.sum(x**2) for x in leaves64(summed))))
        assert norm <= clip * (1 + tolerances.reduction(n_terms) * tolerances.eps("float32")), (b, norm, clip)


@pytest.mark.acceptance
def test_result_shapes_dtypes_and_finiteness(dtype: Any) -> None:
    """Guides' acceptance criteria 2, 3 and 5: each summed leaf has shape
    ``leaf.shape[1:]`` and the input dtype, values are finite and match the
    reference; the count is a scalar int32 (int64 in x64 mode). Asymmetric shapes (3x5x2); every
    dtype (float64 under x64)."""
    rng = np.random.default_rng(0)
    tree = {"kernel": rng.normal(size=(3, 5, 2)), "bias": rng.normal(size=(3, 2))}
    grads = to_jax(tree, dtype)
    summed, clipped = optax.per_example_global_norm_clip(grads, l2_norm_clip=1.0)
    assert jax.tree.structure(summed) == jax.tree.structure(grads)
    for name in tree:
        assert summed[name].shape == tree[name].shape[1:] and summed[name].dtype == dtype, name
        assert bool(jnp.all(jnp.isfinite(summed[name]))), name
    # The count has JAX's default integer dtype: int64 only in x64 mode.
    assert clipped.shape == () and clipped.dtype == (jnp.int64 if dtype == jnp.float64 else jnp.int32)
    want, want_count = references.per_example_global_norm_clip(leaves64(grads), 1.0)
    for got, exp in zip(jax.tree.leaves(summed), want, strict=True):
        assert_close(got, exp, dtype=dtype, ulps=tolerances.reduction(10 + 3), what="clipped sum")
    assert int(clipped) == want_count


@pytest.mark.acceptance
def test_jit_matches_eager_and_does_not_recompile() -> None:
    """The jitted function returns the eager result (values within the
    elementwise budget, same count); a second call with the same shapes and
    new values compiles nothing."""
    grads = [jnp.array(GUIDE_GRADS), jnp.array([[1.0], [2.0]])]
    other = [jnp.array([[0.1, 0.2], [9.0, 9.0]]), jnp.array([[3.0], [0.0]])]
    jit_parity.assert_jit_matches_eager(
        optax.per_example_global_norm_clip, [(grads, 1.0), (other, 1.0)], ulps=ELEMENTWISE, static_argnums=1
    )


@pytest.mark.acceptance
@pytest.mark.parametrize(("dtype_name", "schedule"), dtypes.trajectory_cases())
def test_dp_sgd_trajectory(dtype_name: Any, schedule: Any) -> None:
    """Guide 000 steps 1-4 as a training loop: three steps of DP-SGD (clip each
    of 4 examples to norm 1, sum, divide by the batch size explicitly, apply
    ``sgd(lr)``) in every dtype follow the float64 reference step by step."""
    with dtypes.precision(dtype_name) as dtype:
        lr = optax.linear_schedule(0.5, 0.1, transition_steps=2) if schedule else 0.5
        ref_lr = references.linear_schedule(0.5, 0.1, 2) if schedule else 0.5
        rng = np.random.default_rng(21)
        params, _ = seeded_layer(steps=0, seed=21)
        per_example = [{k: 2.0 * rng.normal(size=(4, *v.shape)) for k, v in params.items()} for _ in range(3)]
        p0 = to_jax(params, dtype)
        means = []
        for g in per_example:
            summed, _ = optax.per_example_global_norm_clip(to_jax(g, dtype), l2_norm_clip=1.0)
            means.append(jax.tree.map(lambda s: s / 4, summed))
        steps = trajectories.run(optax.sgd(lr), p0, means)
        ref_means = [
            [s / 4 for s in references.per_example_global_norm_clip(leaves64(to_jax(g, dtype)), 1.0)[0]]
            for g in per_example
        ]
        want = references.sgd_trajectory(leaves64(p0), ref_means, ref_lr)
        trajectories.assert_follows_in(
            dtype_name, schedule, [s.params for s in steps], want, initial=p0, per_step=tolerances.reduction(12)
        )
        assert_dtype([s.params for s in steps], dtype, "params")


@pytest.mark.negative
@pytest.mark.parametrize(
    ("grads", "sums", "count"),
    [
        ([[[3.0, 4.0]]], [[0.6, 0.8]], 1),
        ([[[0.0, 0.0], [0.0, 0.0]]], [[0.0, 0.0]], 0),
        ([np.zeros((2, 0))], [np.zeros((0,))], 0),
        ([np.zeros((0, 3))], [np.zeros((3,))], 0),
        ([[[float("nan"), 1.0], [3.0, 4.0]]], [[float("nan"), 1.8]], 1),
        ([[[float("inf"), 1.0], [0.6, 0.8]]], [[float("nan"), 0.8]], 1),
    ],
    ids=["one-example", "zeros", "zero-size-feature-axis", "zero-size-batch", "nan-example", "inf-example"],
)
def test_edge_inputs(grads: Any, sums: Any, count: Any) -> None:
    """Regression protocol edges, pinned to the baseline: one example; all
    zeros (no 0/0: unclipped, count 0); a zero-size feature axis or batch gives
    zeros and count 0; an example with a NaN is *not* counted (its multiplier
    NaN is mapped to 1) and poisons its element of the sum; an inf example is
    counted and scaled by 0 (inf * 0 = NaN)."""
    summed, clipped = optax.per_example_global_norm_clip([jnp.asarray(g, jnp.float32) for g in grads], l2_norm_clip=1.0)
    for got, want in zip(summed, sums, strict=True):
        want = np.asarray(want, np.float64)
        assert got.shape == want.shape
        np.testing.assert_array_equal(np.isnan(np.asarray(got)), np.isnan(want))
        finite = ~np.isnan(want)
        assert_close(np.asarray(got)[finite], want[finite], dtype=jnp.float32, ulps=ELEMENTWISE, what="sum")
    assert int(clipped) == count


@pytest.mark.negative
def test_none_leaf_is_kept_and_does_not_count() -> None:
    """A None leaf comes back as None and the other leaves are clipped as if it
    were absent."""
    with_none, _ = optax.per_example_global_norm_clip({"a": jnp.array(GUIDE_GRADS), "b": None}, 1.0)
    alone, _ = optax.per_example_global_norm_clip({"a": jnp.array(GUIDE_GRADS)}, 1.0)
    assert with_none["b"] is None
    assert_close(with_none["a"], np.asarray(alone["a"], np.float64), dtype=jnp.float32, ulps=EXACT, what="a")
