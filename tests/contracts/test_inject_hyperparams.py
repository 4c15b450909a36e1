"""Contracts of ``optax.inject_hyperparams`` around ``optax.sgd`` (a neighbour
of the guides' APIs: how a training loop schedules or changes the learning rate
of the guide's SGD step).

Guide: 001_3de679c23eb4e8d7.txt (the SGD step; update = -lr * grad, line 26).
Source read: optax 0.2.6 ``optax/schedules/_inject.py``: numeric
hyperparameters live in ``state.hyperparams``, cast at ``init`` and ``update``
to ``hyperparam_dtype`` or, when None, to the dtype of the **first leaf** of
params (init) / updates (update); schedules are evaluated at ``state.count``
(0 for the first update), which then advances by one.

Inputs: the inner factory's hyperparameters (numbers or schedules). Output: a
``GradientTransformationExtraArgs`` whose state is an
``InjectStatefulHyperparamsState(count, hyperparams, hyperparams_states,
inner_state)``.
"""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hypothesis import given
from hypothesis import strategies as st

from optax_gate.kit import dtypes, guides, recompilation, strategies, trajectories
from optax_gate.kit.references import core as references
from optax_gate.kit.tolerances import ELEMENTWISE, EXACT, assert_close
from optax_gate.kit.trees import assert_dtype, leaves64, seeded_layer, to_jax

pytestmark = pytest.mark.contract(api="optax.inject_hyperparams", guide=guides.SGD_STEP)

MIXED = {"bias": jnp.ones(2, jnp.bfloat16), "kernel": jnp.ones(2, jnp.float32)}


@pytest.mark.golden
def test_guide_step_with_an_injected_learning_rate_and_a_changed_one() -> None:
    """Guide 001's example through ``inject_hyperparams(sgd)(learning_rate=0.1)``
    gives updates [-0.05, 0.05]; setting ``state.hyperparams['learning_rate']``
    to 0.5 gives [-0.25, 0.25] without rebuilding the optimizer."""
    params, grads = {"w": jnp.array([1.0, -1.0])}, {"w": jnp.array([0.5, -0.5])}
    tx = optax.inject_hyperparams(optax.sgd)(learning_rate=0.1)
    state = tx.init(params)
    # 1 ULP: the decimal 0.1 rounded to float32.
    assert_close(state.hyperparams["learning_rate"], 0.1, dtype=jnp.float32, ulps=1, what="stored lr")
    assert_close(
        tx.update(grads, state, params)[0]["w"], [-0.05, 0.05], dtype=jnp.float32, ulps=ELEMENTWISE, what="updates"
    )
    state.hyperparams["learning_rate"] = jnp.asarray(0.5)
    assert_close(
        tx.update(grads, state, params)[0]["w"],
        [-0.25, 0.25],
        dtype=jnp.float32,
        ulps=ELEMENTWISE,
        what="updates at lr 0.5",
    )


@pytest.mark.golden
def test_schedule_is_evaluated_at_the_count_before_each_update() -> None:
    """``linear_schedule(0.1, 0.0, 4)``: updates of a unit gradient are -0.1,
    -0.075, -0.05; the stored learning rate is the one just used and the count
    advances 0 -> 1 -> 2 -> 3."""
    tx = optax.inject_hyperparams(optax.sgd)(learning_rate=optax.linear_schedule(0.1, 0.0, 4))
    p = {"w": jnp.ones(1)}
    state = tx.init(p)
    for k, want in enumerate([0.1, 0.075, 0.05]):
        updates, state = tx.update({"w": jnp.ones(1)}, state, p)
        assert_close(updates["w"], [-want], dtype=jnp.float32, ulps=ELEMENTWISE, what=f"update {k + 1}")
        assert_close(
            state.hyperparams["learning_rate"], want, dtype=jnp.float32, ulps=ELEMENTWISE, what=f"stored lr {k + 1}"
        )
        assert int(state.count) == k + 1


@pytest.mark.negative
@pytest.mark.known_defect("inject-hyperparams-first-leaf-dtype")
def test_hyperparameters_take_the_first_leafs_dtype() -> None:
    """Params {bias: bfloat16, kernel: float32} (bias is the first leaf): the
    learning rate is stored in bfloat16 (0.1 -> 0.10009765625) and the float32
    kernel is updated with that rounded value."""
    tx = optax.inject_hyperparams(optax.sgd)(learning_rate=0.1)
    state = tx.init(MIXED)
    assert state.hyperparams["learning_rate"].dtype == jnp.bfloat16
    updates, _ = tx.update(jax.tree.map(jnp.ones_like, MIXED), state, MIXED)
    assert_close(updates["kernel"], [-0.10009765625] * 2, dtype=jnp.float32, ulps=EXACT, what="kernel update")


@pytest.mark.acceptance
def test_updates_keep_each_leafs_dtype_with_mixed_precision_params() -> None:
    """Guides' acceptance criterion 2 (dtypes match the contract): with params
    {bias: bfloat16, kernel: float32} each update has its leaf's dtype."""
    tx = optax.inject_hyperparams(optax.sgd)(learning_rate=0.1, momentum=0.9)
    updates, _ = tx.update(jax.tree.map(jnp.ones_like, MIXED), tx.init(MIXED), MIXED)
    assert_dtype(updates["bias"], jnp.bfloat16, "bias update")
    assert_dtype(updates["kernel"], jnp.float32, "kernel update")


@pytest.mark.negative
def test_hyperparameters_may_be_passed_positionally() -> None:
    """``inject_hyperparams(sgd)(0.1)`` (positional learning rate) is accepted
    and equals the keyword form: a release that makes hyperparameters
    keyword-only breaks such call sites."""
    p, g = {"w": jnp.array([1.0])}, {"w": jnp.array([0.5])}
    tx = optax.inject_hyperparams(optax.sgd)(0.1)
    assert_close(
        tx.update(g, tx.init(p), p)[0]["w"], [-0.05], dtype=jnp.float32, ulps=ELEMENTWISE, what="positional lr"
    )


@pytest.mark.property
@given(pair=strategies.pytree_pairs(), lr=st.floats(1e-4, 1.0))
def test_update_is_minus_injected_lr_times_gradient(pair: Any, lr: Any) -> None:
    """For any lr and PyTree: the stored lr is lr in float32 and the update is
    ``-lr * g`` (float64 reference ``references.sgd_updates``)."""
    params, grads = to_jax(pair[0]), to_jax(pair[1])
    tx = optax.inject_hyperparams(optax.sgd)(learning_rate=lr)
    state = tx.init(params)
    assert_close(state.hyperparams["learning_rate"], lr, dtype=jnp.float32, ulps=1, what="stored lr")
    updates, _ = tx.update(grads, state, params)
    for got, want in zip(jax.tree.leaves(updates), references.sgd_updates(leaves64(grads), lr), strict=True):
        assert_close(got, want, dtype=jnp.float32, ulps=ELEMENTWISE, what="update")


@pytest.mark.acceptance
@pytest.mark.parametrize(("dtype_name", "schedule"), dtypes.trajectory_cases())
def test_trajectory_of_injected_momentum_sgd(dtype_name: Any, schedule: Any) -> None:
    """Three steps of ``inject_hyperparams(sgd)(learning_rate=lr,
    momentum=0.9)`` in every dtype follow the float64 reference; updates and
    params keep the dtype."""
    with dtypes.precision(dtype_name) as dtype:
        lr = optax.linear_schedule(0.1, 0.02, transition_steps=2) if schedule else 0.1
        ref_lr = references.linear_schedule(0.1, 0.02, 2) if schedule else 0.1
        params, grads = seeded_layer(steps=3, seed=14)
        p0, gs = to_jax(params, dtype), [to_jax(g, dtype) for g in grads]
        steps = trajectories.run(optax.inject_hyperparams(optax.sgd)(learning_rate=lr, momentum=0.9), p0, gs)
        want = references.sgd_trajectory(leaves64(p0), [leaves64(g) for g in gs], ref_lr, momentum=0.9)
        # Hyperparameters are stored in the params' dtype: one more rounding per step.
        trajectories.assert_follows_in(
            dtype_name, schedule, [s.params for s in steps], want, initial=p0, per_step=2 * ELEMENTWISE
        )
        for k, s in enumerate(steps, 1):
            assert_dtype({"params": s.params, "updates": s.updates}, dtype, f"step {k}")


@pytest.mark.snapshot
@pytest.mark.parametrize("params_kind", ["float32", "bfloat16", "mixed"])
def test_state_snapshot(data_regression: Any, params_kind: Any) -> None:
    """Baseline snapshot (drift, not correctness): state of
    ``inject_hyperparams(sgd)(learning_rate=schedule, momentum=0.9)`` (count,
    hyperparams and their dtypes, the schedule's own state, the trace) after
    init and two steps, for float32, bfloat16 and mixed params. Recorded from
    optax 0.2.6 by ``./noxw -s update-snapshots``."""
    params, grads = seeded_layer(steps=2, seed=14)
    cast: Any = {
        "float32": lambda t: to_jax(t, jnp.float32),
        "bfloat16": lambda t: to_jax(t, jnp.bfloat16),
        "mixed": lambda t: {
            "bias": jnp.asarray(t["bias"], jnp.bfloat16),
            "kernel": jnp.asarray(t["kernel"], jnp.float32),
        },
    }[params_kind]
    tx = optax.inject_hyperparams(optax.sgd)(learning_rate=optax.linear_schedule(0.1, 0.0, 4), momentum=0.9)
    p = cast(params)
    data_regression.check(trajectories.state_signatures(tx, p, [cast(g) for g in grads]))


@pytest.mark.acceptance
def test_changing_the_injected_lr_does_not_recompile() -> None:
    """The point of injecting: a jitted update called with a new learning rate
    in the state compiles nothing and uses the new value."""
    p, g = {"w": jnp.array([1.0, -1.0])}, {"w": jnp.array([0.5, -0.5])}
    tx = optax.inject_hyperparams(optax.sgd)(learning_rate=0.1)
    step = jax.jit(tx.update)
    state = tx.init(p)
    with recompilation.counting() as compiled:
        u1, state = step(g, state, p)
        first = compiled.count
        state.hyperparams["learning_rate"] = jnp.asarray(0.5, jnp.float32)
        u2, _ = step(g, state, p)
    assert compiled.count == first, "a new learning rate value recompiled the step"
    assert_close(u1["w"], [-0.05, 0.05], dtype=jnp.float32, ulps=ELEMENTWISE, what="lr 0.1")
    assert_close(u2["w"], [-0.25, 0.25], dtype=jnp.float32, ulps=ELEMENTWISE, what="lr 0.5")


@pytest.mark.negative
def test_edge_inputs_none_leaf_and_empty_tree() -> None:
    """A None leaf stays None in the updates; an empty PyTree gives empty
    updates and keeps the learning rate (float32)."""
    tx = optax.inject_hyperparams(optax.sgd)(learning_rate=0.1)
    with_none = {"a": jnp.ones(2), "b": None}
    assert tx.update(with_none, tx.init(with_none), with_none)[0]["b"] is None
    state = tx.init({})
    assert tx.update({}, state, {})[0] == {}
    assert state.hyperparams["learning_rate"].dtype == jnp.float32


#: Params whose leaves give ``inject_hyperparams`` no float dtype to cast to (0.2.6 reads the first leaf's
#: ``dtype`` attribute: ``None`` for an empty PyTree or a Python scalar leaf), or an integer one, and the
#: mixed-precision PyTree of :data:`MIXED`; built anew per call (under ``jax.enable_x64`` where asked).
DTYPELESS_PARAMS: dict[str, Any] = {
    "empty": dict,
    "python-scalar-then-bf16": lambda: {"a": 1.0, "b": jnp.ones(2, jnp.bfloat16)},
    "int32-then-f32": lambda: {"a": jnp.ones(2, jnp.int32), "b": jnp.ones(2, jnp.float32)},
    "int32-only": lambda: {"a": jnp.ones(2, jnp.int32)},
    "bf16-then-f32": lambda: dict(MIXED),
}


def _inject_one_step(params: Any, *, jit: bool) -> Any:
    """``inject_hyperparams(sgd)(learning_rate=0.1)``: the state after ``init`` and after one update of
    gradients equal to ``params``, and the updates (eager, or ``init`` and ``update`` each under ``jax.jit``)."""
    tx = optax.inject_hyperparams(optax.sgd)(learning_rate=0.1)
    init, update = (jax.jit(tx.init), jax.jit(tx.update)) if jit else (tx.init, tx.update)
    state = init(params)
    updates, after = update(params, state, params)
    return state, after, updates


def _abstract(x: Any) -> str:
    """``float32`` or ``float32 weak`` (JAX's weak type: a Python scalar's)."""
    aval = jax.typeof(x)
    return f"{aval.dtype.name}{' weak' if aval.weak_type else ''}"


@pytest.mark.acceptance
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("x64", [False, True], ids=["x64-off", "x64-on"])
@pytest.mark.parametrize("kind", ["empty", "python-scalar-then-bf16"])
def test_hyperparameters_over_params_without_a_dtype_take_the_default_float_dtype(
    kind: Any, x64: Any, jit: Any
) -> None:
    """Params with no float dtype to read (an empty PyTree; a Python scalar first leaf): the learning rate
    0.1 is stored in JAX's default float dtype, float32, or float64 under ``jax_enable_x64``, before and
    after an update, eagerly and jitted. Sources: the docstring (``hyperparam_dtype``: only when specified
    are hyperparameters cast); JAX's 64-bit mode documentation (a Python float becomes float64). Expected
    value: 0.1 rounded once to that dtype."""
    with jax.enable_x64(x64):
        want = jnp.float64 if x64 else jnp.float32
        state, after, _ = _inject_one_step(DTYPELESS_PARAMS[kind](), jit=jit)
        for what, s in (("after init", state), ("after an update", after)):
            lr = s.hyperparams["learning_rate"]
            assert_dtype(lr, want, f"learning rate {what}")
            assert_close(lr, np.asarray(0.1, want), dtype=want, ulps=EXACT, what=f"learning rate {what}")


@pytest.mark.acceptance
@pytest.mark.parametrize("x64", [False, True], ids=["x64-off", "x64-on"])
def test_a_low_precision_leaf_after_a_python_scalar_leaf_keeps_its_dtype(x64: Any) -> None:
    """Guides' acceptance criterion 2 (dtypes match the contract), eagerly: params ``{a: 1.0, b:
    bfloat16[2]}`` (the first leaf a Python float, so no dtype to cast the learning rate to) give a
    bfloat16 update of ``b``, ``-0.1 * 1`` rounded to bfloat16 (-0.10009765625), as ``optax.sgd(0.1)``
    gives: the injected learning rate stays a weakly typed scalar that takes the leaf's dtype."""
    with jax.enable_x64(x64):
        _, _, updates = _inject_one_step(DTYPELESS_PARAMS["python-scalar-then-bf16"](), jit=False)
        assert_dtype(updates["b"], jnp.bfloat16, "update of the bfloat16 leaf")
        assert_close(
            updates["b"], [-0.10009765625] * 2, dtype=jnp.bfloat16, ulps=EXACT, what="update of the bfloat16 leaf"
        )


@pytest.mark.negative
@pytest.mark.known_defect("inject-hyperparams-integer-first-leaf-truncates")
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_an_integer_first_leaf_truncates_the_learning_rate(jit: Any) -> None:
    """Params ``{a: int32[2], b: float32[2]}`` (an integer leaf first, e.g. a step counter kept among the
    params): the learning rate 0.1 is cast to the int32 first leaf's dtype, stored as 0, and the float32
    leaf's update is 0: it never trains. Expected values: ``int(0.1) == 0`` (the cast the source applies,
    ``optax/schedules/_inject.py`` at 0.2.6)."""
    state, _, updates = _inject_one_step(DTYPELESS_PARAMS["int32-then-f32"](), jit=jit)
    assert_dtype(state.hyperparams["learning_rate"], jnp.int32, "learning rate")
    assert int(state.hyperparams["learning_rate"]) == 0
    assert_close(updates["b"], [0.0, 0.0], dtype=jnp.float32, ulps=EXACT, what="float32 leaf's update")


@pytest.mark.snapshot
@pytest.mark.parametrize("x64", [False, True], ids=["x64-off", "x64-on"])
def test_hyperparameter_types_by_params_kind(data_regression: Any, x64: Any) -> None:
    """Baseline snapshot (drift, not correctness): for each params kind of :data:`DTYPELESS_PARAMS`, eager
    and jitted, the stored learning rate's dtype and weak type after ``init`` and after an update, and the
    updates' dtypes (``inject_hyperparams(sgd)(learning_rate=0.1)``). Recorded from optax 0.2.6 by
    ``./noxw -s update-snapshots``."""
    record = {}
    with jax.enable_x64(x64):
        for kind, make in DTYPELESS_PARAMS.items():
            for jit in (False, True):
                state, after, updates = _inject_one_step(make(), jit=jit)
                lr0, lr1 = state.hyperparams["learning_rate"], after.hyperparams["learning_rate"]
                leaves = ", ".join(f"{name} {_abstract(v)}" for name, v in sorted(updates.items()))
                where = f"{kind}/{'jit' if jit else 'eager'}"
                record[f"{where}/lr"] = f"{_abstract(lr0)}, then {_abstract(lr1)}"
                record[f"{where}/updates"] = leaves or "none"
    data_regression.check(record)
