"""Contracts of ``optax.chain`` (a neighbour of the guides' APIs).

Guide: the referenced guide "weight decay without bias" (summary in
001_3de679c23eb4e8d7.txt lines 67-68): weight decay is chained before SGD.
Source read: optax 0.2.6 ``optax/transforms/_combining.py`` (``chain``: the
state is the tuple of the inner states, in order; ``update`` feeds each
transformation's updates to the next).

Inputs: transformations in order. Output: a ``GradientTransformation`` whose
state is a tuple of one inner state per transformation.
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

pytestmark = pytest.mark.contract(api="optax.chain", guide=guides.WEIGHT_DECAY_MASK)


@pytest.mark.golden
def test_order_matters_decay_then_sgd_vs_sgd_then_decay() -> None:
    """p = 2, g = 1, wd = 0.1, lr = 0.5: decay then SGD gives
    -0.5 * (1 + 0.1 * 2) = -0.6; SGD then decay gives -0.5 * 1 + 0.1 * 2 = -0.3."""
    p, g = {"w": jnp.array([2.0])}, {"w": jnp.array([1.0])}
    first = optax.chain(optax.add_decayed_weights(0.1), optax.sgd(0.5))
    second = optax.chain(optax.sgd(0.5), optax.add_decayed_weights(0.1))
    assert_close(
        first.update(g, first.init(p), p)[0]["w"], [-0.6], dtype=jnp.float32, ulps=ELEMENTWISE, what="decay->sgd"
    )
    assert_close(
        second.update(g, second.init(p), p)[0]["w"], [-0.3], dtype=jnp.float32, ulps=ELEMENTWISE, what="sgd->decay"
    )


@pytest.mark.golden
def test_state_is_a_tuple_of_inner_states_in_order() -> None:
    """``chain(clip_by_global_norm, sgd(momentum))``: a 2-tuple; the second
    holds the momentum trace."""
    p = {"w": jnp.ones(2)}
    state = optax.chain(optax.clip_by_global_norm(1.0), optax.sgd(0.1, momentum=0.9)).init(p)
    assert isinstance(state, tuple) and len(state) == 2
    assert jax.tree.leaves(state[0]) == [] and jax.tree.leaves(state[1])[0].shape == (2,)


@pytest.mark.negative
@pytest.mark.known_defect("chain-empty-unpack-error")
def test_empty_chain_raises_a_bare_unpack_error() -> None:
    """``optax.chain()`` with nothing in it fails at ``init`` with a bare
    ValueError from tuple unpacking."""
    with pytest.raises(ValueError, match="not enough values to unpack"):
        optax.chain().init({"w": jnp.ones(2)})


@pytest.mark.negative
def test_gradients_of_another_structure_pass_a_stateless_chain() -> None:
    """Guide 001 line 49: a stateless chain (clip, SGD) accepts gradients of
    another structure without error (the mistake surfaces in apply_updates)."""
    p = {"w": jnp.ones(2)}
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.sgd(0.1))
    assert list(tx.update({"x": jnp.ones(2)}, tx.init(p), p)[0]) == ["x"]


@pytest.mark.property
@given(pair=strategies.pytree_pairs(), max_norm=st.floats(1e-2, 2e3), wd=st.floats(0.0, 0.5))
def test_chain_feeds_each_transformation_the_previous_ones_updates(pair: Any, max_norm: Any, wd: Any) -> None:
    """``chain(clip_by_global_norm(C), add_decayed_weights(wd), sgd(0.1))`` on
    generated PyTrees equals ``-0.1 * (clip(g) + wd * p)`` (float64
    references composed in the chain's order)."""
    params, grads = to_jax(pair[0]), to_jax(pair[1])
    tx = optax.chain(optax.clip_by_global_norm(max_norm), optax.add_decayed_weights(wd), optax.sgd(0.1))
    updates, _ = jax.jit(tx.update)(grads, tx.init(params), params)
    clipped = references.clip_by_global_norm(leaves64(grads), max_norm)
    want = references.sgd_updates(
        references.masked_decayed_updates(clipped, leaves64(params), wd, [True] * len(clipped)), 0.1
    )
    n = sum(x.size for x in leaves64(grads))
    for got, e, c, p in zip(jax.tree.leaves(updates), want, clipped, leaves64(params), strict=True):
        scale = 0.1 * (float(np.max(np.abs(c))) + wd * float(np.max(np.abs(p))))
        assert_close(got, e, dtype=jnp.float32, ulps=tolerances.reduction(n), scale=scale, what="chained update")


@pytest.mark.acceptance
@pytest.mark.parametrize(("dtype_name", "schedule"), dtypes.trajectory_cases())
def test_trajectory_of_decay_then_nesterov_sgd(dtype_name: Any, schedule: Any) -> None:
    """Three steps of ``chain(add_decayed_weights(0.01), sgd(lr, momentum=0.9,
    nesterov=True))`` in every dtype follow the float64 reference (decoupled
    decay inside the Nesterov trace)."""
    with dtypes.precision(dtype_name) as dtype:
        lr = optax.linear_schedule(0.1, 0.02, transition_steps=2) if schedule else 0.1
        ref_lr = references.linear_schedule(0.1, 0.02, 2) if schedule else 0.1
        params, grads = seeded_layer(steps=3, seed=13)
        p0, gs = to_jax(params, dtype), [to_jax(g, dtype) for g in grads]
        tx = optax.chain(optax.add_decayed_weights(0.01), optax.sgd(lr, momentum=0.9, nesterov=True))
        steps = trajectories.run(tx, p0, gs)
        want = references.sgd_trajectory(
            leaves64(p0), [leaves64(g) for g in gs], ref_lr, momentum=0.9, nesterov=True, weight_decay=0.01
        )
        trajectories.assert_follows_in(
            dtype_name, schedule, [s.params for s in steps], want, initial=p0, per_step=2 * ELEMENTWISE
        )
        for k, s in enumerate(steps, 1):
            assert_dtype({"params": s.params, "updates": s.updates}, dtype, f"step {k}")


@pytest.mark.snapshot
@pytest.mark.parametrize("dtype_name", ["float32", "bfloat16"])
def test_state_snapshot(data_regression: Any, dtype_name: Any) -> None:
    """Baseline snapshot (drift, not correctness): the state of
    ``chain(clip_by_global_norm(1), add_decayed_weights(0.01), sgd(0.1,
    momentum=0.9, nesterov=True))`` after init and two steps. Recorded from
    optax 0.2.6 by ``./noxw -s update-snapshots``."""
    params, grads = seeded_layer(steps=2, seed=13)
    dtype = jnp.dtype(dtype_name)
    tx = optax.chain(
        optax.clip_by_global_norm(1.0), optax.add_decayed_weights(0.01), optax.sgd(0.1, momentum=0.9, nesterov=True)
    )
    p = to_jax(params, dtype)
    data_regression.check(trajectories.state_signatures(tx, p, [to_jax(g, dtype) for g in grads]))


@pytest.mark.acceptance
def test_jit_matches_eager_and_does_not_recompile() -> None:
    """Three jitted steps equal three eager ones; steps 2 and 3 compile nothing."""
    params, grads = seeded_layer(steps=3, seed=13)
    p, gs = to_jax(params), [to_jax(g) for g in grads]
    tx = optax.chain(optax.add_decayed_weights(0.01), optax.sgd(0.1, momentum=0.9))

    def one_step(params: Any, g: Any, state: Any) -> Any:
        updates, state = tx.update(g, state, params)
        return optax.apply_updates(params, updates), state

    calls = [(p, gs[0], tx.init(p))] + [lambda previous, g=g: (previous[0], g, previous[1]) for g in gs[1:]]
    jit_parity.assert_jit_matches_eager(
        one_step, calls, ulps=tolerances.accumulated(3), compiled_first=True, compare=lambda result: result[0]
    )


@pytest.mark.negative
def test_edge_inputs_none_empty_zero_size_and_nan() -> None:
    """Regression protocol edges, pinned to the baseline, for
    ``chain(clip_by_global_norm(1), sgd(0.1, momentum=0.9))``: a None leaf
    stays None in updates and state; an empty PyTree gives empty updates; a
    zero-size leaf passes; a NaN anywhere makes every update NaN (the global
    norm is NaN)."""
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.sgd(0.1, momentum=0.9))
    with_none = {"w": jnp.ones(2), "b": None}
    updates, state = tx.update(with_none, tx.init(with_none), with_none)
    assert updates["b"] is None and state[1][0].trace["b"] is None
    assert tx.update({}, tx.init({}), {})[0] == {}
    zero = {"w": jnp.ones((0, 3)), "b": jnp.array([3.0, 4.0])}
    updates, _ = tx.update(zero, tx.init(zero), zero)
    assert updates["w"].shape == (0, 3)
    assert_close(updates["b"], [-0.06, -0.08], dtype=jnp.float32, ulps=tolerances.reduction(2), what="b")
    nan = {"w": jnp.array([jnp.nan, 1.0]), "b": jnp.ones(2)}
    updates, _ = tx.update(nan, tx.init(nan), nan)
    assert all(np.isnan(np.asarray(x)).all() for x in jax.tree.leaves(updates))
