"""Contracts of ``optax.masked`` (a neighbour of the guides' APIs).

Guide: the referenced guide "weight decay without bias" (summary in
001_3de679c23eb4e8d7.txt lines 67-68), whose mask is applied by
``optax.masked``. Source read: optax 0.2.6 ``optax/transforms/_masking.py``:
the inner transformation sees only the leaves the mask selects (the others are
``MaskedNode``); for a masked-out leaf ``update`` returns **the incoming update
unchanged** (``new_u if m else old_u``), it does not zero it.

Inputs: updates (and params) PyTrees; mask a PyTree prefix of bools or a
callable. Output: updates of the same structure; state ``MaskedState``.
"""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hypothesis import given
from hypothesis import strategies as st

from optax_gate.kit import dtypes, guides, jit_parity, pinned, strategies, tolerances, trajectories
from optax_gate.kit.jit_parity import updates_only
from optax_gate.kit.references import core as references
from optax_gate.kit.tolerances import ELEMENTWISE, EXACT, assert_close
from optax_gate.kit.trees import leaves64, seeded_layer, to_jax

pytestmark = pytest.mark.contract(api="optax.masked", guide=guides.WEIGHT_DECAY_MASK)

MASK = {"kernel": True, "bias": False}


@pytest.mark.golden
def test_masked_out_leaf_receives_the_raw_update_not_zero() -> None:
    """``masked(sgd(0.1), {kernel: True, bias: False})``: the kernel gets
    ``-0.1 * g``; the bias gets ``g`` itself (5.0), so applying it would move
    the bias *up* the gradient: masking out is not freezing."""
    params = {"kernel": jnp.ones(2), "bias": jnp.ones(2)}
    grads = {"kernel": jnp.ones(2), "bias": jnp.full(2, 5.0)}
    tx = optax.masked(optax.sgd(0.1), MASK)
    updates, _ = tx.update(grads, tx.init(params), params)
    assert_close(updates["kernel"], [-0.1, -0.1], dtype=jnp.float32, ulps=ELEMENTWISE, what="kernel")
    assert_close(updates["bias"], [5.0, 5.0], dtype=jnp.float32, ulps=EXACT, what="bias")


@pytest.mark.golden
def test_inner_state_covers_only_the_selected_leaves() -> None:
    """With momentum, the inner trace holds the kernel and a ``MaskedNode`` for
    the bias: the masked-out leaf carries no optimizer state."""
    params = {"kernel": jnp.ones(2), "bias": jnp.ones(2)}
    state = optax.masked(optax.sgd(0.1, momentum=0.9), MASK).init(params)
    trace = state.inner_state[0].trace
    assert isinstance(trace["bias"], optax.MaskedNode)
    assert trace["kernel"].shape == (2,) and trace["kernel"].dtype == jnp.float32


@pytest.mark.negative
@pytest.mark.parametrize(
    "mask", [{"kernel": True}, {"kernel": True, "bias": False, "x": True}], ids=["missing-leaf", "extra-leaf"]
)
def test_mask_of_another_structure_raises_value_error(mask: Any) -> None:
    """A mask that is not a prefix of the params fails at ``init``."""
    with pytest.raises(ValueError, match=pinned.PYTREE_STRUCTURE):
        optax.masked(optax.sgd(0.1), mask).init({"kernel": jnp.ones(2), "bias": jnp.ones(2)})


@pytest.mark.negative
def test_a_scalar_false_mask_passes_every_update_through() -> None:
    """A mask that is a prefix (a single ``False``) masks out everything: the
    updates come back unchanged."""
    params = {"kernel": jnp.ones(2), "bias": jnp.full(2, 2.0)}
    tx = optax.masked(optax.sgd(0.1), False)
    updates, _ = tx.update(params, tx.init(params), params)
    for key in params:
        assert_close(updates[key], np.asarray(params[key]), dtype=jnp.float32, ulps=EXACT, what=key)


@pytest.mark.property
@given(pair=strategies.pytree_pairs(), data=st.data())
def test_selected_leaves_get_sgd_and_the_rest_pass_through(pair: Any, data: Any) -> None:
    """For any boolean per leaf: selected leaves get ``-lr * g``, the others
    ``g`` bit for bit."""
    params, grads = to_jax(pair[0]), to_jax(pair[1])
    leaves, treedef = jax.tree.flatten(params)
    flags = data.draw(st.lists(st.booleans(), min_size=len(leaves), max_size=len(leaves)))
    tx = optax.masked(optax.sgd(0.1), jax.tree.unflatten(treedef, flags))
    updates, _ = tx.update(grads, tx.init(params), params)
    for got, g, flag in zip(jax.tree.leaves(updates), leaves64(grads), flags, strict=True):
        assert_close(
            got, -0.1 * g if flag else g, dtype=jnp.float32, ulps=ELEMENTWISE if flag else EXACT, what=f"mask={flag}"
        )


@pytest.mark.acceptance
@pytest.mark.parametrize(("dtype_name", "schedule"), dtypes.trajectory_cases())
def test_trajectory_of_masked_momentum_sgd(dtype_name: Any, schedule: Any) -> None:
    """Three steps of ``masked(sgd(lr, momentum=0.9), mask)`` in every dtype:
    the kernel follows momentum SGD (float64 reference); the bias update is
    the raw gradient at every step, so the bias climbs it."""
    with dtypes.precision(dtype_name) as dtype:
        lr = optax.linear_schedule(0.1, 0.02, transition_steps=2) if schedule else 0.1
        ref_lr = references.linear_schedule(0.1, 0.02, 2) if schedule else 0.1
        params, grads = seeded_layer(steps=3, seed=12)
        p0, gs = to_jax(params, dtype), [to_jax(g, dtype) for g in grads]
        steps = trajectories.run(optax.masked(optax.sgd(lr, momentum=0.9), MASK), p0, gs)
        kernel = references.sgd_trajectory([leaves64(p0)[1]], [[leaves64(g)[1]] for g in gs], ref_lr, momentum=0.9)
        trajectories.assert_follows_in(
            dtype_name, schedule, [[s.params["kernel"]] for s in steps], kernel, initial=p0, what="kernel"
        )
        bias = np.asarray(leaves64(p0)[0])
        for k, (s, g) in enumerate(zip(steps, gs, strict=True), start=1):
            bias = bias + np.asarray(g["bias"], np.float64)
            assert_close(s.params["bias"], bias, dtype=dtype, ulps=tolerances.accumulated(k), what=f"bias at step {k}")
            assert s.params["bias"].dtype == dtype and s.updates["kernel"].dtype == dtype


@pytest.mark.snapshot
@pytest.mark.parametrize("dtype_name", ["float32", "bfloat16"])
def test_state_snapshot(data_regression: Any, dtype_name: Any) -> None:
    """Baseline snapshot (drift, not correctness): ``MaskedState`` of masked
    momentum SGD after init and two steps. Recorded from optax 0.2.6 by
    ``./noxw -s update-snapshots``."""
    params, grads = seeded_layer(steps=2, seed=12)
    dtype = jnp.dtype(dtype_name)
    tx = optax.masked(optax.sgd(0.1, momentum=0.9), MASK)
    p = to_jax(params, dtype)
    data_regression.check(trajectories.state_signatures(tx, p, [to_jax(g, dtype) for g in grads]))


@pytest.mark.acceptance
def test_jit_matches_eager_and_does_not_recompile() -> None:
    """A jitted masked step equals the eager one; a second call compiles nothing."""
    params, grads = seeded_layer(steps=2, seed=12)
    p, gs = to_jax(params), [to_jax(g) for g in grads]
    tx = optax.masked(optax.sgd(0.1, momentum=0.9), MASK)
    jit_parity.assert_jit_matches_eager(
        tx.update,
        [(gs[0], tx.init(p), p), lambda previous: (gs[1], previous[1], p)],
        ulps=ELEMENTWISE,
        compare=updates_only,
    )


@pytest.mark.negative
def test_edge_inputs_none_leaf_empty_tree_zero_size_and_nan() -> None:
    """A None leaf stays None; an empty PyTree gives an empty one; a zero-size
    leaf passes; a NaN in a masked-out leaf comes back as NaN, in a selected
    leaf as NaN times -lr."""
    tx = optax.masked(optax.sgd(0.1), {"a": True, "b": False})
    with_none = {"a": jnp.ones(2), "b": None}
    assert tx.update(with_none, tx.init(with_none))[0]["b"] is None
    empty = optax.masked(optax.sgd(0.1), {})
    assert empty.update({}, empty.init({}))[0] == {}
    zero = {"a": jnp.ones((0, 3)), "b": jnp.ones(2)}
    assert tx.update(zero, tx.init(zero))[0]["a"].shape == (0, 3)
    nan = {"a": jnp.array([jnp.nan, 1.0]), "b": jnp.array([jnp.nan, 1.0])}
    out = tx.update(nan, tx.init(nan))[0]
    np.testing.assert_array_equal(np.asarray(out["b"]), [np.nan, 1.0])
    np.testing.assert_allclose(np.asarray(out["a"]), [np.nan, -0.1], rtol=tolerances.eps("float32"))
