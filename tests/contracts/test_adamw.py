"""Contracts of ``optax.adamw``: Adam with decoupled weight decay, as Optax
scales it (the decay multiplied by the learning rate), and its ``mask``.

Source: Loshchilov & Hutter 2019, "Decoupled Weight Decay Regularization",
Algorithm 2, with Optax's documented scaling (``adamw`` docstring: "this
weight decay is multiplied with the learning rate ... different from
(Loshchilov et al, 2019)"); the float64 reference is
``kit.references.optimizers.adam_trajectory(weight_decay=..., decay_mask=...)``.
Source read: optax 0.2.6 ``optax/_src/alias.py`` (``adamw`` =
``chain(scale_by_adam, add_decayed_weights(weight_decay, mask),
scale_by_learning_rate)``) and ``optax/_src/transform.py``
(``add_decayed_weights``: raises ``ValueError(NO_PARAMS_MSG)`` without
params; the mask applied through ``optax.masked``).

Inputs: gradients and params, PyTrees of one structure (None leaves allowed);
``mask`` a PyTree of booleans or a callable of the params. Outputs: updates
``-lr * (adam step + wd * p)`` (``wd * p`` only where the mask is True) and the
state ``(ScaleByAdamState, MaskedState(EmptyState) or EmptyState,
EmptyState)``.

Budget: Adam's (``test_adam.budget``: three stages plus the bias-correction
cancellation) plus one elementwise stage for the decay.
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
from optax_gate.kit.references import optimizers as ref
from optax_gate.kit.tolerances import ELEMENTWISE, assert_close
from optax_gate.kit.trees import assert_dtype, leaves64, seeded_layer, to_jax

pytestmark = pytest.mark.contract(
    api="optax.adamw", guide=guides.paper("Loshchilov & Hutter 2019, Algorithm 2, decay scaled by the learning rate")
)

LR = 0.1
WD = 0.5
MASK = {"bias": False, "kernel": True}
LAYER = {"kernel": np.zeros((3, 2)), "bias": np.zeros(2)}


def budget(dtype: Any, b1: Any = 0.9, b2: Any = 0.999) -> Any:
    """ULPs of one AdamW step (see the module docstring)."""
    return (
        4 * ELEMENTWISE + tolerances.bias_correction(b1, 1, dtype) + -(-tolerances.bias_correction(b2, 1, dtype) // 2)
    )


def one_step(tx: Any, params: Any, grads: Any, state: Any = None) -> Any:
    state = tx.init(params) if state is None else state
    return tx.update(grads, state, params)


@pytest.mark.golden
@pytest.mark.parametrize(
    "mask", [None, MASK, lambda p: {"bias": False, "kernel": True}], ids=["no-mask", "mask-tree", "mask-callable"]
)
def test_decay_is_scaled_by_the_learning_rate_and_masked(mask: Any) -> None:
    """b1 = b2 = 0.5, eps = 0, wd = 0.5, lr = 0.1, p = 2, g = 5: the Adam
    step is 5/5 = 1, the update -0.1 * (1 + 0.5 * 2) = -0.2 (not
    -0.1 - 0.5 * 2 = -1.1, the paper's unscaled decay); a leaf the mask
    (tree or callable) excludes gets -0.1."""
    params = {"bias": jnp.array([2.0]), "kernel": jnp.array([2.0])}
    tx = optax.adamw(LR, b1=0.5, b2=0.5, eps=0.0, weight_decay=WD, mask=mask)
    updates, _ = one_step(tx, params, {"bias": jnp.array([5.0]), "kernel": jnp.array([5.0])})
    assert_close(updates["kernel"], [-0.2], dtype=jnp.float32, ulps=budget("float32", 0.5, 0.5), what="decayed leaf")
    assert_close(
        updates["bias"],
        [-0.1 if mask is not None else -0.2],
        dtype=jnp.float32,
        ulps=budget("float32", 0.5, 0.5),
        what="bias",
    )


@pytest.mark.property
@given(
    g1=strategies.like(LAYER),
    g2=strategies.like(LAYER),
    p=strategies.like(LAYER),
    lr=st.floats(1e-4, 1.0),
    wd=st.floats(0.0, 1.0),
)
def test_two_steps_match_float64_reference(g1: Any, g2: Any, p: Any, lr: Any, wd: Any) -> None:
    """Two steps on generated gradients and params (kernel decayed, bias
    masked out) follow ``adam_trajectory`` with ``weight_decay``."""
    params, g1, g2 = to_jax(p), to_jax(g1), to_jax(g2)
    tx = optax.adamw(lr, weight_decay=wd, mask=MASK)
    u1, s = one_step(tx, params, g1)
    u2, _ = one_step(tx, params, g2, s)
    # the params stay fixed here; the Adam part does not read them, so step 2 is Adam's plus -lr * wd * p
    _, (w1,) = ref.adam_trajectory(leaves64(params), [leaves64(g1)], lr, weight_decay=wd, decay_mask=[False, True])
    for a, e, x in zip(jax.tree.leaves(u1), w1, leaves64(params), strict=True):
        assert_close(
            a,
            e,
            dtype=jnp.float32,
            ulps=budget("float32"),
            scale=lr * (1 + wd * float(np.max(np.abs(x)))),
            what="update 1",
        )
    _, (_, w2_adam) = ref.adam_trajectory(leaves64(params), [leaves64(g1), leaves64(g2)], lr)
    w2 = [e - lr * wd * x if m else e for e, x, m in zip(w2_adam, leaves64(params), [False, True], strict=True)]
    for a, e, x in zip(jax.tree.leaves(u2), w2, leaves64(params), strict=True):
        assert_close(
            a,
            e,
            dtype=jnp.float32,
            ulps=2 * budget("float32"),
            scale=lr * (1 + wd * float(np.max(np.abs(x)))),
            what="update 2",
        )


@pytest.mark.acceptance
@pytest.mark.parametrize(("dtype_name", "schedule"), dtypes.trajectory_cases())
def test_trajectory(dtype_name: Any, schedule: Any) -> None:
    """Three steps of ``adamw(lr, weight_decay=0.5, mask=kernel only)`` with a
    constant or linearly decaying learning rate in every dtype follow the
    reference; params, updates and moments keep the params' dtype."""
    with dtypes.precision(dtype_name) as dtype:
        lr = optax.linear_schedule(0.1, 0.02, transition_steps=2) if schedule else LR
        ref_lr = references.linear_schedule(0.1, 0.02, 2) if schedule else LR
        params, grads = seeded_layer(steps=3, seed=41)
        p0, gs = to_jax(params, dtype), [to_jax(g, dtype) for g in grads]
        steps = trajectories.run(optax.adamw(lr, weight_decay=WD, mask=MASK), p0, gs)
        want, _ = ref.adam_trajectory(
            leaves64(p0), [leaves64(g) for g in gs], ref_lr, weight_decay=WD, decay_mask=[False, True]
        )
        trajectories.assert_follows_in(
            dtype_name, schedule, [s.params for s in steps], want, initial=p0, per_step=budget(dtype_name)
        )
        for k, s in enumerate(steps, 1):
            assert_dtype(
                {"params": s.params, "updates": s.updates, "state": s.state}, dtype, f"step {k}", ignore_integers=True
            )


@pytest.mark.acceptance
def test_jit_matches_eager_and_does_not_recompile() -> None:
    """Two jitted steps equal two eager ones; the second compiles nothing."""
    params, grads = seeded_layer(steps=2, seed=3)
    p, (g1, g2) = to_jax(params), [to_jax(g) for g in grads]
    tx = optax.adamw(LR, weight_decay=WD, mask=MASK)
    jit_parity.assert_jit_matches_eager(
        lambda g, s: tx.update(g, s, p),
        [(g1, tx.init(p)), lambda previous: (g2, previous[1])],
        ulps=ELEMENTWISE,
        compare=updates_only,
    )


@pytest.mark.negative
@pytest.mark.known_defect("adam-float16-zero-gradient-nan")
def test_zero_gradients_in_low_precision() -> None:
    """All-zero gradients leave only the decay, ``-lr * wd * p``: in float32
    and bfloat16; in float16 the Adam part is 0/0 (eps = 1e-8 rounds to 0)
    and the update is NaN."""
    for dtype in (jnp.float32, jnp.bfloat16):
        updates, _ = one_step(
            optax.adamw(LR, weight_decay=WD), {"w": jnp.full(3, 2.0, dtype)}, {"w": jnp.zeros(3, dtype)}
        )
        assert_close(
            updates["w"], np.full(3, -0.1), dtype=dtype, ulps=2 * ELEMENTWISE, what=f"{jnp.dtype(dtype).name} update"
        )
    updates, _ = one_step(
        optax.adamw(LR, weight_decay=WD), {"w": jnp.full(3, 2.0, jnp.float16)}, {"w": jnp.zeros(3, jnp.float16)}
    )
    assert np.isnan(np.asarray(updates["w"], np.float64)).all()


@pytest.mark.negative
def test_edge_inputs_none_zero_size_one_element() -> None:
    """A None leaf stays None in the updates; a zero-size leaf gives an empty
    update; a one-element leaf p = 4, g = -2 gets -lr * (-1 + wd * 4) (up to
    eps); an empty PyTree gives empty updates."""
    tx = optax.adamw(LR, weight_decay=WD)
    updates, _ = one_step(tx, {"w": jnp.ones(2), "b": None}, {"w": jnp.ones(2), "b": None})
    assert updates["b"] is None
    assert one_step(tx, {"w": jnp.ones((0, 3))}, {"w": jnp.ones((0, 3))})[0]["w"].shape == (0, 3)
    one, _ = one_step(tx, {"w": jnp.array([4.0])}, {"w": jnp.array([-2.0])})
    assert_close(
        one["w"],
        [-LR * (-2.0 / (2.0 + 1e-8) + WD * 4.0)],
        scale=0.2,
        dtype=jnp.float32,
        ulps=budget("float32"),
        what="one element",
    )
    assert one_step(tx, {}, {})[0] == {}


@pytest.mark.negative
def test_missing_params_wrong_mask_or_shape_raise() -> None:
    """``update`` without params raises ValueError (the decay needs them); a
    mask of another structure raises ValueError (PyTree structure); a
    gradient of another shape raises TypeError."""
    params = {"w": jnp.ones(2)}
    tx = optax.adamw(LR)
    with pytest.raises(ValueError, match=pinned.NO_PARAMS):
        tx.update(params, tx.init(params))
    bad = optax.adamw(LR, mask={"x": True})
    with pytest.raises(ValueError, match=pinned.PYTREE_STRUCTURE):
        bad.update(params, bad.init(params), params)
    with pytest.raises(TypeError, match=pinned.INCOMPATIBLE_SHAPES):
        tx.update({"w": jnp.ones(3)}, tx.init(params), params)


@pytest.mark.snapshot
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16], ids=["float32", "bfloat16"])
@pytest.mark.parametrize("masked", [False, True], ids=["unmasked", "masked"])
def test_state_snapshot(data_regression: Any, masked: Any, dtype: Any) -> None:
    """Baseline snapshot (drift, not correctness): the state's structure, leaf
    paths, shapes, dtypes and count after ``init`` and two steps, with and
    without a mask. Recorded from optax 0.2.6 by ``./noxw -s update-snapshots``."""
    tx = optax.adamw(LR, weight_decay=WD, mask=MASK if masked else None)
    params, grads = seeded_layer(steps=2, seed=3)
    data_regression.check(trajectories.state_signatures(tx, to_jax(params, dtype), [to_jax(g, dtype) for g in grads]))
