"""Contracts of ``optax.clip_by_global_norm`` (a neighbour of the guides' APIs).

Guide: 000_1767c3f5f037268a.txt line 16 ("do not mix the ways of clipping:
similar names have different contracts"): ``clip_by_global_norm`` scales the
*whole* update once by its global norm; ``per_example_global_norm_clip`` clips
each example. Source read: optax 0.2.6 ``optax/transforms/_clipping.py``
(``clip_by_global_norm``: ``trigger = g_norm < max_norm``; updates kept, or
multiplied by ``max_norm / g_norm``; stateless).

Input: updates PyTree of any structure; output: same structure, shapes, dtypes.
"""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hypothesis import given
from hypothesis import strategies as st

from optax_gate.kit import dtypes, guides, jit_parity, strategies, tolerances, trajectories
from optax_gate.kit.references import core as references
from optax_gate.kit.tolerances import ELEMENTWISE, assert_close
from optax_gate.kit.trees import assert_dtype, leaves64, seeded_layer, to_jax

pytestmark = pytest.mark.contract(api="optax.clip_by_global_norm", guide=guides.PER_EXAMPLE_CLIP)


def clip(updates: Any, max_norm: Any = 1.0) -> Any:
    tx = optax.clip_by_global_norm(max_norm)
    return tx.update(updates, tx.init(updates))[0]


@pytest.mark.golden
@pytest.mark.parametrize(
    ("updates", "expected"),
    [
        ({"a": [3.0, 4.0]}, {"a": [0.6, 0.8]}),
        ({"a": [0.3, 0.4]}, {"a": [0.3, 0.4]}),
        ({"a": [3.0], "b": [4.0]}, {"a": [0.6], "b": [0.8]}),
    ],
    ids=["norm5-scaled", "norm0.5-kept", "norm-across-leaves"],
)
def test_scales_the_whole_update_to_the_threshold(updates: Any, expected: Any) -> None:
    """||[3, 4]|| = 5 -> [0.6, 0.8]; a norm under 1 is kept; the norm is global
    over all leaves ({a: 3, b: 4} -> {a: 0.6, b: 0.8})."""
    got = clip(to_jax(updates))
    for key in expected:
        assert_close(got[key], expected[key], dtype=jnp.float32, ulps=ELEMENTWISE, what=key)


@pytest.mark.negative
def test_a_batch_is_clipped_as_one_vector_not_per_example() -> None:
    """Guide 000 line 16: the guide's batch [[3, 4], [0.6, 0.8]] is clipped as
    one vector of norm sqrt(26): [[3, 4], [0.6, 0.8]] / sqrt(26), not to
    per-example norms [[0.6, 0.8], [0.6, 0.8]]."""
    got = clip({"g": jnp.array([[3.0, 4.0], [0.6, 0.8]])})["g"]
    assert_close(
        got,
        np.array([[3.0, 4.0], [0.6, 0.8]]) / np.sqrt(26.0),
        dtype=jnp.float32,
        ulps=tolerances.reduction(4),
        what="clipped batch",
    )


@pytest.mark.property
@given(tree=strategies.pytrees(), max_norm=st.floats(1e-2, 2e3))
def test_matches_float64_reference(tree: Any, max_norm: Any) -> None:
    """``g * min(1, C / ||g||)`` (``references.clip_by_global_norm``) on
    generated PyTrees; the result's global norm never exceeds C."""
    updates = to_jax(tree)
    got = clip(updates, max_norm)
    n = sum(x.size for x in leaves64(updates))
    want = references.clip_by_global_norm(leaves64(updates), max_norm)
    for a, e in zip(jax.tree.leaves(got), want, strict=True):
        assert_close(a, e, dtype=jnp.float32, ulps=tolerances.reduction(n), what="clipped")
    norm = float(np.sqrt(sum(np.sum(x**2) for x in leaves64(got))))
    assert norm <= max_norm * (1 + tolerances.reduction(n) * tolerances.eps("float32"))


@pytest.mark.acceptance
@pytest.mark.parametrize(("dtype_name", "schedule"), dtypes.trajectory_cases())
def test_trajectory_in_a_chain_with_momentum_sgd(dtype_name: Any, schedule: Any) -> None:
    """Three steps of ``chain(clip_by_global_norm(1), sgd(lr, momentum=0.9))``
    in every dtype follow the float64 reference step by step; gradients of
    norm ~4 so that every step clips. Result dtypes are the params' dtype."""
    with dtypes.precision(dtype_name) as dtype:
        _check_trajectory(dtype_name, dtype, schedule)


def _check_trajectory(dtype_name: Any, dtype: Any, schedule: Any) -> None:
    lr = optax.linear_schedule(0.1, 0.02, transition_steps=2) if schedule else 0.1
    ref_lr = references.linear_schedule(0.1, 0.02, 2) if schedule else 0.1
    params, grads = seeded_layer(steps=3, seed=11, scale=2.0)
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.sgd(lr, momentum=0.9))
    steps = trajectories.run(tx, to_jax(params, dtype), [to_jax(g, dtype) for g in grads])
    clipped = [references.clip_by_global_norm(leaves64(to_jax(g, dtype)), 1.0) for g in grads]
    want = references.sgd_trajectory(leaves64(to_jax(params, dtype)), clipped, ref_lr, momentum=0.9)
    trajectories.assert_follows_in(
        dtype_name,
        schedule,
        [s.params for s in steps],
        want,
        initial=to_jax(params, dtype),
        per_step=tolerances.reduction(8),
    )
    for k, s in enumerate(steps, 1):
        assert_dtype({"params": s.params, "updates": s.updates}, dtype, f"step {k}")


@pytest.mark.snapshot
@pytest.mark.parametrize("dtype_name", ["float32", "bfloat16"])
def test_state_snapshot(data_regression: Any, dtype_name: Any) -> None:
    """Baseline snapshot (drift, not correctness): state of
    ``chain(clip_by_global_norm(1), sgd(0.1, momentum=0.9))`` after init and
    two steps. Recorded from optax 0.2.6 by ``./noxw -s update-snapshots``."""
    params, grads = seeded_layer(steps=2, seed=11)
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.sgd(0.1, momentum=0.9))
    p = to_jax(params, jnp.dtype(dtype_name))
    data_regression.check(trajectories.state_signatures(tx, p, [to_jax(g, jnp.dtype(dtype_name)) for g in grads]))


@pytest.mark.acceptance
def test_jit_matches_eager_and_does_not_recompile() -> None:
    """Jitted clipping equals eager; a second call with the same shapes and
    new values compiles nothing."""
    tx = optax.clip_by_global_norm(1.0)
    u1, u2 = {"a": jnp.array([3.0, 4.0])}, {"a": jnp.array([0.3, 0.4])}
    state = tx.init(u1)
    jit_parity.assert_jit_matches_eager(tx.update, [(u1, state), (u2, state)], ulps=ELEMENTWISE)


@pytest.mark.negative
@pytest.mark.parametrize(
    ("updates", "expected"),
    [
        ({"a": [0.0, 0.0]}, {"a": [0.0, 0.0]}),
        ({"a": [[]]}, {"a": [[]]}),
        ({"a": [3.0, 4.0], "b": None}, {"a": [0.6, 0.8], "b": None}),
        ({}, {}),
        ({"a": [float("nan"), 1.0], "b": [1.0]}, {"a": [float("nan")] * 2, "b": [float("nan")]}),
        ({"a": [float("inf"), 1.0], "b": [1.0]}, {"a": [float("nan"), 0.0], "b": [0.0]}),
    ],
    ids=["zeros", "zero-size", "none-leaf", "empty-tree", "nan", "inf"],
)
def test_edge_inputs(updates: Any, expected: Any) -> None:
    """Regression protocol edges, pinned to the baseline: zeros stay zeros (no
    0/0), zero-size and None leaves pass, an empty PyTree gives an empty one;
    a NaN anywhere makes every leaf NaN; an inf leaf becomes NaN where inf and
    0 elsewhere (scaled by 1/inf)."""
    got = clip(jax.tree.map(jnp.asarray, updates, is_leaf=lambda x: isinstance(x, list)))
    assert jax.tree.structure(got) == jax.tree.structure(
        jax.tree.map(jnp.asarray, expected, is_leaf=lambda x: isinstance(x, list))
    )
    for key, want in expected.items():
        if want is None:
            assert got[key] is None
        else:
            np.testing.assert_array_equal(np.asarray(got[key]), np.asarray(want, np.float32), err_msg=key)
