"""Contracts of ``optax.adam`` (Adam and, with ``nesterov=True``, NAdam).

Source: Kingma & Ba 2015, "Adam: A Method for Stochastic Optimization",
Algorithm 1, with Optax's documented placement of ``eps`` (outside the square
root) and ``eps_root`` (inside), and Dozat 2016 for ``nesterov``; the float64
reference is ``kit.references.optimizers.adam_trajectory``. Source read: optax
0.2.6 ``optax/_src/alias.py`` (``adam`` = ``chain(scale_by_adam,
scale_by_learning_rate)``), ``optax/_src/transform.py`` (``scale_by_adam``:
``mu`` cast to ``mu_dtype`` after each step, ``nu`` never cast; the count an
int32 scalar), ``optax/tree_utils/_tree_math.py`` (``tree_update_moment``,
``tree_bias_correction``: ``1 - decay**count`` computed in float32 and cast
to the moment's dtype) and ``optax/_src/utils.py`` (``canonicalize_dtype``).

Inputs: params and gradients, PyTrees of one structure (None leaves allowed);
learning rate a float or a schedule. Outputs: updates of the gradients'
structure and dtype, and the state ``(ScaleByAdamState(count, mu, nu),
EmptyState())``.

Budget: one Adam step is three elementwise stages (the two moment updates;
bias correction, root and division; learning rate and ``apply_updates``), so
``3 * ELEMENTWISE`` ULPs a step, plus the cancellation in ``1 - b**t``
(``tolerances.bias_correction``; half of it for ``b2``, whose correction
enters under the square root). Golden values use b1 = b2 = 0.5, where
``1 - b**t`` is exact.
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
from optax_gate.kit.references import optimizers as ref
from optax_gate.kit.tolerances import ELEMENTWISE, EXACT, assert_close
from optax_gate.kit.trees import assert_dtype, leaves64, seeded_layer, to_jax

pytestmark = pytest.mark.contract(api="optax.adam", guide=guides.paper("Kingma & Ba 2015, Algorithm 1"))

LR = 0.1
PER_STEP = 3 * ELEMENTWISE


def budget(dtype: Any, step: Any, b1: Any = 0.9, b2: Any = 0.999) -> Any:
    """ULPs of one Adam step ``step`` (see the module docstring)."""
    return PER_STEP + tolerances.bias_correction(b1, step, dtype) + -(-tolerances.bias_correction(b2, step, dtype) // 2)


def one_step(tx: Any, params: Any, grads: Any, state: Any = None) -> Any:
    state = tx.init(params) if state is None else state
    updates, state = tx.update(grads, state, params)
    return updates, state


def two_updates(tx: Any, g1: Any, g2: Any) -> Any:
    params = {"w": jnp.zeros_like(g1)}
    u1, s = one_step(tx, params, {"w": g1})
    u2, _ = one_step(tx, params, {"w": g2}, s)
    return u1["w"], u2["w"]


@pytest.mark.golden
def test_two_steps_with_bias_correction() -> None:
    """b1 = b2 = 0.5, eps = 0; g1 = [5, -5], g2 = [1, -1]. Step 1:
    m^ = 2.5/0.5 = 5, v^ = 12.5/0.5 = 25, update -lr * 5/5 = [-0.1, 0.1].
    Step 2: m = 0.5*2.5 + 0.5*1 = 1.75, m^ = 1.75/0.75 = 7/3;
    v = 0.5*12.5 + 0.5*1 = 6.75, v^ = 6.75/0.75 = 9; update -lr * (7/3)/3 =
    [-7/90, 7/90]."""
    u1, u2 = two_updates(optax.adam(LR, b1=0.5, b2=0.5, eps=0.0), jnp.array([5.0, -5.0]), jnp.array([1.0, -1.0]))
    assert_close(u1, [-0.1, 0.1], dtype=jnp.float32, ulps=PER_STEP, what="step 1")
    assert_close(u2, [-7 / 90, 7 / 90], dtype=jnp.float32, ulps=2 * PER_STEP, what="step 2")


@pytest.mark.golden
@pytest.mark.parametrize(
    ("eps", "eps_root", "expected"), [(1.0, 0.0, -0.075), (0.0, 16.0, -0.06)], ids=["eps-outside", "eps_root-inside"]
)
def test_placement_of_eps_and_eps_root(eps: Any, eps_root: Any, expected: Any) -> None:
    """One step, b1 = b2 = 0.5, g = 3 (m^ = 3, v^ = 9): ``eps`` outside the
    root gives -lr * 3/(3 + 1) = -0.075; ``eps_root`` inside gives
    -lr * 3/sqrt(9 + 16) = -0.06."""
    u1, _ = two_updates(optax.adam(LR, b1=0.5, b2=0.5, eps=eps, eps_root=eps_root), jnp.array([3.0]), jnp.array([3.0]))
    assert_close(u1, [expected], dtype=jnp.float32, ulps=PER_STEP, what="update")


@pytest.mark.golden
def test_nesterov_first_step() -> None:
    """NAdam (Dozat 2016) as Optax documents it, b1 = b2 = 0.5, eps = 0,
    g = 5: m = 2.5, m^ = 0.5 * 2.5/(1 - 0.25) + 0.5 * 5/0.5 = 20/3, v^ = 25,
    update -lr * (20/3)/5 = -2/15."""
    u1, _ = two_updates(optax.adam(LR, b1=0.5, b2=0.5, eps=0.0, nesterov=True), jnp.array([5.0]), jnp.array([5.0]))
    assert_close(u1, [-2 / 15], dtype=jnp.float32, ulps=PER_STEP, what="update")


#: Shapes of the generated gradients: the suite's layer (kernel 3x2, bias 2),
#: fixed so that the property compiles once; values vary.
LAYER = {"kernel": np.zeros((3, 2)), "bias": np.zeros(2)}


@pytest.mark.property
@given(g1=strategies.like(LAYER), g2=strategies.like(LAYER), lr=st.floats(1e-4, 1.0), nesterov=st.booleans())
def test_two_steps_match_float64_reference(g1: Any, g2: Any, lr: Any, nesterov: Any) -> None:
    """Two steps on generated gradients (any finite values, zeros included)
    follow ``adam_trajectory``; the updates keep the gradients' structure."""
    g1, g2 = to_jax(g1), to_jax(g2)
    tx = optax.adam(lr, nesterov=nesterov)
    u1, s = one_step(tx, g1, g1)
    u2, _ = one_step(tx, g1, g2, s)
    _, want = ref.adam_trajectory(leaves64(g1), [leaves64(g1), leaves64(g2)], lr, nesterov=nesterov)
    for k, (got, exp) in enumerate(zip((u1, u2), want, strict=True), 1):
        assert jax.tree.structure(got) == jax.tree.structure(g1)
        for a, e in zip(jax.tree.leaves(got), exp, strict=True):
            assert_close(a, e, dtype=jnp.float32, ulps=k * budget("float32", 1), scale=lr, what=f"update {k}")


@pytest.mark.acceptance
def test_state_structure_and_mu_dtype() -> None:
    """Init state: an int32 count 0 and zero ``mu``/``nu`` of the params'
    shapes and dtypes; ``mu_dtype=bfloat16`` keeps ``mu`` bfloat16 after a
    step while ``nu`` and the updates stay float32."""
    params = {"kernel": jnp.ones((3, 2)), "bias": jnp.ones((2,), jnp.bfloat16)}
    adam_state, empty = optax.adam(LR).init(params)
    assert empty == optax.EmptyState()
    assert adam_state.count.dtype == jnp.int32 and int(adam_state.count) == 0
    for tree in (adam_state.mu, adam_state.nu):
        assert [(x.shape, x.dtype) for x in jax.tree.leaves(tree)] == [((2,), jnp.bfloat16), ((3, 2), jnp.float32)]
        for x in jax.tree.leaves(tree):
            assert_close(x, np.zeros(x.shape), dtype=x.dtype, ulps=EXACT, what="initial moment")
    tx = optax.adam(LR, mu_dtype=jnp.bfloat16)
    p = {"w": jnp.ones(2)}
    updates, (state, _) = one_step(tx, p, {"w": jnp.array([0.5, -0.5])})
    assert (
        state.mu["w"].dtype == jnp.bfloat16 and state.nu["w"].dtype == jnp.float32 and updates["w"].dtype == jnp.float32
    )
    assert int(state.count) == 1


@pytest.mark.negative
@pytest.mark.known_defect("adam-state-dtype-follows-gradients")
def test_state_dtype_changes_with_float32_gradients_and_breaks_scan() -> None:
    """bfloat16 params with float32 gradients (mixed precision): after one
    step ``mu`` and ``nu`` are float32 (not the init's bfloat16), so carrying
    the state through ``jax.lax.scan`` raises TypeError."""
    tx = optax.adam(LR)
    params = {"w": jnp.ones(2, jnp.bfloat16)}
    _, (state, _) = one_step(tx, params, {"w": jnp.ones(2, jnp.float32)})
    assert (state.mu["w"].dtype, state.nu["w"].dtype) == (jnp.float32, jnp.float32)

    def body(s: Any, g: Any) -> Any:
        u, s = tx.update(g, s, params)
        return s, u["w"]

    with pytest.raises(TypeError, match=pinned.SCAN_CARRY_TYPES):
        jax.lax.scan(body, tx.init(params), {"w": jnp.ones((3, 2), jnp.float32)})


@pytest.mark.negative
@pytest.mark.known_defect("adam-float16-zero-gradient-nan")
def test_zero_gradients_in_low_precision() -> None:
    """All-zero gradients: float32 and bfloat16 (whose range holds 1e-8) give
    zero updates; float16 gives NaN, since the default eps = 1e-8 rounds to 0
    in float16 (0 / (sqrt(0) + 0)); an eps float16 can hold (1e-4) gives 0."""
    for dtype in (jnp.float32, jnp.bfloat16):
        updates, _ = one_step(optax.adam(LR), {"w": jnp.ones(3, dtype)}, {"w": jnp.zeros(3, dtype)})
        assert_close(updates["w"], np.zeros(3), dtype=dtype, ulps=EXACT, what=f"{jnp.dtype(dtype).name} update")
    p16, g16 = {"w": jnp.ones(3, jnp.float16)}, {"w": jnp.zeros(3, jnp.float16)}
    assert np.isnan(np.asarray(one_step(optax.adam(LR), p16, g16)[0]["w"], np.float64)).all()
    assert_close(
        one_step(optax.adam(LR, eps=1e-4), p16, g16)[0]["w"],
        np.zeros(3),
        dtype=jnp.float16,
        ulps=EXACT,
        what="eps 1e-4",
    )


@pytest.mark.acceptance
def test_jit_matches_eager_and_does_not_recompile() -> None:
    """Two jitted steps equal two eager ones; the second jitted step (same
    shapes, new values) compiles nothing."""
    params, grads = seeded_layer(steps=2, seed=3)
    p, (g1, g2) = to_jax(params), [to_jax(g) for g in grads]
    tx = optax.adam(LR)
    jit_parity.assert_jit_matches_eager(
        lambda g, s: tx.update(g, s, p), [(g1, tx.init(p)), lambda previous: (g2, previous[1])], ulps=ELEMENTWISE
    )


@pytest.mark.acceptance
@pytest.mark.parametrize("nesterov", [False, True], ids=["adam", "nadam"])
@pytest.mark.parametrize(("dtype_name", "schedule"), dtypes.trajectory_cases())
def test_trajectory(dtype_name: Any, schedule: Any, nesterov: Any) -> None:
    """Three steps with a constant or linearly decaying learning rate in every
    dtype follow ``adam_trajectory``; params, updates and moments keep the
    params' dtype."""
    with dtypes.precision(dtype_name) as dtype:
        lr = optax.linear_schedule(0.1, 0.02, transition_steps=2) if schedule else LR
        ref_lr = references.linear_schedule(0.1, 0.02, 2) if schedule else LR
        params, grads = seeded_layer(steps=3, seed=41)
        p0, gs = to_jax(params, dtype), [to_jax(g, dtype) for g in grads]
        steps = trajectories.run(optax.adam(lr, nesterov=nesterov), p0, gs)
        want, _ = ref.adam_trajectory(leaves64(p0), [leaves64(g) for g in gs], ref_lr, nesterov=nesterov)
        trajectories.assert_follows_in(
            dtype_name, schedule, [s.params for s in steps], want, initial=p0, per_step=budget(dtype_name, 1)
        )
        for k, s in enumerate(steps, 1):
            assert_dtype(
                {"params": s.params, "updates": s.updates, "state": s.state}, dtype, f"step {k}", ignore_integers=True
            )


@pytest.mark.negative
def test_edge_inputs_none_zero_size_one_element() -> None:
    """A None leaf stays None in the updates, ``mu`` and ``nu``; a zero-size
    leaf gives an empty update; a one-element leaf gets ``-lr * g/(|g| + eps)``
    on the first step; an empty PyTree gives empty updates and a state with
    only the count."""
    tx = optax.adam(LR)
    updates, (state, _) = one_step(tx, {"w": jnp.ones(2), "b": None}, {"w": jnp.ones(2), "b": None})
    assert updates["b"] is None and state.mu["b"] is None and state.nu["b"] is None
    assert one_step(tx, {"w": jnp.ones((0, 3))}, {"w": jnp.ones((0, 3))})[0]["w"].shape == (0, 3)
    one, _ = one_step(tx, {"w": jnp.ones(1)}, {"w": jnp.array([-2.0])})
    assert_close(one["w"], [LR * 2.0 / (2.0 + 1e-8)], dtype=jnp.float32, ulps=budget("float32", 1), what="one element")
    updates, (state, _) = one_step(tx, {}, {})
    assert updates == {} and jax.tree.leaves(state) == [state.count]


@pytest.mark.negative
def test_gradients_of_another_shape_or_structure_raise() -> None:
    """Gradients of another shape than the state raise TypeError (broadcast
    in the moment update); of another structure, ValueError (PyTree
    structure); an unknown ``mu_dtype`` raises TypeError when the optimizer
    is built."""
    tx = optax.adam(LR)
    state = tx.init({"w": jnp.ones(2)})
    with pytest.raises(TypeError, match=pinned.INCOMPATIBLE_SHAPES):
        tx.update({"w": jnp.ones(3)}, state)
    with pytest.raises(ValueError, match=pinned.PYTREE_STRUCTURE):
        tx.update({"v": jnp.ones(2)}, state)
    with pytest.raises(TypeError, match=pinned.DTYPE_NOT_UNDERSTOOD):
        optax.adam(LR, mu_dtype="not-a-dtype")


@pytest.mark.snapshot
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16], ids=["float32", "bfloat16"])
@pytest.mark.parametrize("variant", ["plain", "mu_dtype"])
def test_state_snapshot(data_regression: Any, variant: Any, dtype: Any) -> None:
    """Baseline snapshot (drift, not correctness): the state's structure, leaf
    paths, shapes, dtypes and count after ``init`` and two steps, for
    float32 and bfloat16 params, plain and with ``mu_dtype=bfloat16``.
    Recorded from optax 0.2.6 by ``./noxw -s update-snapshots``."""
    tx = optax.adam(LR, mu_dtype=jnp.bfloat16 if variant == "mu_dtype" else None)
    params, grads = seeded_layer(steps=2, seed=3)
    data_regression.check(trajectories.state_signatures(tx, to_jax(params, dtype), [to_jax(g, dtype) for g in grads]))
