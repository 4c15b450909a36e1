"""Contracts of the data-parallel training step: ``jax.shard_map`` and
``jax.pmap`` over eight simulated CPU devices, with the gradients reduced by
``jax.lax.pmean`` and one Optax update.

Guides: 001_3de679c23eb4e8d7.txt (the SGD step: ``update`` then
``apply_updates``), 000_1767c3f5f037268a.txt (per-example clipping, its DP-SGD
loop distributed over devices), the MultiSteps summary (001:71-72), and JAX's
shard_map documentation for the replication rules. Sources read: jax 0.11.2
``jax/_src/shard_map.py`` (``shard_map(f, *, out_specs, in_specs, mesh,
axis_names, check_vma=True)``; with ``check_vma`` the transpose of an
unvarying input's implicit broadcast is a ``psum``, so ``jax.grad`` of a
replicated parameter comes back already summed over the axis),
``jax/_src/pmap.py`` (``pmap`` implemented with ``jit`` and ``shard_map``),
``jax/_src/lax/parallel.py`` and ``jax/_src/core.py`` (``pvary``: ``assert
set(new_axes) == set(axes)``, the bare assertion an unknown axis name meets);
optax 0.2.6 ``optax/transforms/_clipping.py`` and
``optax/transforms/_accumulation.py``.

Model: ``y = x @ w + b``, ``w`` (3, 2), ``b`` (2,), float32, loss
``mean((y - t)**2)``; a global batch of 16 examples, 2 per device. Expected
values: the float64 gradient of that loss written from calculus
(``references.linear_mse_grads``) fed to the float64 SGD reference.
"""

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.sharding import PartitionSpec as P

from optax_gate.kit import guides, pinned, tolerances, trajectories
from optax_gate.kit.references import core as references
from optax_gate.kit.tolerances import ELEMENTWISE, EXACT, assert_close
from optax_gate.kit.training import multidevice
from optax_gate.kit.trees import leaves64, to_jax

SHARD_MAP_DOCS = "docs: JAX shard_map (jax.shard_map, check_vma, collectives over a mesh axis)"
BATCH, STEPS, LR = 16, 2, 0.1
#: One step's budget: the gradient is a sum over the batch (16 examples, 2 per
#: device, then the mean over 8 devices), then the momentum trace and the update.
PER_STEP = tolerances.reduction(BATCH) + 2 * ELEMENTWISE


def loss(p: Any, x: Any, t: Any) -> Any:
    return jnp.mean((x @ p["w"] + p["b"] - t) ** 2)


def data() -> Any:
    """Float64 params and ``STEPS`` batches ``(x (16, 3), t (16, 2))`` from
    ``default_rng(1301)``."""
    rng = np.random.default_rng(1301)
    params = {"b": rng.normal(size=(2,)), "w": rng.normal(size=(3, 2))}
    batches = [(rng.normal(size=(BATCH, 3)), rng.normal(size=(BATCH, 2))) for _ in range(STEPS)]
    return params, batches


def reference_sgd(params: Any, batches: Any, momentum: Any = 0.9) -> Any:
    """Float64 params after each full-batch SGD step (momentum 0.9): the
    gradient is computed at each step's params from the formula."""
    p = leaves64(params)
    out, trace = [], [np.zeros_like(x) for x in p]
    for x, t in batches:
        g = references.linear_mse_grads(p[1], p[0], x, t)
        trace = [gi + momentum * ti for gi, ti in zip((g["b"], g["w"]), trace, strict=True)]
        p = [pi - LR * ti for pi, ti in zip(p, trace, strict=True)]
        out.append(p)
    return out


def dp_step(tx: Any, reduce: Any, p: Any, s: Any, x: Any, t: Any) -> Any:
    """One data-parallel step: local gradients, ``reduce`` over "data", one update."""
    g = reduce(jax.grad(loss)(p, x, t))
    u, s = tx.update(g, s, p)
    return optax.apply_updates(p, u), s


@pytest.mark.contract(api="jax.shard_map+optax.sgd", guide=guides.SGD_STEP)
@pytest.mark.acceptance
def test_shard_map_step_with_pmean_equals_the_full_batch_step() -> None:
    """``shard_map`` over a 1-D mesh of 8 (``check_vma=False``, the pmap
    semantics), local gradients averaged by ``jax.lax.pmean(..., "data")``,
    ``sgd(0.1, momentum=0.9)``: two steps follow the float64 full-batch
    reference and the same step run on one device with the whole batch; the
    momentum state comes back replicated."""
    mesh = multidevice.data_mesh()
    tx = optax.sgd(LR, momentum=0.9)
    params64, batches = data()
    step = jax.jit(
        jax.shard_map(
            functools.partial(dp_step, tx, lambda g: jax.lax.pmean(g, "data")),
            mesh=mesh,
            in_specs=(P(), P(), P("data"), P("data")),
            out_specs=(P(), P()),
            check_vma=False,
        )
    )
    full = jax.jit(functools.partial(dp_step, tx, lambda g: g))
    p = q = to_jax(params64)
    s = r = tx.init(p)
    sharded, single = [], []
    for x, t in batches:
        p, s = step(p, s, to_jax(x), to_jax(t))
        q, r = full(q, r, to_jax(x), to_jax(t))
        sharded.append(p)
        single.append(leaves64(q))
    want = reference_sgd(params64, batches)
    trajectories.assert_follows(
        sharded, want, dtype=jnp.float32, initial=params64, per_step=PER_STEP, what="shard_map params"
    )
    trajectories.assert_follows(
        sharded, single, dtype=jnp.float32, initial=params64, per_step=PER_STEP, what="shard_map vs one device"
    )
    assert all(x.sharding.is_fully_replicated for x in jax.tree.leaves(s))


@pytest.mark.contract(api="jax.pmap+optax.sgd", guide=guides.SGD_STEP)
@pytest.mark.acceptance
def test_pmap_step_with_pmean_equals_the_full_batch_step() -> None:
    """The same step under ``jax.pmap(axis_name="data")`` with replicated
    params and state (``in_axes=None``) and the batch reshaped to (8, 2, ...):
    every device's copy of the new params is identical and follows the float64
    full-batch reference."""
    tx = optax.sgd(LR, momentum=0.9)
    params64, batches = data()
    n = multidevice.DEVICES
    step = jax.pmap(
        functools.partial(dp_step, tx, lambda g: jax.lax.pmean(g, "data")), axis_name="data", in_axes=(None, None, 0, 0)
    )
    p, s, got = to_jax(params64), tx.init(to_jax(params64)), []
    for x, t in batches:
        ps, ss = step(p, s, to_jax(x).reshape(n, BATCH // n, 3), to_jax(t).reshape(n, BATCH // n, 2))
        for leaf in jax.tree.leaves((ps, ss)):
            assert leaf.shape[0] == n
            for k in range(1, n):
                assert_close(
                    leaf[k], np.asarray(leaf[0], np.float64), dtype=jnp.float32, ulps=EXACT, what=f"device {k} vs 0"
                )
        p, s = jax.tree.map(lambda a: a[0], (ps, ss))
        got.append(p)
    trajectories.assert_follows(
        got,
        reference_sgd(params64, batches),
        dtype=jnp.float32,
        initial=params64,
        per_step=PER_STEP,
        what="pmap params",
    )


@pytest.mark.contract(api="jax.shard_map:grad", guide=SHARD_MAP_DOCS)
@pytest.mark.negative
def test_grad_of_replicated_params_under_check_vma_is_already_summed() -> None:
    """Pinned pitfall of the default ``check_vma=True``: ``jax.grad`` of a
    replicated (``P()``) parameter inside ``shard_map`` returns the *sum* of
    the eight devices' gradients (the transpose of the implicit broadcast is a
    ``psum``), so the pmap-style ``pmean`` on top leaves 8 x the full-batch
    mean gradient: formula ``8 * dL/dtheta`` (each device's loss is the mean
    over its 2 examples)."""
    mesh = multidevice.data_mesh()
    params64, batches = data()
    x, t = batches[0]
    grads = jax.jit(
        jax.shard_map(
            lambda p, x, t: jax.lax.pmean(jax.grad(loss)(p, x, t), "data"),
            mesh=mesh,
            in_specs=(P(), P("data"), P("data")),
            out_specs=P(),
        )
    )(to_jax(params64), to_jax(x), to_jax(t))
    want = references.linear_mse_grads(params64["w"], params64["b"], x, t)
    for name in ("b", "w"):
        assert_close(
            grads[name],
            multidevice.DEVICES * want[name],
            dtype=jnp.float32,
            ulps=tolerances.reduction(BATCH),
            what=f"grad {name}",
        )


@pytest.mark.contract(api="optax.per_example_global_norm_clip@shard_map", guide=guides.PER_EXAMPLE_CLIP)
@pytest.mark.acceptance
def test_per_example_clip_summed_across_devices_equals_the_full_batch() -> None:
    """Guide 000's DP-SGD step distributed: 16 per-example gradients
    (``{"b": (16, 2), "w": (16, 3, 2)}``, norms around 2.5, C = 1) split 2 per
    device; each device clips and sums its examples, ``psum`` over "data"
    adds the sums and the clipped counts. Equals the float64 reference of
    the whole batch (``references.per_example_global_norm_clip``) within the
    reduction budget of 16 terms, and the count exactly."""
    mesh = multidevice.data_mesh()
    rng = np.random.default_rng(1302)
    per_example = {"b": rng.normal(size=(BATCH, 2)), "w": rng.normal(size=(BATCH, 3, 2))}

    def clip(g: Any) -> Any:
        summed, count = optax.per_example_global_norm_clip(g, l2_norm_clip=1.0)
        return jax.lax.psum(summed, "data"), jax.lax.psum(count, "data")

    summed, count = jax.jit(jax.shard_map(clip, mesh=mesh, in_specs=P("data"), out_specs=P()))(to_jax(per_example))
    want, want_count = references.per_example_global_norm_clip(leaves64(per_example), 1.0)
    for got, exp in zip(jax.tree.leaves(summed), want, strict=True):
        assert_close(got, exp, dtype=jnp.float32, ulps=tolerances.reduction(BATCH), what="clipped sum")
    assert int(count) == want_count and 0 < want_count <= BATCH


def pmean_transformation(axis: str) -> optax.GradientTransformation:
    """The cross-device reduction as a stateless transformation, so that
    ``MultiSteps`` runs it only when it emits."""
    return optax.GradientTransformation(lambda p: optax.EmptyState(), lambda u, s, p=None: (jax.lax.pmean(u, axis), s))


def multi_steps_run() -> Any:
    """Four calls (two cycles of k = 2) of ``MultiSteps(chain(pmean over
    "data", sgd(0.1, momentum=0.9)), 2)`` inside ``shard_map``: each device
    accumulates its own micro-batch gradients (``acc_grads`` split over
    "data"), the reduction runs inside the emitting branch."""
    mesh = multidevice.data_mesh()
    ms = optax.MultiSteps(optax.chain(pmean_transformation("data"), optax.sgd(LR, momentum=0.9)), every_k_schedule=2)
    rng = np.random.default_rng(1303)
    params64 = {"b": rng.normal(size=(2,)), "w": rng.normal(size=(3, 2))}
    batches = [(rng.normal(size=(BATCH, 3)), rng.normal(size=(BATCH, 2))) for _ in range(4)]
    p0 = to_jax(params64)
    s0 = ms.init(p0)
    state_specs = jax.tree.map(lambda _: P(), s0)._replace(acc_grads=P("data"))
    n = multidevice.DEVICES

    def step(p: Any, s: Any, x: Any, t: Any) -> Any:
        g = jax.grad(loss)(p, x, t)
        u, s = ms.update(g, s, p)
        return optax.apply_updates(p, u), s

    compiled = jax.jit(
        jax.shard_map(
            step,
            mesh=mesh,
            in_specs=(P(), state_specs, P("data"), P("data")),
            out_specs=(P(), state_specs),
            check_vma=False,
        )
    )
    s = s0._replace(acc_grads=jax.tree.map(lambda a: jnp.tile(a, (n,) + (1,) * (a.ndim - 1)), s0.acc_grads))
    p, got = p0, []
    for x, t in batches:
        p, s = compiled(p, s, to_jax(x), to_jax(t))
        got.append(p)
    hlo = compiled.lower(p0, s, to_jax(batches[0][0]), to_jax(batches[0][1])).compile().as_text()
    return params64, batches, got, s, hlo


@functools.cache
def _multi_steps() -> Any:
    return multi_steps_run()


@pytest.mark.contract(api="optax.MultiSteps@shard_map", guide=guides.MULTI_STEPS)
@pytest.mark.acceptance
def test_multi_steps_accumulates_per_device_and_emits_the_full_batch_update() -> None:
    """Per-device accumulation, one reduction per emitted update: params stay
    bit for bit on the first call of each cycle and after the second follow
    the float64 reference of MultiSteps(sgd momentum) over the full-batch
    gradients (the mean over devices of each device's mean over its calls is
    the mean of the full-batch gradients, by linearity)."""
    params64, batches, got, s, _ = _multi_steps()
    want, p, trace, cycle = [], leaves64(params64), None, []
    for x, t in batches:  # each call's gradient at that call's params (unchanged within a cycle)
        g = references.linear_mse_grads(p[1], p[0], x, t)
        cycle.append([g["b"], g["w"]])
        if len(cycle) == 2:
            mean = [(a + b) / 2 for a, b in zip(*cycle, strict=True)]
            trace = mean if trace is None else [m + 0.9 * tr for m, tr in zip(mean, trace, strict=True)]
            p = [pi - LR * ti for pi, ti in zip(p, trace, strict=True)]
            cycle = []
        want.append(p)
    trajectories.assert_follows(
        got,
        want,
        dtype=jnp.float32,
        initial=params64,
        per_step=tolerances.reduction(2 * BATCH) + 2 * ELEMENTWISE,
        what="MultiSteps params",
    )
    for k in (0, 2):
        before = leaves64(to_jax(params64)) if k == 0 else leaves64(got[k - 1])
        for a, b in zip(leaves64(got[k]), before, strict=True):
            assert_close(a, b, dtype=jnp.float32, ulps=EXACT, what=f"call {k + 1} (no emission)")
    assert (int(s.mini_step), int(s.gradient_step)) == (0, 2)


@pytest.mark.contract(api="optax.MultiSteps@shard_map", guide=guides.MULTI_STEPS)
@pytest.mark.snapshot
def test_multi_steps_collectives_snapshot(data_regression: Any) -> None:
    """Baseline snapshot (drift, not correctness): the collectives of the
    compiled MultiSteps step under ``shard_map`` (the reduction sits in the
    emitting branch only). Recorded from jax 0.11.2 / optax 0.2.6."""
    data_regression.check(multidevice.collectives(_multi_steps()[4]))


@pytest.mark.contract(api="jax.shard_map:axis-name", guide=SHARD_MAP_DOCS)
@pytest.mark.negative
def test_in_specs_naming_an_axis_the_mesh_lacks_raise_value_error() -> None:
    """``in_specs=P("batch")`` on a mesh whose only axis is "data": ``ValueError``
    "shard_map in_specs argument must refer to an axis marked as manual"."""
    mesh = multidevice.data_mesh()
    with pytest.raises(ValueError, match=pinned.SHARD_MAP_UNKNOWN_AXIS):
        jax.shard_map(lambda x: jax.lax.pmean(x, "data"), mesh=mesh, in_specs=P("batch"), out_specs=P())(
            jnp.ones(BATCH)
        )


@pytest.mark.contract(api="jax.shard_map:axis-name", guide=SHARD_MAP_DOCS)
@pytest.mark.negative
@pytest.mark.known_defect("shard-map-unknown-axis-bare-assertion")
def test_pmean_over_an_axis_the_mesh_lacks_raises_a_bare_assertion() -> None:
    """``jax.lax.pmean(x, "batch")`` inside ``shard_map`` over a mesh ("data",)
    with the default ``check_vma=True``: the baseline fails an internal
    ``assert`` (``core.pvary``) with an empty message instead of the
    ``NameError`` "Found an unbound axis name" it raises elsewhere."""
    mesh = multidevice.data_mesh()
    with pytest.raises(AssertionError) as info:
        jax.shard_map(lambda x: jax.lax.pmean(x, "batch"), mesh=mesh, in_specs=P("data"), out_specs=P())(
            jnp.ones(BATCH)
        )
    assert str(info.value) == ""


@pytest.mark.contract(api="jax.pmap:axis-name", guide=SHARD_MAP_DOCS)
@pytest.mark.negative
def test_pmap_pmean_over_another_axis_name_raises_name_error() -> None:
    """``jax.pmap(axis_name="data")`` whose body calls ``pmean(x, "batch")``:
    ``NameError`` "Found an unbound axis name: batch"."""
    with pytest.raises(NameError, match=pinned.UNBOUND_AXIS):
        jax.pmap(lambda x: jax.lax.pmean(x, "batch"), axis_name="data")(jnp.ones((multidevice.DEVICES, 2)))
