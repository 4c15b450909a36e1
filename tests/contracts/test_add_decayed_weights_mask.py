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

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hypothesis import given
from hypothesis import strategies as st

from optax_gate import guides, pinned, references, strategies
from optax_gate.tolerances import ELEMENTWISE, EXACT, assert_close
from optax_gate.trees import leaves64, signature, to_jax

pytestmark = pytest.mark.contract(api="optax.add_decayed_weights", guide=guides.WEIGHT_DECAY_MASK)

WD = 0.1
MASK = {"kernel": True, "bias": False}


def layer():
    """Hand-made layer: kernel 2x2, bias (2,), gradients 0.5 everywhere."""
    params = {"kernel": jnp.array([[1.0, 2.0], [3.0, 4.0]]), "bias": jnp.array([1.0, -1.0])}
    grads = {"kernel": jnp.full((2, 2), 0.5), "bias": jnp.array([0.5, -0.5])}
    return params, grads


@pytest.mark.golden
@pytest.mark.parametrize("mask", [MASK, lambda p: jax.tree.map(lambda x: x.ndim > 1, p)], ids=["tree", "callable"])
def test_kernel_decayed_bias_unchanged(mask):
    """Summary 001:67-68. kernel: 0.5 + 0.1 * [[1, 2], [3, 4]] = [[0.6, 0.7],
    [0.8, 0.9]]; bias: the gradient, bit for bit."""
    params, grads = layer()
    tx = optax.add_decayed_weights(WD, mask=mask)
    updates, _ = tx.update(grads, tx.init(params), params)
    assert_close(updates["kernel"], [[0.6, 0.7], [0.8, 0.9]], dtype=jnp.float32, ulps=ELEMENTWISE, what="kernel")
    assert_close(updates["bias"], [0.5, -0.5], dtype=jnp.float32, ulps=EXACT, what="bias")


@pytest.mark.golden
def test_in_a_chain_with_sgd_the_bias_moves_by_the_gradient_only():
    """One training step ``chain(add_decayed_weights(0.1, mask), sgd(0.1))``:
    kernel = p - 0.1 * (0.5 + 0.1 p); bias = p - 0.1 * g = [0.95, -0.95]."""
    params, grads = layer()
    tx = optax.chain(optax.add_decayed_weights(WD, mask=MASK), optax.sgd(0.1))
    updates, _ = tx.update(grads, tx.init(params), params)
    new = optax.apply_updates(params, updates)
    assert_close(new["kernel"], [[0.94, 1.93], [2.92, 3.91]], dtype=jnp.float32, ulps=ELEMENTWISE, what="kernel")
    assert_close(new["bias"], [0.95, -0.95], dtype=jnp.float32, ulps=ELEMENTWISE, what="bias")


@pytest.mark.negative
@pytest.mark.parametrize("mask", [{"kernel": True}, {"kernel": True, "bias": False, "extra": True}], ids=["missing-leaf", "extra-leaf"])
def test_mask_of_another_structure_raises_value_error_at_init(mask):
    """Guide 000 line 12 (negative test for an incompatible mask): a mask that
    is not a prefix of the params fails at ``init`` with ValueError."""
    params, _ = layer()
    with pytest.raises(ValueError, match=pinned.PYTREE_STRUCTURE):
        optax.add_decayed_weights(WD, mask=mask).init(params)


@pytest.mark.negative
def test_update_without_params_raises_value_error():
    """Weight decay reads the params: ``update(g, state)`` without them raises."""
    params, grads = layer()
    tx = optax.add_decayed_weights(WD, mask=MASK)
    with pytest.raises(ValueError, match=pinned.NO_PARAMS):
        tx.update(grads, tx.init(params))


@pytest.mark.property
@given(pair=strategies.pytree_pairs(), wd=st.floats(0.0, 1.0), data=st.data())
def test_matches_float64_reference_with_any_leaf_mask(pair, wd, data):
    """``g + wd * p`` where the mask is True, ``g`` bit for bit where False
    (``references.masked_decayed_updates``), for a random boolean per leaf."""
    params, grads = to_jax(pair[0]), to_jax(pair[1])
    leaves, treedef = jax.tree.flatten(params)
    flags = data.draw(st.lists(st.booleans(), min_size=len(leaves), max_size=len(leaves)))
    tx = optax.add_decayed_weights(wd, mask=jax.tree.unflatten(treedef, flags))
    updates, _ = tx.update(grads, tx.init(params), params)
    want = references.masked_decayed_updates(leaves64(grads), leaves64(params), wd, flags)
    for got, exp, flag, p, g in zip(jax.tree.leaves(updates), want, flags, leaves64(params), leaves64(grads)):
        scale = max(float(np.max(np.abs(g))), wd * float(np.max(np.abs(p))))
        assert_close(got, exp, dtype=jnp.float32, ulps=ELEMENTWISE if flag else EXACT, scale=scale, what=f"mask={flag}")


@pytest.mark.acceptance
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16], ids=["float32", "bfloat16"])
def test_result_shapes_dtypes_and_finiteness(dtype):
    """Guides' acceptance criteria 2, 3, 5: updates keep shapes and dtypes,
    are finite and follow the reference; asymmetric kernel 3x5x2."""
    rng = np.random.default_rng(3)
    params = to_jax({"kernel": rng.normal(size=(3, 5, 2)), "bias": rng.normal(size=(2,))}, dtype)
    grads = to_jax({"kernel": rng.normal(size=(3, 5, 2)), "bias": rng.normal(size=(2,))}, dtype)
    tx = optax.add_decayed_weights(WD, mask=MASK)
    updates, _ = tx.update(grads, tx.init(params), params)
    for name in params:
        assert updates[name].shape == params[name].shape and updates[name].dtype == dtype, name
        assert bool(jnp.all(jnp.isfinite(updates[name]))), name
    want = references.masked_decayed_updates(leaves64(grads), leaves64(params), WD, [False, True])
    for got, exp, p, g in zip(jax.tree.leaves(updates), want, leaves64(params), leaves64(grads)):
        scale = max(float(np.max(np.abs(g))), WD * float(np.max(np.abs(p))))
        assert_close(got, exp, dtype=dtype, ulps=ELEMENTWISE, scale=scale, what="updates")


@pytest.mark.acceptance
def test_jit_matches_eager():
    """The jitted masked update equals the eager one."""
    params, grads = layer()
    tx = optax.add_decayed_weights(WD, mask=MASK)
    state = tx.init(params)
    eager, _ = tx.update(grads, state, params)
    jitted, _ = jax.jit(tx.update)(grads, state, params)
    for a, b in zip(jax.tree.leaves(eager), jax.tree.leaves(jitted)):
        assert_close(b, np.asarray(a, np.float64), dtype=jnp.float32, ulps=ELEMENTWISE, what="jit vs eager")


@pytest.mark.snapshot
@pytest.mark.parametrize("schedule", [False, True], ids=["constant", "scheduled"])
def test_state_snapshot(data_regression, schedule):
    """Baseline snapshot (drift, not correctness): the state of masked weight
    decay chained with SGD, with a constant and a scheduled weight decay
    (whose state holds a step counter), after ``init`` and two steps.
    Recorded from optax 0.2.6 by ``./noxw -s update-snapshots``."""
    wd = optax.linear_schedule(0.1, 0.0, transition_steps=4) if schedule else WD
    tx = optax.chain(optax.add_decayed_weights(wd, mask=MASK), optax.sgd(0.1))
    params, grads = layer()
    state = tx.init(params)
    seen = {"init": signature(state)}
    for step in (1, 2):
        _, state = tx.update(grads, state, params)
        seen[f"step{step}"] = signature(state)
    data_regression.check(seen)
