"""Contracts of one SGD step: ``optax.sgd``, ``init``, ``update`` and
``optax.apply_updates``.

Guide: 001_3de679c23eb4e8d7.txt. Source read: optax 0.2.6
``optax/_src/alias.py`` (``sgd`` = ``chain(trace(momentum) if momentum,
scale_by_learning_rate(lr))``), ``optax/_src/transform.py`` (``trace``) and
``optax/_src/update.py`` (``apply_updates`` maps ``p + u`` cast to ``p``'s dtype
over ``params`` and ``updates`` with ``jax.tree.map``, None leaves kept).

Inputs: params and gradients, PyTrees of one structure; learning rate a float.
Outputs: updates of the gradients' structure, a new optimizer state, and new
params of the params' dtype.
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

pytestmark = pytest.mark.contract(api="optax.sgd", guide=guides.SGD_STEP)

LR = 0.1


def guide_params() -> Any:
    """Guide 001 lines 16-17."""
    return {"w": jnp.array([1.0, -1.0])}, {"w": jnp.array([0.5, -0.5])}


def one_step(tx: Any, params: Any, grads: Any, state: Any = None) -> Any:
    state = tx.init(params) if state is None else state
    updates, state = tx.update(grads, state, params)
    return updates, state, optax.apply_updates(params, updates)


@pytest.mark.golden
def test_guide_example_updates_and_new_params() -> None:
    """Guide 001 lines 5, 22-23, 26: updates [-0.05, 0.05], params [0.95, -0.95]."""
    params, grads = guide_params()
    updates, _, new_params = one_step(optax.sgd(learning_rate=LR), params, grads)
    assert_close(updates["w"], [-0.05, 0.05], dtype=jnp.float32, ulps=ELEMENTWISE, what="updates")
    assert_close(new_params["w"], [0.95, -0.95], dtype=jnp.float32, ulps=ELEMENTWISE, what="new params")


@pytest.mark.golden
def test_guide_example_does_not_mutate_params() -> None:
    """Guide 001 line 5: the optimizer never mutates params. NumPy inputs (which
    could be mutated in place) keep their values; new params are new objects."""
    params = {"w": np.array([1.0, -1.0], np.float32)}
    grads = {"w": np.array([0.5, -0.5], np.float32)}
    _, _, new_params = one_step(optax.sgd(learning_rate=LR), params, grads)
    np.testing.assert_array_equal(params["w"], [1.0, -1.0])
    np.testing.assert_array_equal(grads["w"], [0.5, -0.5])
    assert new_params is not params and new_params["w"] is not params["w"]


@pytest.mark.negative
def test_updates_are_deltas_not_new_params() -> None:
    """Guide 001 line 47 (do not take updates for new params): updates are
    ``-lr * g`` whatever the params are; only ``apply_updates`` adds them."""
    _, grads = guide_params()
    for params in ({"w": jnp.array([1.0, -1.0])}, {"w": jnp.array([100.0, 7.0])}):
        updates, _, new_params = one_step(optax.sgd(LR), params, grads)
        assert_close(updates["w"], [-0.05, 0.05], dtype=jnp.float32, ulps=ELEMENTWISE, what="updates")
        assert_close(
            new_params["w"],
            np.asarray(params["w"]) + np.array([-0.05, 0.05]),
            dtype=jnp.float32,
            ulps=ELEMENTWISE,
            what="new params",
        )


@pytest.mark.negative
def test_applying_updates_twice_moves_params_twice() -> None:
    """Guide 001 line 28 (do not apply updates twice): a second
    ``apply_updates`` moves params again, to [0.9, -0.9]; nothing guards it."""
    params, grads = guide_params()
    updates, _, once = one_step(optax.sgd(LR), params, grads)
    twice = optax.apply_updates(once, updates)
    assert_close(twice["w"], [0.9, -0.9], dtype=jnp.float32, ulps=ELEMENTWISE, what="applied twice")


@pytest.mark.negative
def test_forgetting_the_returned_state_loses_momentum() -> None:
    """Guide 001 lines 28 and 48: with momentum 0.9 the second step from the
    returned state is ``-lr * (g2 + 0.9 * g1)``; reusing the initial state
    instead silently gives ``-lr * g2``."""
    params, g1 = guide_params()
    g2 = {"w": jnp.array([0.25, 0.25])}
    tx = optax.sgd(LR, momentum=0.9)
    state0 = tx.init(params)
    _, state1 = tx.update(g1, state0, params)
    kept, _ = tx.update(g2, state1, params)
    forgot, _ = tx.update(g2, state0, params)
    assert_close(
        kept["w"], [-0.1 * (0.25 + 0.45), -0.1 * (0.25 - 0.45)], dtype=jnp.float32, ulps=ELEMENTWISE, what="kept state"
    )
    assert_close(forgot["w"], [-0.025, -0.025], dtype=jnp.float32, ulps=ELEMENTWISE, what="forgotten state")


@pytest.mark.negative
def test_gradients_of_another_structure_pass_update_and_fail_in_apply_updates() -> None:
    """Guide 001 line 49 (gradients of another PyTree structure). Plain SGD's
    ``update`` does not read params, so it accepts ``{"v": ...}`` and returns
    updates of that structure; the mistake surfaces as ValueError in
    ``apply_updates``."""
    params, _ = guide_params()
    tx = optax.sgd(LR)
    updates, _ = tx.update({"v": jnp.array([0.5, -0.5])}, tx.init(params), params)
    assert list(updates) == ["v"]
    with pytest.raises(ValueError, match=pinned.PYTREE_STRUCTURE):
        optax.apply_updates(params, updates)


@pytest.mark.negative
def test_gradient_of_another_shape_fails_in_apply_updates() -> None:
    """Guides' regression protocol: a deliberately incompatible shape. A (3,)
    gradient for (2,) params raises TypeError when applied."""
    params, _ = guide_params()
    tx = optax.sgd(LR)
    updates, _ = tx.update({"w": jnp.ones(3)}, tx.init(params), params)
    with pytest.raises(TypeError, match=pinned.INCOMPATIBLE_SHAPES):
        optax.apply_updates(params, updates)


@pytest.mark.acceptance
def test_state_is_empty_without_momentum_and_holds_a_trace_with_it() -> None:
    """Guide 001 line 28: with momentum the state is no longer empty (a
    checkpoint must hold it): one trace leaf per param, zeros, the param's shape
    and dtype; without momentum the state has no array leaves."""
    params = {"kernel": jnp.ones((3, 2)), "bias": jnp.ones((2,), jnp.bfloat16)}
    assert jax.tree.leaves(optax.sgd(LR).init(params)) == []
    for nesterov in (False, True):
        state = optax.sgd(LR, momentum=0.9, nesterov=nesterov).init(params)
        leaves = jax.tree.leaves(state)
        assert [(x.shape, x.dtype) for x in leaves] == [((2,), jnp.bfloat16), ((3, 2), jnp.float32)]
        for x in leaves:
            assert_close(x, np.zeros(x.shape), dtype=x.dtype, ulps=EXACT, what="initial trace")


@pytest.mark.property
@given(pair=strategies.pytree_pairs(), lr=st.floats(1e-4, 1.0))
def test_update_is_minus_lr_times_gradient(pair: Any, lr: Any) -> None:
    """Guide 001 lines 12 and 57: update = -lr * g (against the gradient) and
    new params = p - lr * g on every leaf of generated PyTrees."""
    params, grads = to_jax(pair[0]), to_jax(pair[1])
    updates, _, new_params = one_step(optax.sgd(lr), params, grads)
    p64, g64 = leaves64(params), leaves64(grads)
    for got, want in zip(jax.tree.leaves(updates), references.sgd_updates(g64, lr), strict=True):
        assert_close(got, want, dtype=jnp.float32, ulps=ELEMENTWISE, what="update")
    for got, want, p, g in zip(
        jax.tree.leaves(new_params), references.sgd_trajectory(p64, [g64], lr)[0], p64, g64, strict=True
    ):
        scale = max(float(np.max(np.abs(p))), float(np.max(np.abs(lr * g))))
        assert_close(got, want, dtype=jnp.float32, ulps=ELEMENTWISE, scale=scale, what="new params")
    assert jax.tree.structure(new_params) == jax.tree.structure(params)


@pytest.mark.acceptance
def test_result_shapes_dtypes_and_finiteness(dtype: Any) -> None:
    """Guides' acceptance criteria 2, 3, 5: updates and new params keep each
    leaf's shape and dtype, are finite and match the reference; asymmetric
    shapes (3x5x2) and a one-element leaf; every dtype (float64 under x64)."""
    rng = np.random.default_rng(1)
    params = to_jax({"kernel": rng.normal(size=(3, 5, 2)), "bias": rng.normal(size=(1,))}, dtype)
    grads = to_jax({"kernel": rng.normal(size=(3, 5, 2)), "bias": rng.normal(size=(1,))}, dtype)
    updates, _, new_params = one_step(optax.sgd(LR), params, grads)
    for tree in (updates, new_params):
        for name in params:
            assert tree[name].shape == params[name].shape and tree[name].dtype == dtype, name
            assert bool(jnp.all(jnp.isfinite(tree[name]))), name
    for got, want, p in zip(
        jax.tree.leaves(new_params),
        references.sgd_trajectory(leaves64(params), [leaves64(grads)], LR)[0],
        leaves64(params),
        strict=True,
    ):
        assert_close(got, want, dtype=dtype, ulps=ELEMENTWISE, scale=float(np.max(np.abs(p))), what="new params")


@pytest.mark.acceptance
def test_jit_matches_eager_and_does_not_recompile() -> None:
    """A jitted step (update + apply_updates) equals the eager one; the second
    step, same shapes and new values, compiles nothing."""
    params, grads = guide_params()
    tx = optax.sgd(LR, momentum=0.9)
    jit_parity.assert_jit_matches_eager(
        lambda p, g, s: one_step(tx, p, g, s),
        [(params, grads, tx.init(params)), lambda previous: (previous[2], grads, previous[1])],
        ulps=ELEMENTWISE,
    )


@pytest.mark.acceptance
@pytest.mark.parametrize("momentum", [None, 0.9, "nesterov"], ids=["plain", "momentum", "nesterov"])
@pytest.mark.parametrize(("dtype_name", "schedule"), dtypes.trajectory_cases())
def test_trajectory(dtype_name: Any, schedule: Any, momentum: Any) -> None:
    """Guide 001 step by step over three steps: plain, heavy-ball and Nesterov
    SGD with a constant or a linearly decaying learning rate, in every dtype,
    follow the float64 reference (Sutskever et al. 2013); params and updates
    keep the params' dtype."""
    with dtypes.precision(dtype_name) as dtype:
        lr = optax.linear_schedule(0.1, 0.02, transition_steps=2) if schedule else LR
        ref_lr = references.linear_schedule(0.1, 0.02, 2) if schedule else LR
        kwargs = {"momentum": 0.9, "nesterov": True} if momentum == "nesterov" else {"momentum": momentum}
        params, grads = seeded_layer(steps=3, seed=31)
        p0, gs = to_jax(params, dtype), [to_jax(g, dtype) for g in grads]
        steps = trajectories.run(optax.sgd(lr, **kwargs), p0, gs)
        want = references.sgd_trajectory(leaves64(p0), [leaves64(g) for g in gs], ref_lr, **kwargs)
        trajectories.assert_follows_in(dtype_name, schedule, [s.params for s in steps], want, initial=p0)
        for k, s in enumerate(steps, 1):
            assert_dtype(
                {"params": s.params, "updates": s.updates, "state": s.state}, dtype, f"step {k}", ignore_integers=True
            )


@pytest.mark.negative
def test_edge_inputs_zeros_zero_size_none_empty() -> None:
    """Regression protocol edges, pinned to the baseline: zero gradients give
    zero updates (params unchanged); a zero-size leaf gives an empty update;
    a None leaf stays None in updates, in the momentum trace and in the new
    params; an empty PyTree gives empty updates and an empty state."""
    tx = optax.sgd(LR, momentum=0.9)
    zeros = {"w": jnp.zeros(3)}
    updates, _, new = one_step(tx, {"w": jnp.ones(3)}, zeros)
    assert_close(updates["w"], np.zeros(3), dtype=jnp.float32, ulps=EXACT, what="zero gradient")
    assert_close(new["w"], np.ones(3), dtype=jnp.float32, ulps=EXACT, what="params")
    empty_leaf = {"w": jnp.ones((0, 3))}
    assert one_step(tx, empty_leaf, empty_leaf)[0]["w"].shape == (0, 3)
    with_none = {"w": jnp.ones(2), "b": None}
    updates, state, new = one_step(tx, with_none, with_none)
    assert updates["b"] is None and new["b"] is None and state[0].trace["b"] is None
    updates, state, new = one_step(tx, {}, {})
    assert updates == {} and new == {} and jax.tree.leaves(state) == []


@pytest.mark.negative
def test_non_finite_gradients_propagate() -> None:
    """No guard at the baseline: a NaN gradient gives a NaN update and param,
    an inf gradient an infinite update of the opposite sign."""
    updates, _, new = one_step(optax.sgd(LR), {"w": jnp.ones(2)}, {"w": jnp.array([jnp.nan, jnp.inf])})
    assert np.isnan(float(updates["w"][0])) and np.isnan(float(new["w"][0]))
    assert float(updates["w"][1]) == -np.inf and float(new["w"][1]) == -np.inf


@pytest.mark.snapshot
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16], ids=["float32", "bfloat16"])
@pytest.mark.parametrize("momentum", [None, 0.9, "nesterov"], ids=["plain", "momentum", "nesterov"])
def test_state_snapshot(data_regression: Any, momentum: Any, dtype: Any) -> None:
    """Baseline snapshot (drift, not correctness): the optimizer state's PyTree
    structure, leaf paths, shapes and dtypes after ``init`` and after each of
    two steps, for float32 and bfloat16 params. Recorded from optax 0.2.6 by
    ``./noxw -s update-snapshots``; a candidate that differs is ``changed``."""
    tx = optax.sgd(LR, momentum=0.9, nesterov=True) if momentum == "nesterov" else optax.sgd(LR, momentum=momentum)
    params = to_jax({"kernel": np.ones((3, 2)), "bias": np.ones((2,))}, dtype)
    grads = to_jax({"kernel": np.full((3, 2), 0.5), "bias": np.full((2,), -0.5)}, dtype)
    data_regression.check(trajectories.state_signatures(tx, params, [grads, grads]))
