"""Contracts of optimizer states under sharding: params laid out with
``jax.sharding.NamedSharding`` on a 2 x 4 ``Mesh`` ("data" x "model") of eight
simulated CPU devices.

Guide: JAX's documentation of distributed arrays (``jax.sharding``; "Distributed
arrays and automatic parallelization") and the contracted set-ups of the
guides (SGD with momentum, guide 001; masked weight decay; MultiSteps), plus
``optax.adamw`` and ``optax.clip_by_global_norm`` (the one set-up that must
reduce across devices). Sources read: optax 0.2.6 ``optax/_src/alias.py``
(``sgd``, ``adamw`` = ``scale_by_adam`` -> ``add_decayed_weights`` ->
``scale_by_learning_rate``), ``optax/_src/transform.py`` (``scale_by_adam``:
``count`` is a scalar int32 created by ``jnp.zeros([], jnp.int32)``, ``mu``/``nu``
by ``tree_zeros_like(params)``), ``optax/transforms/_accumulation.py``
(``MultiSteps``), ``optax/transforms/_masking.py``; jax 0.11.2
``jax/_src/stages.py`` (the incompatible-devices error).

Inputs: params ``{"bias": (4,) P("model"), "kernel": (8, 4) P("data", "model")}``
float32, gradients of the same layout, four steps. Outputs: states, updates
and params, compared with float64 NumPy references (``kit/references/core.py``,
formula per set-up) and with the same program run on one device.

What the baseline does, pinned: eager ``tx.init`` keeps each param's sharding
on the state leaves that mirror it, while ``jax.jit(tx.init)`` without
``out_shardings`` puts every state leaf on one device; counters are created on
one device by ``init`` and come back replicated over the mesh (``P()``) from a
jitted ``update``.
"""

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from optax_gate.kit import pinned, tolerances, trajectories
from optax_gate.kit.references import core as references
from optax_gate.kit.tolerances import ELEMENTWISE
from optax_gate.kit.training import multidevice
from optax_gate.kit.trees import leaves64, to_jax

GUIDE = "docs: JAX distributed arrays (jax.sharding.NamedSharding, Mesh) with the guides' optimizer set-ups"
SPECS = {"bias": P("model"), "kernel": P("data", "model")}
STEPS = 4
LR, WD, CLIP = 0.1, 1e-2, 1.0
ELEMENTWISE_SETUPS = ("sgd-momentum", "adamw", "multisteps", "masked-decay")
SETUPS = (*ELEMENTWISE_SETUPS, "clipped-sgd")
STATEFUL = ("sgd-momentum", "adamw", "multisteps")


def optimizer(setup: str) -> Any:
    """The transformation of a set-up, built from ``optax`` at call time."""
    if setup == "sgd-momentum":
        return optax.sgd(LR, momentum=0.9)
    if setup == "adamw":
        return optax.adamw(LR, weight_decay=WD)
    if setup == "multisteps":
        return optax.MultiSteps(optax.sgd(LR, momentum=0.9), every_k_schedule=2).gradient_transformation()
    if setup == "masked-decay":
        return optax.chain(optax.add_decayed_weights(WD, mask={"bias": False, "kernel": True}), optax.sgd(LR))
    if setup == "clipped-sgd":
        return optax.chain(optax.clip_by_global_norm(CLIP), optax.sgd(LR))
    raise KeyError(setup)


def reference(setup: str, params: list[np.ndarray], grads: list[list[np.ndarray]]) -> list[list[np.ndarray]]:
    """Float64 params after each step (leaf order bias, kernel), from each
    set-up's formula in ``kit/references/core.py``."""
    if setup == "sgd-momentum":
        return references.sgd_trajectory(params, grads, LR, momentum=0.9)
    if setup == "adamw":
        return references.adamw_trajectory(params, grads, LR, weight_decay=WD)
    if setup == "multisteps":
        out, p = [], params
        for u in references.multi_steps_sgd_updates(grads, 2, LR, momentum=0.9):
            p = [a + b for a, b in zip(p, u, strict=True)]
            out.append(p)
        return out
    if setup == "masked-decay":
        return references.sgd_trajectory(params, grads, LR, weight_decay=WD, decay_mask=[False, True])
    out, p = [], params
    for g in grads:
        p = [a - LR * c for a, c in zip(p, references.clip_by_global_norm(g, CLIP), strict=True)]
        out.append(p)
    return out


#: ULPs one step may add, per set-up (budgets of ``kit/tolerances.py``):
#: stages of elementwise work (trace, decay, Adam's moments / bias correction /
#: normalisation, the update's application), and the global norm's reduction
#: over the 36 elements for the clipped set-up.
PER_STEP = {
    "sgd-momentum": 2 * ELEMENTWISE,
    "adamw": 5 * ELEMENTWISE,
    "multisteps": tolerances.reduction(2) + 2 * ELEMENTWISE,
    "masked-decay": 3 * ELEMENTWISE,
    "clipped-sgd": tolerances.reduction(36) + 2 * ELEMENTWISE,
}


def inputs() -> Any:
    """Float64 params and ``STEPS`` gradients from ``default_rng(1300)``
    (params first, then the gradients step by step)."""
    rng = np.random.default_rng(1300)
    params = {"bias": rng.normal(size=(4,)), "kernel": rng.normal(size=(8, 4))}
    grads = [{"bias": rng.normal(size=(4,)), "kernel": rng.normal(size=(8, 4))} for _ in range(STEPS)]
    return params, grads


def step(tx: Any, p: Any, g: Any, s: Any) -> Any:
    u, s = tx.update(g, s, p)
    return u, s, optax.apply_updates(p, u)


@functools.cache
def run(setup: str) -> dict[str, Any]:
    """Everything the contracts of one set-up look at, computed once: the
    states of eager and jitted ``init``, the compiled sharded step and its HLO,
    the sharded and the one-device trajectories."""
    mesh = multidevice.mesh_2x4()
    tx = optimizer(setup)
    params64, grads64 = inputs()
    params = multidevice.shard(to_jax(params64), mesh, SPECS)
    grads = [multidevice.shard(to_jax(g), mesh, SPECS) for g in grads64]
    state = tx.init(params)
    compiled = jax.jit(functools.partial(step, tx)).lower(params, grads[0], state).compile()
    out = {
        "mesh": mesh,
        "params": params,
        "init": state,
        "init_jit": jax.jit(tx.init)(params),
        "hlo": compiled.as_text(),
        "sharded": [],
        "single": [],
    }
    p, s = params, state
    for g in grads:
        u, s, p = compiled(p, g, s)
        out["sharded"].append((u, s, p))
    one = jax.devices()[0]
    p, s = jax.device_put((params, state), one)
    single = jax.jit(functools.partial(step, tx))
    for g in grads:
        u, s, p = single(p, jax.device_put(g, one), s)
        out["single"].append((u, s, p))
    out["reference"] = reference(setup, leaves64(params64), [leaves64(g) for g in grads64])
    out["initial"] = params64
    return out


def assert_mirrors_params(tree: Any, params: Any, what: str) -> None:
    """Every array leaf of ``tree`` with a param's shape has that param's
    sharding (same mesh, equivalent spec)."""
    by_shape = {x.shape: x.sharding for x in jax.tree.leaves(params)}
    for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
        if leaf.ndim and leaf.shape in by_shape:
            want = by_shape[leaf.shape]
            assert leaf.sharding.is_equivalent_to(want, leaf.ndim), (
                f"{what} {jax.tree_util.keystr(path)}: {multidevice.describe(leaf.sharding)}, the param's is "
                f"{multidevice.describe(want)}"
            )


@pytest.mark.contract(api="sharding:init", guide=GUIDE)
@pytest.mark.acceptance
@pytest.mark.parametrize("setup", STATEFUL)
def test_eager_init_keeps_each_params_sharding(setup: Any) -> None:
    """``tx.init(params)`` outside ``jax.jit``, for the set-ups that keep a
    state per param (the momentum trace, Adam's ``mu``/``nu``, MultiSteps'
    ``acc_grads`` and inner trace): each such state leaf has its param's
    ``NamedSharding``. (The masked and clipped set-ups keep no array state;
    their empty states are in the snapshot.)"""
    r = run(setup)
    mirrored = [x for x in jax.tree.leaves(r["init"]) if x.ndim]
    assert len(mirrored) >= 2, [x.shape for x in mirrored]
    assert_mirrors_params(r["init"], r["params"], "init state")


@pytest.mark.contract(api="sharding:update", guide=GUIDE)
@pytest.mark.acceptance
@pytest.mark.parametrize("setup", SETUPS)
def test_jitted_update_keeps_shardings_and_replicates_counters(setup: Any) -> None:
    """After each jitted step the updates, the new params and every state leaf
    that mirrors a param keep the param's sharding; every scalar (a counter)
    is replicated over all eight devices of the mesh."""
    r = run(setup)
    for k, (u, s, p) in enumerate(r["sharded"], start=1):
        assert_mirrors_params((u, p, s), r["params"], f"step {k}")
        for path, leaf in jax.tree_util.tree_flatten_with_path(s)[0]:
            if leaf.ndim == 0:
                assert leaf.sharding.is_fully_replicated and leaf.sharding.device_set == set(r["mesh"].devices.flat), (
                    f"step {k} counter {jax.tree_util.keystr(path)}: {multidevice.describe(leaf.sharding)}"
                )


@pytest.mark.contract(api="sharding:update", guide=GUIDE)
@pytest.mark.acceptance
@pytest.mark.parametrize("setup", SETUPS)
def test_sharded_steps_follow_the_reference_and_the_one_device_run(setup: Any) -> None:
    """Four sharded steps follow the set-up's float64 reference within its
    per-step budget (``PER_STEP``, accumulated over the steps), and the same
    program on one device within the same budget: sharding moves no value."""
    r = run(setup)
    sharded = [p for _, _, p in r["sharded"]]
    trajectories.assert_follows(
        sharded,
        r["reference"],
        dtype=jnp.float32,
        initial=r["initial"],
        per_step=PER_STEP[setup],
        what="sharded params",
    )
    single = [leaves64(p) for _, _, p in r["single"]]
    trajectories.assert_follows(
        sharded,
        single,
        dtype=jnp.float32,
        initial=r["initial"],
        per_step=PER_STEP[setup],
        what="sharded vs one-device params",
    )


@pytest.mark.contract(api="sharding:update", guide=GUIDE)
@pytest.mark.acceptance
@pytest.mark.parametrize("setup", ELEMENTWISE_SETUPS)
def test_elementwise_update_compiles_without_collectives(setup: Any) -> None:
    """An update whose every output element depends on the same element of
    its inputs, with state and params sharded alike, needs no communication:
    the compiled step has no collective (no silent resharding)."""
    counts = multidevice.collectives(run(setup)["hlo"])
    assert sum(counts.values()) == 0, counts


@pytest.mark.contract(api="sharding:update", guide=GUIDE)
@pytest.mark.snapshot
@pytest.mark.parametrize("setup", SETUPS)
def test_compiled_update_collectives_snapshot(data_regression: Any, setup: Any) -> None:
    """Baseline snapshot (drift, not correctness): how many of each collective
    the compiled sharded step contains (the global norm of the clipped set-up
    is the one reduction across devices). Recorded from jax 0.11.2 / optax
    0.2.6 by ``./noxw -s update-snapshots``."""
    data_regression.check(multidevice.collectives(run(setup)["hlo"]))


@pytest.mark.contract(api="sharding:init", guide=GUIDE)
@pytest.mark.snapshot
@pytest.mark.parametrize("setup", SETUPS)
def test_state_shardings_snapshot(data_regression: Any, setup: Any) -> None:
    """Baseline snapshot (drift, not correctness): the sharding of every leaf
    (``PartitionSpec`` and mesh axes, or ``single-device``) of the state after
    eager ``init``, after ``jax.jit(init)``, and of the state and updates after
    one jitted step. Recorded from jax 0.11.2 / optax 0.2.6."""
    r = run(setup)
    u, s, _ = r["sharded"][0]
    data_regression.check(
        {
            "init (eager)": multidevice.shardings(r["init"]),
            "init (jax.jit)": multidevice.shardings(r["init_jit"]),
            "state after a jitted step": multidevice.shardings(s),
            "updates of a jitted step": multidevice.shardings(u),
        }
    )


@pytest.mark.contract(api="sharding:update", guide=GUIDE)
@pytest.mark.negative
@pytest.mark.parametrize("other", ["other-devices", "same-devices-reordered"])
def test_update_with_state_on_another_mesh_raises(other: Any) -> None:
    """Params and gradients on the 2 x 4 mesh, the momentum state initialised
    on another mesh (devices 4-7 only, or the same eight in reverse order):
    ``update`` raises ``ValueError`` "Received incompatible devices for jitted
    computation" (jax ``_src/stages.py``; eager operations dispatch through
    ``jit`` too), under ``jax.jit`` and eagerly; nothing is moved silently."""
    mesh = multidevice.mesh_2x4()
    devs = jax.devices()[: multidevice.DEVICES]
    if other == "other-devices":
        other_mesh = jax.sharding.Mesh(np.array(devs[4:]).reshape(1, 4), ("data", "model"))
    else:
        other_mesh = multidevice.mesh_2x4(devs[::-1])
    params64, grads64 = inputs()
    params = multidevice.shard(to_jax(params64), mesh, SPECS)
    tx = optimizer("sgd-momentum")
    state = tx.init(multidevice.shard(to_jax(params64), other_mesh, SPECS))
    assert isinstance(jax.tree.leaves(state)[0].sharding, NamedSharding)
    grads = multidevice.shard(to_jax(grads64[0]), mesh, SPECS)
    for update in (jax.jit(tx.update), tx.update):
        with pytest.raises(ValueError, match=pinned.INCOMPATIBLE_DEVICES):
            update(grads, state, params)
