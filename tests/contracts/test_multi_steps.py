"""Contracts of ``optax.MultiSteps`` (gradient accumulation).

Guide: the referenced guide on MultiSteps, known from its summary in
001_3de679c23eb4e8d7.txt lines 71-72: "MultiSteps averages two micro-batch
gradients and updates SGD only on every second call". Source read: optax 0.2.6
``optax/transforms/_accumulation.py`` (``MultiSteps``, ``MultiStepsState``):
gradients are averaged with Welford's update ``acc + (g - acc) / (n + 1)``; the
inner optimizer's update is emitted when ``mini_step == k - 1`` and zeros
otherwise; ``mini_step`` wraps to 0 and ``gradient_step`` advances on emission.

Inputs: micro-batch gradients of the params' structure, one per call.
Outputs: updates of that structure and a ``MultiStepsState``.
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
from optax_gate.kit.references import core as references
from optax_gate.kit.tolerances import ELEMENTWISE, EXACT, assert_close
from optax_gate.kit.trees import assert_dtype, leaves64, seeded_layer, to_jax

pytestmark = pytest.mark.contract(api="optax.MultiSteps", guide=guides.MULTI_STEPS)

LR = 0.1


def guide_setup() -> Any:
    """Two micro-batches for params [1, -1], every second call."""
    params = {"w": jnp.array([1.0, -1.0])}
    micro = [{"w": jnp.array([1.0, 2.0])}, {"w": jnp.array([3.0, 4.0])}]
    return optax.MultiSteps(optax.sgd(LR), every_k_schedule=2), params, micro


@pytest.mark.golden
def test_two_micro_batches_average_into_one_sgd_update() -> None:
    """Summary 001:71-72: call 1 emits zeros; call 2 emits -0.1 * mean([1, 2],
    [3, 4]) = [-0.2, -0.3]."""
    ms, params, micro = guide_setup()
    state = ms.init(params)
    first, state = ms.update(micro[0], state, params)
    second, state = ms.update(micro[1], state, params)
    assert_close(first["w"], [0.0, 0.0], dtype=jnp.float32, ulps=EXACT, what="first call")
    assert_close(second["w"], [-0.2, -0.3], dtype=jnp.float32, ulps=ELEMENTWISE, what="second call")


@pytest.mark.golden
def test_counters_and_has_updated_follow_the_cycle() -> None:
    """``mini_step`` 0 -> 1 -> 0, ``gradient_step`` 0 -> 0 -> 1 and
    ``has_updated`` False then True: the update happens on the second call."""
    ms, params, micro = guide_setup()
    state = ms.init(params)
    seen = [(int(state.mini_step), int(state.gradient_step))]
    flags = []
    for g in micro:
        _, state = ms.update(g, state, params)
        seen.append((int(state.mini_step), int(state.gradient_step)))
        flags.append(bool(ms.has_updated(state)))
    assert seen == [(0, 0), (1, 0), (0, 1)]
    assert flags == [False, True]


@pytest.mark.negative
def test_non_final_micro_step_leaves_params_unchanged() -> None:
    """Applying the first call's zero update leaves params bit for bit; only
    after the second call do they move, to [0.8, -1.3]."""
    ms, params, micro = guide_setup()
    state = ms.init(params)
    u1, state = ms.update(micro[0], state, params)
    p1 = optax.apply_updates(params, u1)
    assert_close(p1["w"], [1.0, -1.0], dtype=jnp.float32, ulps=EXACT, what="after call 1")
    u2, _ = ms.update(micro[1], state, p1)
    assert_close(
        optax.apply_updates(p1, u2)["w"], [0.8, -1.3], dtype=jnp.float32, ulps=ELEMENTWISE, what="after call 2"
    )


@pytest.mark.negative
def test_gradients_of_another_structure_raise_value_error() -> None:
    """A micro-batch gradient whose PyTree differs from the params' fails in
    the accumulation (``jax.tree.map`` with the accumulator)."""
    ms, params, _ = guide_setup()
    with pytest.raises(ValueError, match=pinned.PYTREE_STRUCTURE):
        ms.update({"v": jnp.array([1.0, 2.0])}, ms.init(params), params)


@pytest.mark.property
@given(tree=strategies.pytrees(), every_k=st.integers(1, 3), data=st.data())
def test_emits_the_mean_once_per_k_calls(tree: Any, every_k: Any, data: Any) -> None:
    """Over two full cycles of generated micro-batches, each call's update
    equals ``references.multi_steps_sgd_updates``: exact zeros on the first
    k-1 calls of a cycle, ``-lr * mean`` on the k-th; ``has_updated`` is True
    exactly on the k-th."""
    params = to_jax(tree)
    micro = [to_jax(data.draw(strategies.like(tree))) for _ in range(2 * every_k)]
    ms = optax.MultiSteps(optax.sgd(LR), every_k_schedule=every_k)
    update = jax.jit(ms.update)  # one compilation per example instead of one per eager op
    state = ms.init(params)
    want = references.multi_steps_sgd_updates([leaves64(g) for g in micro], every_k, LR)
    for call, (g, exp) in enumerate(zip(micro, want, strict=True), start=1):
        updates, state = update(g, state, params)
        emits = call % every_k == 0
        assert bool(ms.has_updated(state)) == emits, call
        scale = LR * max(float(np.max(np.abs(x))) for m in micro for x in leaves64(m))
        for got, e in zip(jax.tree.leaves(updates), exp, strict=True):
            budget = tolerances.reduction(every_k) if emits else EXACT
            assert_close(got, e, dtype=jnp.float32, ulps=budget, scale=scale, what=f"call {call}")


@pytest.mark.acceptance
def test_result_shapes_dtypes_and_finiteness(dtype: Any) -> None:
    """Guides' acceptance criteria 2, 3, 5: updates keep shapes and dtypes and
    are finite on every call; the emitted one matches the reference; every
    dtype (float64 under x64)."""
    rng = np.random.default_rng(4)
    shapes = {"kernel": (3, 5, 2), "bias": (2,)}
    params = to_jax({k: rng.normal(size=s) for k, s in shapes.items()}, dtype)
    micro = [to_jax({k: rng.normal(size=s) for k, s in shapes.items()}, dtype) for _ in range(2)]
    ms = optax.MultiSteps(optax.sgd(LR), every_k_schedule=2)
    state = ms.init(params)
    for g in micro:
        updates, state = ms.update(g, state, params)
        for name in shapes:
            assert updates[name].shape == shapes[name] and updates[name].dtype == dtype, name
            assert bool(jnp.all(jnp.isfinite(updates[name]))), name
    want = references.multi_steps_sgd_updates([leaves64(g) for g in micro], 2, LR)[-1]
    for got, exp in zip(jax.tree.leaves(updates), want, strict=True):
        assert_close(got, exp, dtype=dtype, ulps=tolerances.reduction(2), what="emitted update")


@pytest.mark.acceptance
def test_jit_matches_eager_and_does_not_recompile() -> None:
    """Jitted calls give the eager updates and counters; after the first call
    compiled the step, the emitting call (the other branch of the same
    program) and further calls compile nothing."""
    ms, params, micro = guide_setup()
    calls = [(micro[0], ms.init(params), params)] + [
        lambda previous, g=g: (g, previous[1], params) for g in (micro[1], micro[0])
    ]
    jit_parity.assert_jit_matches_eager(ms.update, calls, ulps=ELEMENTWISE)


@pytest.mark.acceptance
@pytest.mark.parametrize("every_k", [2, 3, "scheduled"], ids=["k2", "k3", "k-scheduled"])
@pytest.mark.parametrize(("dtype_name", "schedule"), dtypes.trajectory_cases())
def test_trajectory_over_two_full_cycles(dtype_name: Any, schedule: Any, every_k: Any) -> None:
    """Two full accumulation cycles (k = 2, k = 3, and k scheduled 2 then 3)
    around ``sgd(lr, momentum=0.9)`` (lr constant or scheduled, advancing per
    emitted update) in every dtype: each call's update follows the float64
    reference (exact zeros between emissions) and params follow it too."""
    with dtypes.precision(dtype_name) as dtype:
        lr = optax.linear_schedule(0.1, 0.02, transition_steps=2) if schedule else LR
        ref_lr = references.linear_schedule(0.1, 0.02, 2) if schedule else LR
        k_ref = (lambda emitted: 2 if emitted < 1 else 3) if every_k == "scheduled" else every_k
        k_tx = (lambda step: jnp.where(step < 1, 2, 3)) if every_k == "scheduled" else every_k
        calls = 5 if every_k == "scheduled" else 2 * every_k
        params, grads = seeded_layer(steps=calls, seed=61)
        p0, gs = to_jax(params, dtype), [to_jax(g, dtype) for g in grads]
        ms = optax.MultiSteps(optax.sgd(lr, momentum=0.9), every_k_schedule=k_tx)
        steps = trajectories.run(ms, p0, gs)
        want = references.multi_steps_sgd_updates([leaves64(g) for g in gs], k_ref, ref_lr, momentum=0.9)
        emitted = [any(np.any(x != 0) for x in u) for u in want]
        assert [bool(ms.has_updated(s.state)) for s in steps] == emitted
        assert sum(emitted) == 2
        params_ref, p = [], leaves64(p0)
        for u in want:
            p = [a + b for a, b in zip(p, u, strict=True)]
            params_ref.append(p)
        trajectories.assert_follows_in(
            dtype_name, schedule, [s.params for s in steps], params_ref, initial=p0, per_step=tolerances.reduction(3)
        )
        for s, e in zip(steps, emitted, strict=True):
            if not e:
                assert all(not np.any(np.asarray(x)) for x in jax.tree.leaves(s.updates))
        for k, s in enumerate(steps, 1):
            assert_dtype({"params": s.params, "updates": s.updates}, dtype, f"call {k}")


@pytest.mark.negative
def test_edge_inputs_every_call_none_empty_zero_size() -> None:
    """Regression protocol edges, pinned to the baseline: every_k=1 emits on
    every call; a None leaf stays None in the accumulator and the updates; an
    empty PyTree gives empty updates while the counters still advance; a
    zero-size leaf passes."""
    p, g = {"w": jnp.array([1.0, -1.0])}, {"w": jnp.array([1.0, 2.0])}
    one = optax.MultiSteps(optax.sgd(LR), every_k_schedule=1)
    u, s = one.update(g, one.init(p), p)
    assert_close(u["w"], [-0.1, -0.2], dtype=jnp.float32, ulps=ELEMENTWISE, what="k=1")
    assert bool(one.has_updated(s))
    ms = optax.MultiSteps(optax.sgd(LR), every_k_schedule=2)
    with_none = {"w": jnp.ones(2), "b": None}
    state = ms.init(with_none)
    assert state.acc_grads["b"] is None
    assert ms.update(with_none, state, with_none)[0]["b"] is None
    u, s = ms.update({}, ms.init({}), {})
    assert u == {} and int(s.mini_step) == 1
    zero = {"w": jnp.ones((0, 3))}
    assert ms.update(zero, ms.init(zero), zero)[0]["w"].shape == (0, 3)


@pytest.mark.negative
def test_a_nan_micro_batch_poisons_the_emitted_update() -> None:
    """No skipping by default: a NaN in the first micro-batch makes the emitted
    mean NaN there, while the other element is the plain mean."""
    ms, params, _ = guide_setup()
    state = ms.init(params)
    _, state = ms.update({"w": jnp.array([jnp.nan, 2.0])}, state, params)
    u, _ = ms.update({"w": jnp.array([3.0, 4.0])}, state, params)
    assert np.isnan(float(u["w"][0]))
    assert_close(u["w"][1], -0.3, dtype=jnp.float32, ulps=ELEMENTWISE, what="finite element")


@pytest.mark.snapshot
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16], ids=["float32", "bfloat16"])
def test_state_snapshot(data_regression: Any, dtype: Any) -> None:
    """Baseline snapshot (drift, not correctness): ``MultiStepsState`` around
    SGD with momentum (every 2 calls): structure, leaf shapes and dtypes
    (``acc_grads``, the inner trace) and the counters ``mini_step`` and
    ``gradient_step`` after ``init`` and each of three calls, for float32 and
    bfloat16 params. Recorded from optax 0.2.6 by ``./noxw -s update-snapshots``."""
    ms = optax.MultiSteps(optax.sgd(LR, momentum=0.9), every_k_schedule=2)
    params = to_jax({"kernel": np.ones((3, 2)), "bias": np.ones((2,))}, dtype)
    grads = to_jax({"kernel": np.full((3, 2), 0.5), "bias": np.full((2,), -0.5)}, dtype)
    data_regression.check(trajectories.state_signatures(ms, params, [grads] * 3, label="call"))
