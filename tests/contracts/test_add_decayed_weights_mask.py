"""Contracts of ``optax.add_decayed_weights`` with a ``mask`` (weight decay
without the bias).

Guide: the referenced guide "weight decay without bias", known from its
summary in 001_3de679c23eb4e8d7.txt lines 67-68: "the mask of
add_decayed_weights applies decay to the kernel and leaves the bias unchanged".
Source read: optax 0.2.6 ``optax/transforms/_adding.py``
(``add_decayed_weights``: ``g + s * p``, wrapped in ``optax.masked`` when a
mask is given; raises ``ValueError(NO_PARAMS_MSG)`` without params) and
``optax/transforms/_masking.py`` (``masked``: the mask is a PyTree prefix of
the params, or a callable returning one).

Inputs: updates and params of one structure, ``weight_decay`` a float, ``mask``
a PyTree of bools (or a callable). Output: updates of the same structure.
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
from optax_gate.kit.tolerances import ELEMENTWISE, EXACT, assert_close
from optax_gate.kit.trees import assert_dtype, leaves64, seeded_layer, to_jax

pytestmark = pytest.mark.contract(api="optax.add_decayed_weights", guide=guides.WEIGHT_DECAY_MASK)

WD = 0.1
MASK = {"kernel": True, "bias": False}


def layer() -> Any:
    """Hand-made layer: kernel 2x2, bias (2,), gradients 0.5 everywhere."""
    params = {"kernel": jnp.array([[1.0, 2.0], [3.0, 4.0]]), "bias": jnp.array([1.0, -1.0])}
    grads = {"kernel": jnp.full((2, 2), 0.5), "bias": jnp.array([0.5, -0.5])}
    return params, grads


@pytest.mark.golden
@pytest.mark.parametrize("mask", [MASK, lambda p: jax.tree.map(lambda x: x.ndim > 1, p)], ids=["tree", "callable"])
def test_kernel_decayed_bias_unchanged(mask: Any) -> None:
    """Summary 001:67-68. kernel: 0.5 + 0.1 * [[1, 2], [3, 4]] = [[0.6, 0.7],
    [0.8, 0.9]]; bias: the gradient, bit for bit."""
    params, grads = layer()
    tx = optax.add_decayed_weights(WD, mask=mask)
    updates, _ = tx.update(grads, tx.init(params), params)
    assert_close(updates["kernel"], [[0.6, 0.7], [0.8, 0.9]], dtype=jnp.float32, ulps=ELEMENTWISE, what="kernel")
    assert_close(updates["bias"], [0.5, -0.5], dtype=jnp.float32, ulps=EXACT, what="bias")


@pytest.mark.golden
def test_in_a_chain_with_sgd_the_bias_moves_by_the_gradient_only() -> None:
    """One training step ``chain(add_decayed_weights(0.1, mask), sgd(0.1))``:
    kernel = p - 0.1 * (0.5 + 0.1 p); bias = p - 0.1 * g = [0.95, -0.95]."""
    params, grads = layer()
    tx = optax.chain(optax.add_decayed_weights(WD, mask=MASK), optax.sgd(0.1))
    updates, _ = tx.update(grads, tx.init(params), params)
    new = optax.apply_updates(params, updates)
    assert_close(new["kernel"], [[0.94, 1.93], [2.92, 3.91]], dtype=jnp.float32, ulps=ELEMENTWISE, what="kernel")
    assert_close(new["bias"], [0.95, -0.95], dtype=jnp.float32, ulps=ELEMENTWISE, what="bias")


@pytest.mark.negative
@pytest.mark.parametrize(
    "mask", [{"kernel": True}, {"kernel": True, "bias": False, "extra": True}], ids=["missing-leaf", "extra-leaf"]
)
def test_mask_of_another_structure_raises_value_error_at_init(mask: Any) -> None:
    """Guide 000 line 12 (negative test for an incompatible mask): a mask that
    is not a prefix of the params fails at ``init`` with ValueError."""
    params, _ = layer()
    with pytest.raises(ValueError, match=pinned.PYTREE_STRUCTURE):
        optax.add_decayed_weights(WD, mask=mask).init(params)


@pytest.mark.negative
def test_update_without_params_raises_value_error() -> None:
    """Weight decay reads the params: ``update(g, state)`` without them raises."""
    params, grads = layer()
    tx = optax.add_decayed_weights(WD, mask=MASK)
    with pytest.raises(ValueError, match=pinned.NO_PARAMS):
        tx.update(grads, tx.init(params))


@pytest.mark.property
@given(pair=strategies.pytree_pairs(), wd=st.floats(0.0, 1.0), data=st.data())
def test_matches_float64_reference_with_any_leaf_mask(pair: Any, wd: Any, data: Any) -> None:
    """``g + wd * p`` where the mask is True, ``g`` bit for bit where False
    (``references.masked_decayed_updates``), for a random boolean per leaf."""
    params, grads = to_jax(pair[0]), to_jax(pair[1])
    leaves, treedef = jax.tree.flatten(params)
    flags = data.draw(st.lists(st.booleans(), min_size=len(leaves), max_size=len(leaves)))
    tx = optax.add_decayed_weights(wd, mask=jax.tree.unflatten(treedef, flags))
    updates, _ = tx.update(grads, tx.init(params), params)
    want = references.masked_decayed_updates(leaves64(grads), leaves64(params), wd, flags)
    for got, exp, flag, p, g in zip(
        jax.tree.leaves(updates), want, flags, leaves64(params), leaves64(grads), strict=True
    ):
        scale = max(float(np.max(np.abs(g))), wd * float(np.max(np.abs(p))))
        assert_close(got, exp, dtype=jnp.float32, ulps=ELEMENTWISE if flag else EXACT, scale=scale, what=f"mask={flag}")


@pytest.mark.acceptance
def test_result_shapes_dtypes_and_finiteness(dtype: Any) -> None:
    """Guides' acceptance criteria 2, 3, 5: updates keep shapes and dtypes,
    are finite and follow the reference; asymmetric kernel 3x5x2; every dtype
    (float64 under x64)."""
    rng = np.random.default_rng(3)
    params = to_jax({"kernel": rng.normal(size=(3, 5, 2)), "bias": rng.normal(size=(2,))}, dtype)
    grads = to_jax({"kernel": rng.normal(size=(3, 5, 2)), "bias": rng.normal(size=(2,))}, dtype)
    tx = optax.add_decayed_weights(WD, mask=MASK)
    updates, _ = tx.update(grads, tx.init(params), params)
    for name in params:
        assert updates[name].shape == params[name].shape and updates[name].dtype == dtype, name
        assert bool(jnp.all(jnp.isfinite(updates[name]))), name
    want = references.masked_decayed_updates(leaves64(grads), leaves64(params), WD, [False, True])
    for got, exp, p, g in zip(jax.tree.leaves(updates), want, leaves64(params), leaves64(grads), strict=True):
        scale = max(float(np.max(np.abs(g))), WD * float(np.max(np.abs(p))))
        assert_close(got, exp, dtype=dtype, ulps=ELEMENTWISE, scale=scale, what="updates")


@pytest.mark.acceptance
def test_jit_matches_eager_and_does_not_recompile() -> None:
    """The jitted masked update equals the eager one; a second call with new
    values compiles nothing."""
    params, grads = layer()
    tx = optax.add_decayed_weights(WD, mask=MASK)
    state = tx.init(params)
    grads2, params2 = jax.tree.map(lambda x: x + 1, grads), jax.tree.map(lambda x: x * 3, params)
    jit_parity.assert_jit_matches_eager(
        tx.update, [(grads, state, params), (grads2, state, params2)], ulps=ELEMENTWISE, compare=updates_only
    )


@pytest.mark.acceptance
@pytest.mark.parametrize(("dtype_name", "schedule"), dtypes.trajectory_cases())
def test_trajectory_decay_kernel_only_with_momentum_sgd(dtype_name: Any, schedule: Any) -> None:
    """Three steps of ``chain(add_decayed_weights(0.05, mask), sgd(lr,
    momentum=0.9))`` (lr constant or scheduled) in every dtype follow the
    float64 reference in which only the kernel is decayed."""
    with dtypes.precision(dtype_name) as dtype:
        lr = optax.linear_schedule(0.1, 0.02, transition_steps=2) if schedule else 0.1
        ref_lr = references.linear_schedule(0.1, 0.02, 2) if schedule else 0.1
        params, grads = seeded_layer(steps=3, seed=51)
        p0, gs = to_jax(params, dtype), [to_jax(g, dtype) for g in grads]
        tx = optax.chain(optax.add_decayed_weights(0.05, mask=MASK), optax.sgd(lr, momentum=0.9))
        steps = trajectories.run(tx, p0, gs)
        want = references.sgd_trajectory(
            leaves64(p0), [leaves64(g) for g in gs], ref_lr, momentum=0.9, weight_decay=0.05, decay_mask=[False, True]
        )
        trajectories.assert_follows_in(
            dtype_name, schedule, [s.params for s in steps], want, initial=p0, per_step=2 * ELEMENTWISE
        )
        for k, s in enumerate(steps, 1):
            assert_dtype({"params": s.params, "updates": s.updates}, dtype, f"step {k}")


@pytest.mark.negative
@pytest.mark.known_defect("decay-schedule-count-stuck")
@pytest.mark.configuration(weight_decay="a schedule")
def test_scheduled_weight_decay_stays_at_its_first_value() -> None:
    """A weight decay scheduled from 0.1 to 0 over 2 steps should decay the
    kernel by 0.1, 0.05, 0 on steps 1-3; at the baseline its count never
    advances (it stays 0 in the state) and every step uses 0.1."""
    params, grads = layer()
    tx = optax.add_decayed_weights(optax.linear_schedule(0.1, 0.0, transition_steps=2), mask=MASK)
    state = tx.init(params)
    for step in range(1, 4):
        updates, state = tx.update(grads, state, params)
        assert_close(
            updates["kernel"],
            [[0.6, 0.7], [0.8, 0.9]],
            dtype=jnp.float32,
            ulps=ELEMENTWISE,
            what=f"kernel at step {step}",
        )
        assert int(state.inner_state.count) == 0


@pytest.mark.negative
def test_edge_inputs_none_empty_zero_size_nan() -> None:
    """Regression protocol edges, pinned to the baseline: a None leaf stays
    None; an empty PyTree with an empty mask gives empty updates; a zero-size
    kernel passes; a NaN param poisons its decayed leaf only, a NaN in the
    masked-out bias's gradient comes back as is."""
    tx = optax.add_decayed_weights(WD, mask={"kernel": True, "bias": False})
    with_none = {"kernel": jnp.ones(2), "bias": None}
    assert tx.update(with_none, tx.init(with_none), with_none)[0]["bias"] is None
    empty = optax.add_decayed_weights(WD, mask={})
    assert empty.update({}, empty.init({}), {})[0] == {}
    zero = {"kernel": jnp.ones((0, 3)), "bias": jnp.ones(2)}
    assert tx.update(zero, tx.init(zero), zero)[0]["kernel"].shape == (0, 3)
    params = {"kernel": jnp.array([jnp.nan, 1.0]), "bias": jnp.ones(2)}
    grads = {"kernel": jnp.zeros(2), "bias": jnp.array([jnp.nan, 0.5])}
    out, _ = tx.update(grads, tx.init(params), params)
    assert np.isnan(float(out["kernel"][0])) and float(out["kernel"][1]) == np.float32(0.1)
    assert np.isnan(float(out["bias"][0])) and float(out["bias"][1]) == 0.5


@pytest.mark.snapshot
@pytest.mark.parametrize(
    "schedule",
    [
        pytest.param(False, id="constant"),
        pytest.param(True, id="scheduled", marks=pytest.mark.configuration(weight_decay="a schedule")),
    ],
)
def test_state_snapshot(data_regression: Any, schedule: Any) -> None:
    """Baseline snapshot (drift, not correctness): the state of masked weight
    decay chained with SGD, with a constant and a scheduled weight decay
    (whose state holds a step counter), after ``init`` and two steps.
    Recorded from optax 0.2.6 by ``./noxw -s update-snapshots``."""
    wd = optax.linear_schedule(0.1, 0.0, transition_steps=4) if schedule else WD
    tx = optax.chain(optax.add_decayed_weights(wd, mask=MASK), optax.sgd(0.1))
    params, grads = layer()
    data_regression.check(trajectories.state_signatures(tx, params, [grads, grads]))
