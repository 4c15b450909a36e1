"""Contracts of resuming across device counts: an orbax-checkpoint checkpoint
of params and an ``optax.adamw`` state written sharded over the 2 x 4 mesh of
eight devices restores onto four devices and onto one, with the same values,
and training continues there.

Guide: the shared "transfer into a real model" section (checkpoint, resume)
extended to device layouts (the gate's ``resume:*`` contracts restore across
versions on one device, ``kit/training/resume.py``); orbax-checkpoint's documented
restore with a target of ``jax.ShapeDtypeStruct`` carrying the wanted
``sharding``. Sources read: orbax-checkpoint ``StandardCheckpointer``
(``save``, ``restore(directory, target)``) as used in ``kit/training/resume.py``;
optax 0.2.6 ``optax/_src/transform.py`` (``ScaleByAdamState``: ``count``,
``mu``, ``nu``).

Inputs: params ``{"bias": (4,) P("model"), "kernel": (8, 4) P("data", "model")}``
float32 after two jitted AdamW steps on the 2 x 4 mesh. Outputs: the restored
leaves (compared bit for bit with what was written: restoring is a copy) and
one more step on the new layout against the float64 AdamW reference.
"""

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import orbax.checkpoint as ocp
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from optax_gate.kit import guides, trajectories
from optax_gate.kit.references import core as references
from optax_gate.kit.tolerances import ELEMENTWISE, EXACT, assert_close
from optax_gate.kit.training import multidevice
from optax_gate.kit.trees import leaves64, to_jax

pytestmark = pytest.mark.contract(api="resume:across-devices", guide=guides.NNX_TRANSFER)

SPECS = {"bias": P("model"), "kernel": P("data", "model")}
LR, WD, STEPS = 0.1, 1e-2, 3  # two steps before the checkpoint, one after


def inputs() -> Any:
    """Float64 params and ``STEPS`` gradients from ``default_rng(1304)``."""
    rng = np.random.default_rng(1304)
    params = {"bias": rng.normal(size=(4,)), "kernel": rng.normal(size=(8, 4))}
    return params, [{"bias": rng.normal(size=(4,)), "kernel": rng.normal(size=(8, 4))} for _ in range(STEPS)]


def step(tx: Any, p: Any, g: Any, s: Any) -> Any:
    u, s = tx.update(g, s, p)
    return optax.apply_updates(p, u), s


def targets(layout: str) -> tuple[Any, list[Any]]:
    """The restore layout: a ``(sharding of a leaf with spec) -> Sharding``
    function and its devices. ``4-devices``: a 2 x 2 mesh ("data", "model") of
    devices 0-3, the same specs; ``1-device``: device 0 alone."""
    devs = jax.devices()[: multidevice.DEVICES]
    if layout == "4-devices":
        mesh = jax.sharding.Mesh(np.array(devs[:4]).reshape(2, 2), ("data", "model"))
        return (lambda spec: NamedSharding(mesh, spec)), devs[:4]
    return (lambda spec: jax.sharding.SingleDeviceSharding(devs[0])), devs[:1]


@functools.cache
def written(directory: str) -> Any:
    """Train two steps on the 2 x 4 mesh and save ``{"params", "opt_state"}``
    under ``directory``; return what was written (host copies) and the inputs."""
    mesh = multidevice.mesh_2x4()
    tx = optax.adamw(LR, weight_decay=WD)
    params64, grads64 = inputs()
    p = multidevice.shard(to_jax(params64), mesh, SPECS)
    s = tx.init(p)
    run = jax.jit(functools.partial(step, tx))
    for g in grads64[:2]:
        p, s = run(p, multidevice.shard(to_jax(g), mesh, SPECS), s)
    tree = {"params": p, "opt_state": s}
    checkpointer = ocp.StandardCheckpointer()
    checkpointer.save(directory, tree, force=True)
    checkpointer.wait_until_finished()
    return jax.tree.map(np.asarray, tree), tree, params64, grads64


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Any:
    directory = str((tmp_path_factory.mktemp("sharded") / "ckpt").absolute())
    return directory, *written(directory)


def restore(directory: str, tree: Any, layout: str) -> Any:
    """Restore ``directory`` onto ``layout``: each leaf's target is a
    ``ShapeDtypeStruct`` with the layout's sharding of the leaf's spec (arrays)
    or replicated (scalars)."""
    sharding_of, _ = targets(layout)

    def target(x: Any) -> Any:
        spec = x.sharding.spec if x.ndim else P()
        return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding_of(spec))

    return ocp.StandardCheckpointer().restore(directory, jax.tree.map(target, tree))


@pytest.mark.acceptance
@pytest.mark.parametrize("layout", ["4-devices", "1-device"])
def test_restores_every_leaf_bit_for_bit_onto_the_new_layout(checkpoint: Any, layout: Any) -> None:
    """Every leaf (params, Adam's ``mu`` and ``nu``, the ``count`` counter = 2)
    restored onto four devices / one device equals the written leaf bit for
    bit, and lives on exactly the requested devices."""
    directory, host, tree, _, _ = checkpoint
    restored = restore(directory, tree, layout)
    _, devices = targets(layout)
    got = jax.tree_util.tree_flatten_with_path(restored)[0]
    want = jax.tree.leaves(host)
    assert len(got) == len(want)
    for (path, leaf), exp in zip(got, want, strict=True):
        name = jax.tree_util.keystr(path)
        assert leaf.dtype == exp.dtype and leaf.shape == exp.shape, name
        assert leaf.sharding.device_set == set(devices), f"{name}: {multidevice.describe(leaf.sharding)}"
        if np.issubdtype(exp.dtype, np.integer):
            assert int(leaf) == int(exp) == 2, name
        else:
            assert_close(leaf, exp.astype(np.float64), dtype=jnp.float32, ulps=EXACT, what=name)


@pytest.mark.acceptance
@pytest.mark.parametrize("layout", ["4-devices", "1-device"])
def test_training_continues_on_the_new_layout(checkpoint: Any, layout: Any) -> None:
    """One more jitted AdamW step on the restored layout follows the float64
    AdamW reference of all three steps (Kingma & Ba 2015, Loshchilov & Hutter
    2019; ``references.adamw_trajectory``) within the accumulated budget."""
    directory, _, tree, params64, grads64 = checkpoint
    restored = restore(directory, tree, layout)
    sharding_of, _ = targets(layout)
    g = jax.tree.map(
        lambda x, spec: jax.device_put(x, sharding_of(spec)),
        to_jax(grads64[2]),
        SPECS,
        is_leaf=lambda x: isinstance(x, P),
    )
    p, _ = jax.jit(functools.partial(step, optax.adamw(LR, weight_decay=WD)))(
        restored["params"], g, restored["opt_state"]
    )
    want = references.adamw_trajectory(leaves64(params64), [leaves64(x) for x in grads64], LR, weight_decay=WD)
    trajectories.assert_follows(
        [p],
        [want[-1]],
        dtype=jnp.float32,
        initial=params64,
        per_step=3 * 5 * ELEMENTWISE,
        what=f"params after resuming on {layout}",
    )
