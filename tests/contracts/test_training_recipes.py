"""Contracts of the combinations teams train with: ``adamw`` with a
``warmup_cosine_decay_schedule`` behind ``clip_by_global_norm``, the same
inside ``MultiSteps``, carried through ``jax.lax.scan``; None gradient leaves,
zero gradients in low precision, a zero clipping threshold, and
``inject_hyperparams(adam)`` against ``adam``.

Source of the expected values: the float64 reference of the whole recipe,
``references_wrappers.adamw_recipe`` (Pascanu et al. 2013 clipping; Kingma &
Ba 2015, Algorithm 1, with Optax's documented ``eps`` outside the root;
Loshchilov & Hutter 2019 decoupled decay, multiplied by the learning rate as
Optax documents; ``references_wrappers.warmup_cosine_decay``), and closed-form
numbers. Sources read to pin the rest (optax 0.2.6): ``_src/alias.py``
(``adamw = chain(scale_by_adam, add_decayed_weights, scale_by_learning_rate)``),
``_src/transform.py`` (``scale_by_adam``: ``m / (sqrt(v + eps_root) + eps)`` in
the params' dtype; moments ``None`` where the gradient is None),
``tree_utils/_tree_math.py`` (``tree_update_moment``/``bias_correction``),
``transforms/_clipping.py`` (``clip_by_global_norm``: ``select(norm <
max_norm, g, g / norm * max_norm)``), ``transforms/_accumulation.py``
(``MultiSteps``), ``schedules/_schedule.py``, ``schedules/_join.py``,
``schedules/_inject.py`` (hyperparameters cast to the first leaf's dtype).

Shapes: the small layer of ``kit.trees.seeded_layer`` (kernel (3, 2), bias (2,)).
"""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hypothesis import given
from hypothesis import strategies as st

from optax_gate.kit import dtypes, jit_parity, pinned, strategies, tolerances, trajectories
from optax_gate.kit.jit_parity import updates_only
from optax_gate.kit.references import wrappers as references_wrappers
from optax_gate.kit.tolerances import ELEMENTWISE, assert_close
from optax_gate.kit.trees import assert_dtype, leaves64, seeded_layer, signature, to_jax

RECIPE = "recipe:adamw+warmup-cosine+clip"
MULTI = "recipe:multisteps(adamw+warmup-cosine+clip)"
SOURCE = (
    "paper: Kingma & Ba 2015 Alg. 1; Loshchilov & Hutter 2019 Alg. 2; Pascanu et al. 2013 Alg. 1 (Optax's adamw recipe)"
)
pytestmark = pytest.mark.contract(api=RECIPE, guide=SOURCE)


def contract(api: Any, guide: Any = SOURCE) -> Any:
    return pytest.mark.contract(api=api, guide=guide)


SCHEDULE: dict[str, Any] = dict(init_value=1e-3, peak_value=1e-2, warmup_steps=2, decay_steps=6, end_value=1e-3)
WD, MAX_NORM = 0.1, 1.0
#: Per step: the global norm over the layer's 8 elements, then Adam's two
#: moment recurrences, bias corrections, root and division (2 x ELEMENTWISE),
#: then decay and learning rate.
PER_STEP = tolerances.reduction(8) + 2 * ELEMENTWISE


def recipe(lr: Any = None, wd: Any = WD, max_norm: Any = MAX_NORM, **adam: Any) -> Any:
    lr = optax.warmup_cosine_decay_schedule(**SCHEDULE) if lr is None else lr
    return optax.chain(optax.clip_by_global_norm(max_norm), optax.adamw(lr, weight_decay=wd, **adam))


def ref_lr(scheduled: Any, constant: Any = 1e-2) -> Any:
    return references_wrappers.warmup_cosine_decay(**SCHEDULE) if scheduled else constant


def scan_run(tx: Any, params: Any, grads_per_step: Any) -> Any:
    """Every step inside one ``jax.lax.scan`` (one compilation); returns the
    params after each step (stacked) and the final state."""
    stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *grads_per_step)

    def body(carry: Any, g: Any) -> Any:
        p, s = carry
        u, s = tx.update(g, s, p)
        p = optax.apply_updates(p, u)
        return (p, s), p

    (_, state), ps = jax.jit(lambda p, gs: jax.lax.scan(body, (p, tx.init(p)), gs))(params, stacked)
    return [jax.tree.map(lambda x, k=k: x[k], ps) for k in range(len(grads_per_step))], state


@pytest.mark.golden
def test_learning_rate_read_off_a_constant_sign_gradient() -> None:
    """With a constant gradient Adam's direction is sign(g) at every step
    (m_hat = g, v_hat = g**2), so with no weight decay the update is
    ``-lr_k * sign(g)``: lr_k = 1e-3, 5.5e-3 (warmup), 1e-2 (peak at step 2),
    1e-3 + 9e-3 * (1 + cos(pi t / 4)) / 2 for t = 1, 2, 3, then 1e-3 at the
    end and after it."""
    g = {"w": jnp.array([3.0, -4.0])}  # norm 5: clipped to [0.6, -0.8]
    params = {"w": jnp.array([1.0, -1.0])}
    ps, _ = scan_run(recipe(wd=0.0), params, [g] * 8)
    lrs = [1e-3, 5.5e-3, 1e-2] + [1e-3 + 9e-3 * (1 + np.cos(np.pi * t / 4)) / 2 for t in (1, 2, 3)] + [1e-3, 1e-3]
    prev = np.asarray(params["w"], np.float64)
    for k, lr in enumerate(lrs, 1):
        got = np.asarray(ps[k - 1]["w"], np.float64)
        # Measured against the params' magnitude (1): each params value is rounded once.
        assert_close(
            got - prev,
            -lr * np.array([1.0, -1.0]),
            dtype=jnp.float32,
            ulps=PER_STEP,
            scale=1.0,
            what=f"update at step {k}",
        )
        prev = got


@pytest.mark.golden
def test_first_step_is_sign_plus_decay_times_lr() -> None:
    """Step 0: lr = init_value = 1e-3; Adam's first direction is sign(g), the
    decay is added before the learning rate: update = -1e-3 * (sign(g) + 0.1 *
    p) = [-1.1e-3, 1.1e-3] for p = [1, -1], g = [3, -4]. Budget: the step's
    own plus ``tolerances.bias_correction(0.999, 1, float32)`` (float32's
    rounding of b2 in ``1 - b2``, seen directly in an update not masked by the
    params)."""
    tx = recipe()
    params = {"w": jnp.array([1.0, -1.0])}
    updates, _ = jax.jit(tx.update)({"w": jnp.array([3.0, -4.0])}, tx.init(params), params)
    assert_close(
        updates["w"],
        [-1.1e-3, 1.1e-3],
        dtype=jnp.float32,
        ulps=PER_STEP + tolerances.bias_correction(0.999, 1, "float32"),
        what="first update",
    )


@pytest.mark.property
@given(
    values=st.lists(st.tuples(strategies.arrays((3, 2)), strategies.arrays((2,))), min_size=3, max_size=3),
    lr=st.floats(1e-4, 1e-1),
    wd=st.floats(0.0, 0.5),
    max_norm=st.floats(1e-2, 1e3),
)
def test_three_steps_match_the_float64_recipe(values: Any, lr: Any, wd: Any, max_norm: Any) -> None:
    """Any three gradients, learning rate, weight decay and threshold: three
    steps of clip + adamw (hyperparameters traced, one compilation) follow
    ``references_wrappers.adamw_recipe``."""
    params, _ = seeded_layer(steps=0, seed=71)
    grads = [{"kernel": k, "bias": b} for k, b in values]
    got = _traced_recipe(
        to_jax(params), [to_jax(g) for g in grads], jnp.float32(lr), jnp.float32(wd), jnp.float32(max_norm)
    )
    p32 = leaves64(to_jax(params))
    want = references_wrappers.adamw_recipe(
        p32,
        [leaves64(to_jax(g)) for g in grads],
        float(np.float32(lr)),
        weight_decay=float(np.float32(wd)),
        max_norm=float(np.float32(max_norm)),
    )
    trajectories.assert_follows(got, want, dtype="float32", initial=to_jax(params), per_step=PER_STEP)


@jax.jit
def _traced_recipe(params: Any, grads: Any, lr: Any, wd: Any, max_norm: Any) -> Any:
    tx = optax.chain(optax.clip_by_global_norm(max_norm), optax.adamw(lr, weight_decay=wd))
    state, out = tx.init(params), []
    for g in grads:
        u, state = tx.update(g, state, params)
        params = optax.apply_updates(params, u)
        out.append(params)
    return out


@pytest.mark.acceptance
@pytest.mark.parametrize(("dtype_name", "schedule"), dtypes.trajectory_cases())
def test_trajectory_of_the_recipe(dtype_name: Any, schedule: Any) -> None:
    """Four steps (scanned, one compilation) of clip(1) + adamw(lr, wd=0.1),
    lr constant 1e-2 or warmup-cosine, gradients of norm ~4 so every step
    clips, in every dtype: params follow the float64 recipe; dtypes kept."""
    with dtypes.precision(dtype_name) as dtype:
        params, grads = seeded_layer(steps=4, seed=72, scale=2.0)
        p0, gs = to_jax(params, dtype), [to_jax(g, dtype) for g in grads]
        ps, state = scan_run(recipe(None if schedule else 1e-2), p0, gs)
        want = references_wrappers.adamw_recipe(
            leaves64(p0), [leaves64(g) for g in gs], ref_lr(schedule), weight_decay=WD, max_norm=MAX_NORM
        )
        trajectories.assert_follows_in(dtype_name, schedule, ps, want, initial=p0, per_step=PER_STEP)
        assert_dtype(ps, dtype, "params")
        assert_dtype(state, dtype, "state", ignore_integers=True)


@contract(MULTI)
@pytest.mark.acceptance
@pytest.mark.parametrize(("dtype_name", "schedule"), dtypes.trajectory_cases())
def test_trajectory_of_the_recipe_in_multi_steps(dtype_name: Any, schedule: Any) -> None:
    """Six calls of ``MultiSteps(recipe, every_k_schedule=2)`` (scanned) in
    every dtype: params stay put on odd calls and follow the float64 recipe
    fed the mean of each pair on even calls (the schedule advances per
    emitted update)."""
    with dtypes.precision(dtype_name) as dtype:
        params, grads = seeded_layer(steps=6, seed=73, scale=2.0)
        p0, gs = to_jax(params, dtype), [to_jax(g, dtype) for g in grads]
        ps, _ = scan_run(optax.MultiSteps(recipe(None if schedule else 1e-2), every_k_schedule=2), p0, gs)
        emitted = references_wrappers.adamw_recipe(
            leaves64(p0),
            references_wrappers.multi_steps_means([leaves64(g) for g in gs], 2),
            ref_lr(schedule),
            weight_decay=WD,
            max_norm=MAX_NORM,
        )
        want = [leaves64(p0), emitted[0], emitted[0], emitted[1], emitted[1], emitted[2]]
        trajectories.assert_follows_in(dtype_name, schedule, ps, want, initial=p0, per_step=PER_STEP)
        for a, b in zip(jax.tree.leaves(ps[0]), jax.tree.leaves(p0), strict=True):
            np.testing.assert_array_equal(np.asarray(a, np.float64), np.asarray(b, np.float64))
        assert_dtype(ps, dtype, "params")


@pytest.mark.acceptance
@pytest.mark.parametrize(
    "variant",
    [
        pytest.param("plain", marks=contract("recipe:scan-carry")),
        pytest.param("multi-steps", marks=contract("recipe:scan-carry(multisteps)")),
        pytest.param(
            "mu-bfloat16",
            marks=[contract("recipe:scan-carry(mu-bfloat16)"), pytest.mark.configuration(mu_dtype="bfloat16")],
        ),
    ],
)
@pytest.mark.parametrize("dtype_name", ["float32", "bfloat16", "float16"])
def test_scan_carry_keeps_its_dtypes_and_structure(dtype_name: Any, variant: Any) -> None:
    """``jax.lax.scan`` requires the carry's PyTree structure and leaf dtypes
    to be the same after every step; pinned at the baseline: the recipe, the
    recipe in MultiSteps (k=2) and the recipe with ``mu_dtype=bfloat16`` are
    carried through four steps for float32, bfloat16 and float16 params, and
    the final state has the init state's structure, paths and dtypes; params
    stay finite."""
    dtype = jnp.dtype(dtype_name)
    params, grads = seeded_layer(steps=4, seed=74, scale=2.0)
    tx = recipe(mu_dtype=jnp.bfloat16) if variant == "mu-bfloat16" else recipe()
    tx = optax.MultiSteps(tx, every_k_schedule=2) if variant == "multi-steps" else tx
    p0 = to_jax(params, dtype)
    ps, state = scan_run(tx, p0, [to_jax(g, dtype) for g in grads])

    def shape_of(sig: Any) -> Any:
        return sig["structure"], {k: v.split("=")[0] for k, v in sig["leaves"].items()}

    assert shape_of(signature(state)) == shape_of(signature(tx.init(p0)))
    assert_dtype(ps, dtype, "params")
    assert all(bool(jnp.all(jnp.isfinite(x))) for x in jax.tree.leaves(ps))


@contract("recipe:none-gradients")
@pytest.mark.golden
def test_a_none_gradient_leaf_gives_a_none_update() -> None:
    """Gradients {kernel: g, bias: None} for params with both arrays: the bias
    update is None; the kernel follows the float64 recipe run on the kernel
    alone (the global norm is taken over the leaves present)."""
    params, grads = seeded_layer(steps=1, seed=75, scale=2.0)
    p0, g = to_jax(params), {"kernel": to_jax(grads[0]["kernel"]), "bias": None}
    tx = recipe()
    updates, _ = tx.update(g, tx.init(p0), p0)
    assert updates["bias"] is None
    want = references_wrappers.adamw_recipe(
        leaves64(p0["kernel"]), [leaves64(g["kernel"])], ref_lr(True), weight_decay=WD, max_norm=MAX_NORM
    )[0][0]
    assert_close(
        np.asarray(p0["kernel"], np.float64) + np.asarray(updates["kernel"], np.float64),
        want,
        dtype=jnp.float32,
        ulps=PER_STEP,
        scale=float(np.max(np.abs(want))),
        what="kernel",
    )


@contract("recipe:none-gradients")
@pytest.mark.negative
@pytest.mark.known_defect("adam-none-gradient-drops-moments")
def test_a_none_gradient_leaf_drops_its_moments_and_breaks_the_next_step() -> None:
    """After a step with a None bias gradient the Adam state's mu and nu hold
    None for the bias (init held arrays): the state's structure changed, so
    ``jax.lax.scan`` cannot carry it and the next step with a full gradient
    raises TypeError (None in the moment update)."""
    params, grads = seeded_layer(steps=2, seed=75)
    p0 = to_jax(params)
    tx = recipe()
    state0 = tx.init(p0)
    _, state1 = tx.update({"kernel": to_jax(grads[0]["kernel"]), "bias": None}, state0, p0)
    adam = state1[1][0]
    assert adam.mu["bias"] is None and adam.nu["bias"] is None
    assert jax.tree.structure(state1) != jax.tree.structure(state0)
    with pytest.raises(TypeError, match=pinned.NONE_OPERAND):
        tx.update(to_jax(grads[1]), state1, p0)


@contract("optax.apply_updates")
@pytest.mark.negative
def test_apply_updates_refuses_a_none_update_for_an_array_param() -> None:
    """``optax.apply_updates`` with a None update where the param is an array
    raises TypeError: a None gradient leaf has to be handled before the
    update is applied."""
    with pytest.raises(TypeError, match=pinned.NONE_OPERAND):
        optax.apply_updates({"w": jnp.ones(2), "b": jnp.ones(2)}, {"w": jnp.ones(2), "b": None})


@contract("recipe:zero-gradients-low-precision")
@pytest.mark.negative
@pytest.mark.parametrize(
    "dtype_name",
    ["float32", "bfloat16", pytest.param("float16", marks=pytest.mark.known_defect("adam-float16-zero-gradient-nan"))],
)
def test_zero_gradients_in_low_precision(dtype_name: Any) -> None:
    """Two steps of all-zero gradients, lr 1e-2, wd 0.1: in float32 and
    bfloat16 Adam's direction is 0 / (0 + eps) = 0 and the update is the decay
    alone, -1e-3 * p; in float16 eps = 1e-8 underflows to 0, the direction is
    0 / 0 and every update is NaN (pinned defect)."""
    dtype = jnp.dtype(dtype_name)
    params, _ = seeded_layer(steps=0, seed=76)
    p = to_jax(params, dtype)
    tx, zeros = recipe(1e-2), jax.tree.map(jnp.zeros_like, to_jax(params, dtype))
    state, update = tx.init(p), jax.jit(tx.update)
    for k in (1, 2):
        updates, state = update(zeros, state, p)
        assert_dtype(updates, dtype, f"updates at step {k}")
        if dtype_name == "float16":
            assert all(bool(jnp.all(jnp.isnan(x))) for x in jax.tree.leaves(updates)), f"step {k}"
            continue
        for got, want in zip(jax.tree.leaves(updates), leaves64(p), strict=True):
            assert_close(got, -1e-3 * want, dtype=dtype, ulps=2 * ELEMENTWISE, what=f"step {k}")
        p = optax.apply_updates(p, updates)


@contract("recipe:zero-clip-threshold")
@pytest.mark.configuration(max_norm="0")
@pytest.mark.negative
def test_a_zero_clipping_threshold_zeroes_the_gradient() -> None:
    """clip_by_global_norm(0.0) scales a non-zero gradient by 0 / norm = 0, so
    Adam's direction is 0 and the recipe's update is the decay alone:
    -lr * wd * p = -1e-3 * p (lr 1e-2)."""
    params, grads = seeded_layer(steps=1, seed=77)
    p, g = to_jax(params), to_jax(grads[0])
    tx = recipe(1e-2, max_norm=0.0)
    updates, _ = tx.update(g, tx.init(p), p)
    for got, want in zip(jax.tree.leaves(updates), leaves64(p), strict=True):
        assert_close(got, -1e-3 * want, dtype=jnp.float32, ulps=2 * ELEMENTWISE, what="update")


@contract("recipe:zero-clip-threshold")
@pytest.mark.configuration(max_norm="0")
@pytest.mark.negative
@pytest.mark.known_defect("clip-by-global-norm-zero-threshold-nan")
def test_a_zero_threshold_with_a_zero_gradient_gives_nan() -> None:
    """clip_by_global_norm(0.0) on an all-zero gradient: ``0 < 0`` is False, so
    it scales by 0 / 0: NaN everywhere, and the recipe's update is NaN."""
    clip = optax.clip_by_global_norm(0.0)
    out, _ = clip.update({"w": jnp.zeros(2)}, clip.init({"w": jnp.zeros(2)}))
    assert bool(jnp.all(jnp.isnan(out["w"])))
    params, _ = seeded_layer(steps=0, seed=77)
    p = to_jax(params)
    tx = recipe(1e-2, max_norm=0.0)
    updates, _ = tx.update(jax.tree.map(jnp.zeros_like, p), tx.init(p), p)
    assert all(bool(jnp.all(jnp.isnan(x))) for x in jax.tree.leaves(updates))


@contract("recipe:inject_hyperparams(adam)")
@pytest.mark.acceptance
def test_inject_hyperparams_adam_stays_with_adam_for_50_steps() -> None:
    """Fifty scanned steps of ``inject_hyperparams(adam)(learning_rate=1e-2)``
    and ``adam(1e-2)`` on the same float32 gradients: both follow the float64
    Adam reference within ``tolerances.accumulated(50, 2 * ELEMENTWISE)`` and
    differ from each other by at most ``tolerances.INJECT_DRIFT`` ULPs (see
    its reason: injected hyperparameters are float32 arrays, so ``1 - b1`` and
    ``1 - b2`` are rounded differently)."""
    params, grads = seeded_layer(steps=50, seed=78)
    p0, gs = to_jax(params), [to_jax(g) for g in grads]
    injected, _ = scan_run(optax.inject_hyperparams(optax.adam)(learning_rate=1e-2), p0, gs)
    plain, _ = scan_run(optax.adam(1e-2), p0, gs)
    want = references_wrappers.adamw_recipe(leaves64(p0), [leaves64(g) for g in gs], 1e-2)
    for run in (injected, plain):
        trajectories.assert_follows(run, want, dtype="float32", initial=p0, per_step=2 * ELEMENTWISE)
    scale = max(float(np.max(np.abs(x))) for step in want for x in step)
    for k, (a, b) in enumerate(zip(injected, plain, strict=True), 1):
        for x, y in zip(leaves64(a), leaves64(b), strict=True):
            assert_close(
                x, y, dtype=jnp.float32, ulps=tolerances.INJECT_DRIFT, scale=scale, what=f"injected vs adam at step {k}"
            )


@contract("recipe:inject_hyperparams(adam)")
@pytest.mark.negative
@pytest.mark.known_defect("inject-hyperparams-bfloat16-b2-rounds-to-one")
def test_inject_hyperparams_adam_with_bfloat16_params_gives_nan() -> None:
    """bfloat16 params: inject_hyperparams stores b2 = 0.999 in bfloat16,
    which is 1.0; the second-moment bias correction 1 - b2**t is 0 and the
    first update is NaN, while ``adam`` itself (b2 a Python float) is finite."""
    params, grads = seeded_layer(steps=1, seed=79)
    p, g = to_jax(params, jnp.bfloat16), to_jax(grads[0], jnp.bfloat16)
    tx = optax.inject_hyperparams(optax.adam)(learning_rate=1e-2)
    state = tx.init(p)
    assert float(state.hyperparams["b2"]) == 1.0
    updates, _ = tx.update(g, state, p)
    assert all(bool(jnp.all(jnp.isnan(x))) for x in jax.tree.leaves(updates))
    plain = optax.adam(1e-2)
    assert all(bool(jnp.all(jnp.isfinite(x))) for x in jax.tree.leaves(plain.update(g, plain.init(p), p)[0]))


@pytest.mark.snapshot
@pytest.mark.parametrize("variant", ["recipe", pytest.param("multi-steps", marks=contract(MULTI))])
@pytest.mark.parametrize("dtype_name", ["float32", "bfloat16"])
def test_state_snapshot(data_regression: Any, dtype_name: Any, variant: Any) -> None:
    """Baseline snapshot (drift, not correctness): the recipe's state (and
    MultiSteps' around it) after init and two steps: Adam's count, mu and nu
    dtypes, the schedule's count, MultiSteps' accumulator dtype. Recorded from
    optax 0.2.6 by ``./noxw -s update-snapshots``."""
    params, grads = seeded_layer(steps=2, seed=80)
    dtype = jnp.dtype(dtype_name)
    tx = recipe() if variant == "recipe" else optax.MultiSteps(recipe(), every_k_schedule=2)
    data_regression.check(trajectories.state_signatures(tx, to_jax(params, dtype), [to_jax(g, dtype) for g in grads]))


@pytest.mark.acceptance
def test_jit_matches_eager_and_does_not_recompile() -> None:
    """Three steps of the recipe: jitted updates equal eager ones within the
    recipe's one-step budget, and after the first jitted step nothing
    compiles again (the schedule is evaluated at a traced count)."""
    params, grads = seeded_layer(steps=3, seed=81, scale=2.0)
    p = to_jax(params)
    tx = recipe()
    calls = [(to_jax(grads[0]), tx.init(p), p)] + [lambda previous, g=g: (to_jax(g), previous[1], p) for g in grads[1:]]
    jit_parity.assert_jit_matches_eager(tx.update, calls, ulps=PER_STEP, compare=updates_only)


@pytest.mark.negative
def test_gradients_of_another_structure_raise_value_error() -> None:
    """A gradient PyTree unlike the params' fails in Adam's moment update."""
    params, _ = seeded_layer(steps=0, seed=82)
    p = to_jax(params)
    tx = recipe()
    with pytest.raises(ValueError, match=pinned.PYTREE_STRUCTURE):
        tx.update({"kernel": jnp.ones((3, 2))}, tx.init(p), p)
