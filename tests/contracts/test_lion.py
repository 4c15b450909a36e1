"""Contracts of ``optax.lion``.

Source: Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms",
Algorithm 2 (Lion): ``c = b1 m + (1 - b1) g``, update ``-lr (sign(c) + wd p)``,
then ``m = b2 m + (1 - b2) g``; Optax multiplies the decay by the learning rate
(``lion`` docstring). The float64 reference is
``kit.references.optimizers.lion_trajectory``. Source read: optax 0.2.6
``optax/_src/alias.py`` (``lion`` = ``chain(scale_by_lion, add_decayed_weights,
scale_by_learning_rate)``, defaults b1 = 0.9, b2 = 0.99, weight_decay = 1e-3)
and ``optax/_src/transform.py`` (``scale_by_lion``: ``mu`` cast to
``mu_dtype``, an int32 count).

Inputs: gradients and params, PyTrees of one structure; outputs: updates of
the gradients' structure and dtype, state ``(ScaleByLionState(count, mu),
EmptyState, EmptyState)``.

Budget: the sign is exact (the seeded and generated values keep ``c`` away
from 0); the decay and the learning rate with ``apply_updates`` are two
elementwise stages: ``2 * ELEMENTWISE`` a step.
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
from optax_gate.kit.jit_parity import updates_only
from optax_gate.kit.references import core as references
from optax_gate.kit.references import optimizers as ref
from optax_gate.kit.tolerances import ELEMENTWISE, EXACT, assert_close
from optax_gate.kit.trees import assert_dtype, leaves64, seeded_layer, to_jax

pytestmark = pytest.mark.contract(api="optax.lion", guide=guides.paper("Chen et al. 2023, Algorithm 2 (Lion)"))

LR = 0.1
WD = 0.5
PER_STEP = 2 * ELEMENTWISE
LAYER = {"kernel": np.zeros((3, 2)), "bias": np.zeros(2)}


def one_step(tx: Any, params: Any, grads: Any, state: Any = None) -> Any:
    state = tx.init(params) if state is None else state
    return tx.update(grads, state, params)


@pytest.mark.golden
def test_sign_update_and_momentum_interpolation() -> None:
    """wd = 0, g1 = [2, -3, 0]: update -lr * sign(0.1 g1) = [-0.1, 0.1, 0].
    g2 = [-1, 1, 0]: m = 0.01 g1 = [0.02, -0.03, 0]; c = 0.9 m + 0.1 g2 =
    [-0.082, 0.073, 0], update [0.1, -0.1, 0] (with b1, b2 swapped c would be
    [0.188, -0.287, 0] and the update [-0.1, 0.1, 0])."""
    tx = optax.lion(LR, weight_decay=0.0)
    params = {"w": jnp.zeros(3)}
    u1, s = one_step(tx, params, {"w": jnp.array([2.0, -3.0, 0.0])})
    u2, _ = one_step(tx, params, {"w": jnp.array([-1.0, 1.0, 0.0])}, s)
    assert_close(u1["w"], [-0.1, 0.1, 0.0], dtype=jnp.float32, ulps=EXACT + 1, what="step 1")
    assert_close(u2["w"], [0.1, -0.1, 0.0], dtype=jnp.float32, ulps=EXACT + 1, what="step 2")


@pytest.mark.golden
def test_decay_is_scaled_by_the_learning_rate() -> None:
    """wd = 0.5, p = 2, g = 1: -0.1 * (1 + 0.5 * 2) = -0.2; a masked-out leaf
    gets -0.1."""
    tx = optax.lion(LR, weight_decay=WD, mask={"a": True, "b": False})
    params = {"a": jnp.array([2.0]), "b": jnp.array([2.0])}
    u, _ = one_step(tx, params, {"a": jnp.array([1.0]), "b": jnp.array([1.0])})
    assert_close(u["a"], [-0.2], dtype=jnp.float32, ulps=PER_STEP, what="decayed")
    assert_close(u["b"], [-0.1], dtype=jnp.float32, ulps=PER_STEP, what="masked out")


@pytest.mark.property
@given(g=strategies.like(LAYER), p=strategies.like(LAYER), lr=st.floats(1e-4, 1.0), wd=st.floats(0.0, 1.0))
def test_first_step_matches_float64_reference(g: Any, p: Any, lr: Any, wd: Any) -> None:
    """First step on generated values: ``-lr * (sign(g) + wd * p)``
    (``lion_trajectory``); with wd = 0 every element's magnitude is lr or 0."""
    params, grads = to_jax(p), to_jax(g)
    u, _ = one_step(optax.lion(lr, weight_decay=wd), params, grads)
    _, (want,) = ref.lion_trajectory(leaves64(params), [leaves64(grads)], lr, weight_decay=wd)
    for a, e, x in zip(jax.tree.leaves(u), want, leaves64(params), strict=True):
        assert_close(
            a, e, dtype=jnp.float32, ulps=PER_STEP, scale=lr * (1 + wd * float(np.max(np.abs(x)))), what="update"
        )
    u0, _ = one_step(optax.lion(lr, weight_decay=0.0), params, grads)
    for a, x in zip(jax.tree.leaves(u0), leaves64(grads), strict=True):
        assert_close(
            np.abs(np.asarray(a, np.float64)),
            np.where(x != 0, lr, 0.0),
            dtype=jnp.float32,
            ulps=ELEMENTWISE,
            what="|update|",
        )


@pytest.mark.acceptance
@pytest.mark.parametrize(("dtype_name", "schedule"), dtypes.trajectory_cases())
def test_trajectory(dtype_name: Any, schedule: Any) -> None:
    """Three steps of ``lion(lr, weight_decay=0.5)`` with a constant or linearly
    decaying learning rate in every dtype follow the reference; params,
    updates and momentum keep the params' dtype."""
    with dtypes.precision(dtype_name) as dtype:
        lr = optax.linear_schedule(0.1, 0.02, transition_steps=2) if schedule else LR
        ref_lr = references.linear_schedule(0.1, 0.02, 2) if schedule else LR
        params, grads = seeded_layer(steps=3, seed=41)
        p0, gs = to_jax(params, dtype), [to_jax(g, dtype) for g in grads]
        steps = trajectories.run(optax.lion(lr, weight_decay=WD), p0, gs)
        want, _ = ref.lion_trajectory(leaves64(p0), [leaves64(g) for g in gs], ref_lr, weight_decay=WD)
        trajectories.assert_follows_in(
            dtype_name, schedule, [s.params for s in steps], want, initial=p0, per_step=PER_STEP
        )
        for k, s in enumerate(steps, 1):
            assert_dtype(
                {"params": s.params, "updates": s.updates, "state": s.state}, dtype, f"step {k}", ignore_integers=True
            )


@pytest.mark.acceptance
def test_state_structure_mu_dtype_and_zero_gradients() -> None:
    """Init: an int32 count 0 and a zero ``mu`` of the params' shapes and
    dtypes; ``mu_dtype=bfloat16`` keeps ``mu`` bfloat16 after a step. Zero
    gradients leave only the decay ``-lr * wd * p`` in every dtype (sign(0)
    = 0: no NaN in float16)."""
    state, *_ = optax.lion(LR).init({"w": jnp.ones((3, 2))})
    assert state.count.dtype == jnp.int32 and int(state.count) == 0 and state.mu["w"].shape == (3, 2)
    _, (state, *_) = one_step(optax.lion(LR, mu_dtype=jnp.bfloat16), {"w": jnp.ones(2)}, {"w": jnp.ones(2)})
    assert state.mu["w"].dtype == jnp.bfloat16 and int(state.count) == 1
    for dtype in (jnp.float32, jnp.bfloat16, jnp.float16):
        u, _ = one_step(optax.lion(LR, weight_decay=WD), {"w": jnp.full(3, 2.0, dtype)}, {"w": jnp.zeros(3, dtype)})
        assert_close(u["w"], np.full(3, -0.1), dtype=dtype, ulps=PER_STEP, what=jnp.dtype(dtype).name)


@pytest.mark.acceptance
def test_jit_matches_eager_and_does_not_recompile() -> None:
    """Two jitted steps equal two eager ones; the second compiles nothing."""
    params, grads = seeded_layer(steps=2, seed=3)
    p, (g1, g2) = to_jax(params), [to_jax(g) for g in grads]
    tx = optax.lion(LR, weight_decay=WD)
    jit_parity.assert_jit_matches_eager(
        lambda g, s: tx.update(g, s, p),
        [(g1, tx.init(p)), lambda previous: (g2, previous[1])],
        ulps=ELEMENTWISE,
        compare=updates_only,
    )


@pytest.mark.negative
def test_edge_inputs_none_zero_size_one_element() -> None:
    """A None leaf stays None in the updates and ``mu``; a zero-size leaf gives
    an empty update; a one-element leaf p = 2, g = -3 gets -0.1 * (-1 + 1) = 0
    with wd = 0.5; an empty PyTree gives empty updates."""
    tx = optax.lion(LR, weight_decay=WD)
    updates, (state, *_) = one_step(tx, {"w": jnp.ones(2), "b": None}, {"w": jnp.ones(2), "b": None})
    assert updates["b"] is None and state.mu["b"] is None
    assert one_step(tx, {"w": jnp.ones((0, 3))}, {"w": jnp.ones((0, 3))})[0]["w"].shape == (0, 3)
    one, _ = one_step(tx, {"w": jnp.array([2.0])}, {"w": jnp.array([-3.0])})
    assert_close(one["w"], [0.0], dtype=jnp.float32, ulps=PER_STEP, scale=0.1, what="one element")
    assert one_step(tx, {}, {})[0] == {}


@pytest.mark.negative
def test_missing_params_or_wrong_shape_raise() -> None:
    """``update`` without params raises ValueError (the decay needs them); a
    gradient of another shape raises TypeError."""
    params = {"w": jnp.ones(2)}
    tx = optax.lion(LR)
    with pytest.raises(ValueError, match=pinned.NO_PARAMS):
        tx.update(params, tx.init(params))
    with pytest.raises(TypeError, match=pinned.INCOMPATIBLE_SHAPES):
        tx.update({"w": jnp.ones(3)}, tx.init(params), params)


@pytest.mark.snapshot
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16], ids=["float32", "bfloat16"])
def test_state_snapshot(data_regression: Any, dtype: Any) -> None:
    """Baseline snapshot (drift, not correctness): state structure, leaf paths,
    shapes, dtypes and count after ``init`` and two steps. Recorded from
    optax 0.2.6 by ``./noxw -s update-snapshots``."""
    params, grads = seeded_layer(steps=2, seed=3)
    data_regression.check(
        trajectories.state_signatures(optax.lion(LR), to_jax(params, dtype), [to_jax(g, dtype) for g in grads])
    )
