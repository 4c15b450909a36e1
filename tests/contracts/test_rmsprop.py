"""Contracts of ``optax.rmsprop``, plain and centered, with and without momentum.

Source: Hinton 2012, "Neural Networks for Machine Learning", lecture 6e
(RMSProp), and Graves 2013, "Generating Sequences With Recurrent Neural
Networks", eqs. 38-41 (centered, with momentum applied after the learning
rate); the float64 reference is ``kit.references.optimizers.rmsprop_trajectory``.
Source read: optax 0.2.6 ``optax/_src/alias.py`` (``rmsprop`` =
``chain(scale_by_rms or scale_by_stddev, scale_by_learning_rate, trace or
identity)``: the momentum trace comes *after* the learning rate) and
``optax/_src/transform.py`` (``scale_by_rms``: ``nu`` initialised to
``initial_scale`` = 0 by default with ``tree.full_like``; ``eps_in_sqrt=True``
by default, i.e. ``g * rsqrt(nu + eps)``, else ``g / (sqrt(nu) + eps)``;
``scale_by_stddev`` subtracts ``mu**2``; no count unless ``bias_correction``).

Inputs: gradients (params unused), PyTrees of one structure; outputs: updates
of their structure and dtype, state ``(ScaleByRmsState(nu) or
ScaleByRStdDevState(mu, nu), EmptyState, EmptyState or TraceState)``.

Budget: the moment updates, the scaling and the learning rate with
``apply_updates`` are three elementwise stages (four with momentum); the
centered variance ``nu - mu**2`` adds a cancellation that the seeded
gradients keep mild: ``4 * ELEMENTWISE`` a step for every variant.
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
from optax_gate.kit.references import optimizers as ref
from optax_gate.kit.tolerances import ELEMENTWISE, EXACT, assert_close
from optax_gate.kit.trees import assert_dtype, leaves64, seeded_layer, to_jax

pytestmark = pytest.mark.contract(
    api="optax.rmsprop", guide=guides.paper("Hinton 2012 lecture 6e; Graves 2013 eqs. 38-41 (centered)")
)

LR = 0.1
PER_STEP = 4 * ELEMENTWISE
LAYER = {"kernel": np.zeros((3, 2)), "bias": np.zeros(2)}
VARIANTS: dict[str, dict[str, Any]] = {"plain": {}, "centered-momentum": {"centered": True, "momentum": 0.9}}


def first_update(g: Any, **kwargs: Any) -> Any:
    tx = optax.rmsprop(LR, **kwargs)
    params = {"w": jnp.zeros(1)}
    return tx.update({"w": jnp.array([g])}, tx.init(params), params)[0]["w"]


@pytest.mark.golden
@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"decay": 0.5, "eps": 0.0, "initial_scale": 4.0}, -0.1),
        ({"decay": 0.5, "eps": 0.0, "centered": True}, -0.2),
        ({"decay": 0.5, "eps": 0.0, "initial_scale": 4.0, "eps_in_sqrt": False}, -0.1),
        ({"decay": 0.5, "eps": 5.0, "initial_scale": 4.0}, -0.2 / 3),
        ({"decay": 0.5, "eps": 2.0, "initial_scale": 4.0, "eps_in_sqrt": False}, -0.05),
    ],
    ids=["initial-scale", "centered", "eps-0-outside", "eps-in-sqrt", "eps-outside"],
)
def test_first_step(kwargs: Any, expected: Any) -> None:
    """g = 2, decay 0.5, lr 0.1. ``nu_0 = initial_scale`` = 4: nu = 2 + 2 = 4,
    update -0.1 * 2/2 = -0.1. Centered (nu_0 = 0): nu = 2, mu = 1, variance 1,
    update -0.2. ``eps`` inside the root: 2/sqrt(4 + 5) = 2/3; outside:
    2/(2 + 2) = 0.5."""
    assert_close(first_update(2.0, **kwargs), [expected], dtype=jnp.float32, ulps=PER_STEP, what="update")


@pytest.mark.golden
def test_momentum_trace_follows_the_learning_rate() -> None:
    """decay 0.5, eps 0, momentum 0.5, a learning rate 0.1 then 0.05 (a
    schedule), g = 2 twice: scaled steps -0.1 * 2/sqrt(2) and
    -0.05 * 2/sqrt(3); the second update is the trace
    -0.05 * 2/sqrt(3) + 0.5 * (-0.1 * sqrt(2)) (Graves eq. 40: the
    learning rate inside the trace)."""
    tx = optax.rmsprop(lambda count: jnp.where(count == 0, 0.1, 0.05), decay=0.5, eps=0.0, momentum=0.5)
    params = {"w": jnp.zeros(1)}
    g = {"w": jnp.array([2.0])}
    u1, s = tx.update(g, tx.init(params), params)
    u2, _ = tx.update(g, s, params)
    assert_close(u1["w"], [-0.1 * np.sqrt(2.0)], dtype=jnp.float32, ulps=PER_STEP, what="step 1")
    assert_close(
        u2["w"], [-0.1 / np.sqrt(3.0) + 0.5 * -0.1 * np.sqrt(2.0)], dtype=jnp.float32, ulps=2 * PER_STEP, what="step 2"
    )


@pytest.mark.property
@given(g1=strategies.like(LAYER), g2=strategies.like(LAYER), lr=st.floats(1e-4, 1.0), centered=st.booleans())
def test_two_steps_match_float64_reference(g1: Any, g2: Any, lr: Any, centered: Any) -> None:
    """Two steps on generated gradients follow ``rmsprop_trajectory`` (eps
    outside the root, so that zero gradients stay finite)."""
    g1, g2 = to_jax(g1), to_jax(g2)
    tx = optax.rmsprop(lr, centered=centered, eps_in_sqrt=False)
    u1, s = tx.update(g1, tx.init(g1))
    u2, _ = tx.update(g2, s)
    _, want = ref.rmsprop_trajectory(
        leaves64(g1), [leaves64(g1), leaves64(g2)], lr, centered=centered, eps_in_sqrt=False
    )
    for k, (got, exp) in enumerate(zip((u1, u2), want, strict=True), 1):
        for a, e in zip(jax.tree.leaves(got), exp, strict=True):
            assert_close(
                a,
                e,
                dtype=jnp.float32,
                ulps=k * PER_STEP,
                scale=float(np.max(np.abs(e), initial=lr)),
                what=f"update {k}",
            )


@pytest.mark.acceptance
@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize(("dtype_name", "schedule"), dtypes.trajectory_cases())
def test_trajectory(dtype_name: Any, schedule: Any, variant: Any) -> None:
    """Three steps, plain and centered with momentum 0.9, with a constant or
    linearly decaying learning rate in every dtype, follow the reference;
    params, updates and state keep the params' dtype."""
    with dtypes.precision(dtype_name) as dtype:
        lr = optax.linear_schedule(0.1, 0.02, transition_steps=2) if schedule else LR
        ref_lr = references.linear_schedule(0.1, 0.02, 2) if schedule else LR
        params, grads = seeded_layer(steps=3, seed=41)
        p0, gs = to_jax(params, dtype), [to_jax(g, dtype) for g in grads]
        steps = trajectories.run(optax.rmsprop(lr, **VARIANTS[variant]), p0, gs)
        want, _ = ref.rmsprop_trajectory(leaves64(p0), [leaves64(g) for g in gs], ref_lr, **VARIANTS[variant])
        trajectories.assert_follows_in(
            dtype_name, schedule, [s.params for s in steps], want, initial=p0, per_step=PER_STEP
        )
        for k, s in enumerate(steps, 1):
            assert_dtype(
                {"params": s.params, "updates": s.updates, "state": s.state}, dtype, f"step {k}", ignore_integers=True
            )


@pytest.mark.acceptance
def test_initial_state() -> None:
    """``nu`` starts at ``initial_scale`` (0 by default), ``mu`` (centered) at
    0, in the params' shapes and dtypes; no count without bias correction."""
    params = {"w": jnp.ones((3, 2), jnp.bfloat16)}
    (rms, *_) = optax.rmsprop(LR).init(params)
    assert_close(rms.nu["w"], np.zeros((3, 2)), dtype=jnp.bfloat16, ulps=EXACT, what="nu")
    (std, *_) = optax.rmsprop(LR, centered=True, initial_scale=2.0).init(params)
    assert_close(std.nu["w"], np.full((3, 2), 2.0), dtype=jnp.bfloat16, ulps=EXACT, what="centered nu")
    assert_close(std.mu["w"], np.zeros((3, 2)), dtype=jnp.bfloat16, ulps=EXACT, what="centered mu")
    assert {x.dtype for x in jax.tree.leaves((rms, std))} == {jnp.dtype(jnp.bfloat16)}


@pytest.mark.negative
@pytest.mark.known_defect("rmsprop-float16-zero-gradient-nan")
def test_zero_gradients_in_low_precision() -> None:
    """All-zero gradients give zero updates in float32 and bfloat16 (plain and
    centered); in float16 the default eps = 1e-8 rounds to 0 and the update
    is 0 * rsqrt(0) = NaN."""
    for kwargs in ({}, {"centered": True}):
        for dtype in (jnp.float32, jnp.bfloat16):
            tx = optax.rmsprop(LR, **kwargs)
            u, _ = tx.update({"w": jnp.zeros(3, dtype)}, tx.init({"w": jnp.zeros(3, dtype)}))
            assert_close(u["w"], np.zeros(3), dtype=dtype, ulps=EXACT, what=f"{kwargs} {jnp.dtype(dtype).name}")
        tx = optax.rmsprop(LR, **kwargs)
        u, _ = tx.update({"w": jnp.zeros(3, jnp.float16)}, tx.init({"w": jnp.zeros(3, jnp.float16)}))
        assert np.isnan(np.asarray(u["w"], np.float64)).all(), kwargs


@pytest.mark.acceptance
def test_jit_matches_eager_and_does_not_recompile() -> None:
    """Two jitted steps (centered, momentum) equal two eager ones; the second
    compiles nothing."""
    _, grads = seeded_layer(steps=2, seed=3)
    g1, g2 = [to_jax(g) for g in grads]
    tx = optax.rmsprop(LR, centered=True, momentum=0.9)
    jit_parity.assert_jit_matches_eager(
        tx.update, [(g1, tx.init(g1)), lambda previous: (g2, previous[1])], ulps=ELEMENTWISE
    )


@pytest.mark.negative
def test_edge_inputs_and_wrong_shape() -> None:
    """A None leaf stays None in the updates and ``nu``; a zero-size leaf gives
    an empty update; one element g = 3 gets -0.1 * 3/sqrt(0.1 * 9 + 1e-8);
    an empty PyTree gives empty updates; a gradient of another shape than the
    state raises TypeError."""
    tx = optax.rmsprop(LR)
    u, (s, *_) = tx.update({"w": jnp.ones(2), "b": None}, tx.init({"w": jnp.ones(2), "b": None}))
    assert u["b"] is None and s.nu["b"] is None
    assert tx.update({"w": jnp.ones((0, 3))}, tx.init({"w": jnp.ones((0, 3))}))[0]["w"].shape == (0, 3)
    one, _ = tx.update({"w": jnp.array([3.0])}, tx.init({"w": jnp.ones(1)}))
    assert_close(one["w"], [-0.1 * 3.0 / np.sqrt(0.9 + 1e-8)], dtype=jnp.float32, ulps=PER_STEP, what="one element")
    assert tx.update({}, tx.init({}))[0] == {}
    with pytest.raises(TypeError, match=pinned.INCOMPATIBLE_SHAPES):
        tx.update({"w": jnp.ones(3)}, tx.init({"w": jnp.ones(2)}))


@pytest.mark.snapshot
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16], ids=["float32", "bfloat16"])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_state_snapshot(data_regression: Any, variant: Any, dtype: Any) -> None:
    """Baseline snapshot (drift, not correctness): state structure, leaf paths,
    shapes and dtypes after ``init`` and two steps. Recorded from optax 0.2.6
    by ``./noxw -s update-snapshots``."""
    params, grads = seeded_layer(steps=2, seed=3)
    tx = optax.rmsprop(LR, **VARIANTS[variant])
    data_regression.check(trajectories.state_signatures(tx, to_jax(params, dtype), [to_jax(g, dtype) for g in grads]))
