"""Contracts of ``optax.adafactor``: factored second moments for leaves of rank
>= 2, ``min_dim_size_to_factor``, and the documented default chain.

Source: Shazeer & Stern 2018, "Adafactor: Adaptive Learning Rates with
Sublinear Memory Cost", Algorithm 4 (a factored matrix: row and column
statistics, ``V = R C / (1^T R)``) and Algorithm 5 (an unfactored leaf), with
the increasing decay ``1 - t**-0.8``, update clipping ``d = 1`` and the
relative step ``max(1e-3, RMS(p)) * lr``; the float64 reference is
``kit.references.optimizers.adafactor_trajectory``. Source read: optax 0.2.6
``optax/_src/alias.py`` (``adafactor`` = ``chain(scale_by_factored_rms,
clip_by_block_rms(1.0), scale_by_learning_rate(lr, flip_sign=False),
scale_by_param_block_rms(), scale(-1))`` with the defaults),
``optax/_src/factorized.py`` (``_factored_dims``: the two largest axes, when
the second largest has at least ``min_dim_size_to_factor`` elements;
``v_row`` drops the largest axis, ``v_col`` the second largest; unused
statistics are ``(1,)`` zeros; ``_decay_rate_pow`` computes the decay in
float32; params are required) and ``optax/transforms/_clipping.py``
(``clip_by_block_rms``).

Inputs: gradients and params, PyTrees of one structure; outputs: updates of
their structure and dtype; state ``(FactoredState(count, v_row, v_col, v),
EmptyState x 4)``.

Budget: three reductions over at most six elements (the moment means, the
clipping RMS, the param RMS: ``reduction(6)`` each) and three elementwise
stages (moment update, rescaling, learning rate with ``apply_updates``).
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
from optax_gate.kit.tolerances import ELEMENTWISE, EXACT, assert_close
from optax_gate.kit.trees import assert_dtype, leaves64, seeded_layer, to_jax

pytestmark = pytest.mark.contract(api="optax.adafactor", guide=guides.paper("Shazeer & Stern 2018, Algorithms 4 and 5"))

LR = 0.1
PER_STEP = 3 * tolerances.reduction(6) + 3 * ELEMENTWISE
#: The suite's layer: the (3, 2) kernel is factored with min_dim_size_to_factor=2, the bias is not.
FACTORED = [False, True]  # jax.tree.leaves order: bias, kernel
LAYER = {"kernel": np.zeros((3, 2)), "bias": np.zeros(2)}


def one_step(tx: Any, params: Any, grads: Any, state: Any = None) -> Any:
    state = tx.init(params) if state is None else state
    return tx.update(grads, state, params)


@pytest.mark.golden
def test_first_step_unfactored_is_relative_sign_step() -> None:
    """Step 1 has decay 1 - 1**-0.8 = 0, so V = g**2 + 1e-30 and U = sign(g)
    (RMS 1: not clipped); the step is -lr * RMS(p) * sign(g): p = [2, 2],
    g = [5, -0.5] gives [-0.2, 0.2]; params of RMS under 1e-3 use 1e-3:
    [-1e-4, 1e-4]."""
    tx = optax.adafactor(LR)
    u, _ = one_step(tx, {"w": jnp.array([2.0, 2.0])}, {"w": jnp.array([5.0, -0.5])})
    assert_close(u["w"], [-0.2, 0.2], dtype=jnp.float32, ulps=PER_STEP, what="relative step")
    u, _ = one_step(tx, {"w": jnp.zeros(2)}, {"w": jnp.array([5.0, -0.5])})
    assert_close(u["w"], [-1e-4, 1e-4], dtype=jnp.float32, ulps=PER_STEP, what="min scale")


@pytest.mark.golden
def test_first_step_factored_uses_row_and_column_statistics() -> None:
    """g = [[2, 0], [0, 2]], p = ones (RMS 1), ``min_dim_size_to_factor=2``:
    row and column sums of g**2 are [4, 4], V = 4 * 4 / 8 = 2 everywhere, so
    U = g / sqrt(2) (RMS 1, not clipped) and the update is -0.1 * sqrt(2) on
    the diagonal; unfactored (the default 128) it is -0.1 * sign(g)."""
    params, grads = {"w": jnp.ones((2, 2))}, {"w": jnp.array([[2.0, 0.0], [0.0, 2.0]])}
    u, _ = one_step(optax.adafactor(LR, min_dim_size_to_factor=2), params, grads)
    assert_close(u["w"], -0.1 * np.sqrt(2.0) * np.eye(2), dtype=jnp.float32, ulps=PER_STEP, what="factored")
    u, _ = one_step(optax.adafactor(LR), params, grads)
    assert_close(u["w"], -0.1 * np.eye(2), dtype=jnp.float32, ulps=PER_STEP, what="unfactored")


@pytest.mark.property
@given(g1=strategies.like(LAYER), g2=strategies.like(LAYER), p=strategies.like(LAYER), lr=st.floats(1e-4, 1.0))
def test_two_steps_match_float64_reference(g1: Any, g2: Any, p: Any, lr: Any) -> None:
    """Two steps on generated values (the kernel factored, the bias not) follow
    ``adafactor_trajectory``."""
    params, g1, g2 = to_jax(p), to_jax(g1), to_jax(g2)
    tx = optax.adafactor(lr, min_dim_size_to_factor=2)
    steps = trajectories.run(tx, params, [g1, g2])
    _, want = ref.adafactor_trajectory(leaves64(params), [leaves64(g1), leaves64(g2)], lr, FACTORED)
    for k, (s, exp) in enumerate(zip(steps, want, strict=True), 1):
        for a, e in zip(jax.tree.leaves(s.updates), exp, strict=True):
            assert_close(
                a,
                e,
                dtype=jnp.float32,
                ulps=k * PER_STEP,
                scale=float(np.max(np.abs(e), initial=1e-3 * lr)),
                what=f"update {k}",
            )


def trajectory_cases() -> Any:
    """``dtypes.trajectory_cases()`` with both float64 cases pinning
    ``adafactor-decay-rate-float32-under-x64``."""
    cases = []
    for case in dtypes.trajectory_cases():
        name, scheduled = case.values
        marks = [pytest.mark.known_defect("adafactor-decay-rate-float32-under-x64")] if name == "float64" else []
        cases.append(pytest.param(name, scheduled, marks=marks, id=case.id))
    return cases


@pytest.mark.acceptance
@pytest.mark.parametrize(("dtype_name", "schedule"), trajectory_cases())
def test_trajectory(dtype_name: Any, schedule: Any) -> None:
    """Three steps (kernel factored, bias not) with a constant or linearly
    decaying learning rate in every dtype follow the reference; params,
    updates and statistics keep the params' dtype. In float64 the run is
    float32-accurate only (the decay is computed in float32: a known defect)."""
    with dtypes.precision(dtype_name) as dtype:
        lr = optax.linear_schedule(0.1, 0.02, transition_steps=2) if schedule else LR
        ref_lr = references.linear_schedule(0.1, 0.02, 2) if schedule else LR
        params, grads = seeded_layer(steps=3, seed=41)
        p0, gs = to_jax(params, dtype), [to_jax(g, dtype) for g in grads]
        steps = trajectories.run(optax.adafactor(lr, min_dim_size_to_factor=2), p0, gs)
        want, _ = ref.adafactor_trajectory(leaves64(p0), [leaves64(g) for g in gs], ref_lr, FACTORED)
        got = [s.params for s in steps]
        if dtype_name == "float64":
            trajectories.assert_follows(got, want, dtype="float32", initial=p0, per_step=PER_STEP)
            with pytest.raises(AssertionError):
                trajectories.assert_follows(got, want, dtype="float64", initial=p0, per_step=PER_STEP)
        else:
            trajectories.assert_follows_in(dtype_name, schedule, got, want, initial=p0, per_step=PER_STEP)
        for k, s in enumerate(steps, 1):
            assert_dtype(
                {"params": s.params, "updates": s.updates, "state": s.state}, dtype, f"step {k}", ignore_integers=True
            )


@pytest.mark.acceptance
def test_state_structure_follows_min_dim_size_to_factor() -> None:
    """``v_row`` drops the largest axis and ``v_col`` the second largest of a
    factored leaf; ``v`` is the full shape of an unfactored one; unused
    statistics are (1,): (3, 4) with min 3 is factored ((3,), (4,)), with
    min 5 neither it nor (2, 3, 5) is; with min 3, (2, 3, 5) factors axes 1
    and 2 ((2, 3), (2, 5)); a vector never is. The count is an int32 scalar."""
    params = {"k": jnp.ones((3, 4)), "t": jnp.ones((2, 3, 5)), "b": jnp.ones(4, jnp.bfloat16)}

    def shapes(tree: Any) -> dict[str, Any]:
        return {k: v.shape for k, v in tree.items()}

    state = optax.adafactor(LR, min_dim_size_to_factor=3).init(params)[0]
    assert state.count.dtype == jnp.int32 and int(state.count) == 0
    assert shapes(state.v_row) == {"k": (3,), "t": (2, 3), "b": (1,)}
    assert shapes(state.v_col) == {"k": (4,), "t": (2, 5), "b": (1,)}
    assert shapes(state.v) == {"k": (1,), "t": (1,), "b": (4,)}
    assert state.v["b"].dtype == jnp.bfloat16
    state = optax.adafactor(LR, min_dim_size_to_factor=5).init(params)[0]
    assert shapes(state.v) == {"k": (3, 4), "t": (2, 3, 5), "b": (4,)}


@pytest.mark.negative
@pytest.mark.known_defect("adafactor-float16-zero-gradient-nan")
def test_zero_gradients_in_low_precision() -> None:
    """All-zero gradients give zero updates in float32 and bfloat16; in
    float16 eps = 1e-30 rounds to 0 and the update is 0 * 0**-0.5 = NaN."""
    tx = optax.adafactor(LR)
    for dtype in (jnp.float32, jnp.bfloat16):
        u, _ = one_step(tx, {"w": jnp.ones(3, dtype)}, {"w": jnp.zeros(3, dtype)})
        assert_close(u["w"], np.zeros(3), dtype=dtype, ulps=EXACT, what=jnp.dtype(dtype).name)
    u, _ = one_step(tx, {"w": jnp.ones(3, jnp.float16)}, {"w": jnp.zeros(3, jnp.float16)})
    assert np.isnan(np.asarray(u["w"], np.float64)).all()


@pytest.mark.acceptance
def test_jit_matches_eager_and_does_not_recompile() -> None:
    """Two jitted steps equal two eager ones; the second compiles nothing."""
    params, grads = seeded_layer(steps=2, seed=3)
    p, (g1, g2) = to_jax(params), [to_jax(g) for g in grads]
    tx = optax.adafactor(LR, min_dim_size_to_factor=2)
    jit_parity.assert_jit_matches_eager(
        lambda g, s: tx.update(g, s, p),
        [(g1, tx.init(p)), lambda previous: (g2, previous[1])],
        ulps=PER_STEP,
        compare=updates_only,
    )


@pytest.mark.negative
def test_edge_inputs_and_missing_params() -> None:
    """A None leaf stays None in the updates; a zero-size leaf gives an empty
    update; a one-element leaf p = 2, g = -3 gets -0.1 * 2 * -1 = 0.2; an
    empty PyTree gives empty updates; ``update`` without params raises
    ValueError."""
    tx = optax.adafactor(LR)
    u, _ = one_step(tx, {"w": jnp.ones(2), "b": None}, {"w": jnp.ones(2), "b": None})
    assert u["b"] is None
    assert one_step(tx, {"w": jnp.ones((0, 3))}, {"w": jnp.ones((0, 3))})[0]["w"].shape == (0, 3)
    one, _ = one_step(tx, {"w": jnp.array([2.0])}, {"w": jnp.array([-3.0])})
    assert_close(one["w"], [0.2], dtype=jnp.float32, ulps=PER_STEP, what="one element")
    assert one_step(tx, {}, {})[0] == {}
    with pytest.raises(ValueError, match=pinned.NO_PARAMS):
        tx.update({"w": jnp.ones(2)}, tx.init({"w": jnp.ones(2)}))


@pytest.mark.snapshot
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16], ids=["float32", "bfloat16"])
def test_state_snapshot(data_regression: Any, dtype: Any) -> None:
    """Baseline snapshot (drift, not correctness): state structure, leaf paths,
    shapes, dtypes and count after ``init`` and two steps, the kernel
    factored. Recorded from optax 0.2.6 by ``./noxw -s update-snapshots``."""
    params, grads = seeded_layer(steps=2, seed=3)
    tx = optax.adafactor(LR, min_dim_size_to_factor=2)
    data_regression.check(trajectories.state_signatures(tx, to_jax(params, dtype), [to_jax(g, dtype) for g in grads]))
