"""Contracts of ``optax.multi_transform`` (one transformation per labelled
group of parameters; an alias of ``optax.transforms.partition`` in 0.2.6).

Source of the expected values: the documented contract (each leaf gets the
transformation of its label; labels are a PyTree prefix of the params, or a
callable returning one; every label must name a transformation) with each
group's update from its own float64 reference (``references.sgd_updates``,
``references_wrappers.clip``). Source read to pin the rest: optax 0.2.6
``optax/transforms/_combining.py`` (``partition``: ``init`` checks the label set
against the transforms' keys and raises ``ValueError``; each group runs
``masked(tx, labels == group)``; a callable is called with the params at
``init`` and with the **updates** at ``update``) and
``optax/transforms/_masking.py``.

Input: updates and params PyTrees; labels a PyTree prefix of strings or a
callable. Output: updates of the same structure; state
``PartitionState(inner_states={label: MaskedState})``.
"""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hypothesis import given
from hypothesis import strategies as st

from optax_gate.kit import dtypes, jit_parity, pinned, strategies, trajectories
from optax_gate.kit.jit_parity import updates_only
from optax_gate.kit.references import core as references
from optax_gate.kit.references import wrappers as references_wrappers
from optax_gate.kit.tolerances import ELEMENTWISE, EXACT, assert_close
from optax_gate.kit.trees import assert_dtype, leaves64, seeded_layer, to_jax

pytestmark = pytest.mark.contract(
    api="optax.multi_transform", guide="docs: optax.multi_transform / optax.partition (a transformation per label)"
)

LABELS = {"kernel": "sgd", "bias": "clip"}


def by_ndim(tree: Any) -> Any:
    """Label callable: rank-2 leaves are 'sgd', the others 'clip'."""
    return jax.tree.map(lambda x: "sgd" if jnp.ndim(x) == 2 else "clip", tree)


def transforms(lr: Any = 0.1) -> Any:
    return {"sgd": optax.sgd(lr), "clip": optax.clip(0.5)}


def layer(dtype: Any = jnp.float32) -> Any:
    params = {"kernel": jnp.ones((2, 2), dtype), "bias": jnp.ones(2, dtype)}
    grads = {"kernel": jnp.array([[1.0, -2.0], [3.0, 0.25]], dtype), "bias": jnp.array([2.0, -0.25], dtype)}
    return params, grads


@pytest.mark.golden
@pytest.mark.parametrize("labels", [LABELS, by_ndim], ids=["labels-tree", "labels-callable"])
def test_each_group_gets_its_own_transformation(labels: Any) -> None:
    """kernel (label 'sgd') -> -0.1 * g = [[-0.1, 0.2], [-0.3, -0.025]];
    bias (label 'clip') -> clip(g, 0.5) = [0.5, -0.25]; the same with labels
    given as a PyTree and as a callable of the params."""
    params, grads = layer()
    tx = optax.multi_transform(transforms(), labels)
    updates, _ = tx.update(grads, tx.init(params), params)
    assert_close(updates["kernel"], [[-0.1, 0.2], [-0.3, -0.025]], dtype=jnp.float32, ulps=ELEMENTWISE, what="kernel")
    assert_close(updates["bias"], [0.5, -0.25], dtype=jnp.float32, ulps=EXACT, what="bias")


@pytest.mark.golden
def test_a_label_may_name_a_whole_subtree_and_state_is_per_group() -> None:
    """Labels as a prefix: ('sgd', 'clip') over (layer1 dict, layer2 dict)
    labels every leaf of each subtree; with momentum SGD the state holds a
    trace for the 'sgd' subtree only: the whole 'clip' subtree is one
    ``MaskedNode``, not a dict of them."""
    params = ({"w": jnp.ones(2), "b": jnp.ones(1)}, {"w": jnp.ones(2)})
    grads = ({"w": jnp.array([1.0, 2.0]), "b": jnp.array([3.0])}, {"w": jnp.array([-4.0, 0.1])})
    tx = optax.multi_transform({"sgd": optax.sgd(0.1, momentum=0.9), "clip": optax.clip(0.5)}, ("sgd", "clip"))
    state = tx.init(params)
    updates, state = tx.update(grads, state, params)
    assert_close(updates[0]["w"], [-0.1, -0.2], dtype=jnp.float32, ulps=ELEMENTWISE, what="layer1 w")
    assert_close(updates[0]["b"], [-0.3], dtype=jnp.float32, ulps=ELEMENTWISE, what="layer1 b")
    assert_close(updates[1]["w"], [-0.5, 0.1], dtype=jnp.float32, ulps=1, what="layer2 w")  # 1 ULP: the decimal 0.1
    trace = state.inner_states["sgd"].inner_state[0].trace
    assert isinstance(trace[1], optax.MaskedNode) and trace[0]["w"].shape == (2,)


@pytest.mark.negative
@pytest.mark.parametrize(
    "labels", [{"kernel": "sgd", "bias": "adam"}, lambda t: jax.tree.map(lambda _: "adam", t)], ids=["tree", "callable"]
)
def test_an_unlabelled_group_raises_value_error_at_init(labels: Any) -> None:
    """A label with no transformation ('adam') fails at ``init`` with
    ValueError naming the labels and the transforms' keys."""
    with pytest.raises(ValueError, match=pinned.NO_TRANSFORMATION):
        optax.multi_transform(transforms(), labels).init(layer()[0])


@pytest.mark.negative
@pytest.mark.parametrize(
    "labels",
    [{"kernel": "sgd"}, {"kernel": "sgd", "bias": "clip", "extra": "sgd"}, ("sgd", "clip")],
    ids=["missing-leaf", "extra-leaf", "other-container"],
)
def test_labels_of_another_structure_raise_value_error(labels: Any) -> None:
    """Labels that are not a prefix of the params fail at ``init`` with JAX's
    pytree structure error (from the mask of ``masked``)."""
    with pytest.raises(ValueError, match=pinned.PYTREE_STRUCTURE):
        optax.multi_transform(transforms(), labels).init(layer()[0])


@pytest.mark.negative
def test_an_unused_transformation_is_accepted() -> None:
    """A transform key no label uses is not an error: its state holds only
    ``MaskedNode`` leaves and it changes nothing."""
    params, grads = layer()
    tx = optax.multi_transform({**transforms(), "unused": optax.sgd(1.0, momentum=0.9)}, LABELS)
    state = tx.init(params)
    assert all(
        isinstance(x, optax.MaskedNode)
        for x in jax.tree.leaves(state.inner_states["unused"], is_leaf=lambda x: isinstance(x, optax.MaskedNode))
    )
    updates, _ = tx.update(grads, state, params)
    assert_close(updates["bias"], [0.5, -0.25], dtype=jnp.float32, ulps=EXACT, what="bias")


_SHAPES = {"a": (3,), "b": (2, 2), "c": ()}
_JITTED: dict[Any, Any] = {}


def _jitted(names: Any) -> Any:
    """One compiled update per labelling of the fixed structure (8 at most)."""
    if names not in _JITTED:
        tx = optax.multi_transform(transforms(), dict(zip(sorted(_SHAPES), names, strict=True)))
        _JITTED[names] = (tx, jax.jit(tx.update))
    return _JITTED[names]


@pytest.mark.property
@given(
    values=st.tuples(*[strategies.arrays(_SHAPES[k]) for k in sorted(_SHAPES)]),
    names=st.tuples(*[st.sampled_from(["sgd", "clip"]) for _ in _SHAPES]),
)
def test_every_leaf_follows_its_labels_reference(values: Any, names: Any) -> None:
    """Generated values and a drawn label per leaf of {a: (3,), b: (2, 2),
    c: ()}: 'sgd' leaves equal ``references.sgd_updates`` (lr 0.1) and 'clip'
    leaves ``references_wrappers.clip`` (0.5)."""
    grads = to_jax(dict(zip(sorted(_SHAPES), values, strict=True)))
    tx, update = _jitted(names)
    updates, _ = update(grads, tx.init(grads), grads)
    for got, g, name in zip(jax.tree.leaves(updates), leaves64(grads), names, strict=True):
        want = references.sgd_updates([g], 0.1)[0] if name == "sgd" else references_wrappers.clip([g], 0.5)[0]
        assert_close(got, want, dtype=jnp.float32, ulps=ELEMENTWISE if name == "sgd" else EXACT, what=name)


@pytest.mark.acceptance
@pytest.mark.parametrize(("dtype_name", "schedule"), dtypes.trajectory_cases())
def test_trajectory_with_two_groups(dtype_name: Any, schedule: Any) -> None:
    """Three jitted steps of ``multi_transform({'sgd': sgd(lr, momentum=0.9),
    'clip': chain(clip(0.5), sgd(lr))}, by_ndim)`` in every dtype: the kernel
    follows the momentum SGD reference, the bias the clipped plain SGD one;
    updates and params keep the dtype."""
    with dtypes.precision(dtype_name) as dtype:
        lr = optax.linear_schedule(0.1, 0.02, transition_steps=2) if schedule else 0.1
        ref_lr = references.linear_schedule(0.1, 0.02, 2) if schedule else 0.1
        params, grads = seeded_layer(steps=3, seed=51, scale=2.0)
        p0, gs = to_jax(params, dtype), [to_jax(g, dtype) for g in grads]
        tx = optax.multi_transform(
            {"sgd": optax.sgd(lr, momentum=0.9), "clip": optax.chain(optax.clip(0.5), optax.sgd(lr))}, by_ndim
        )
        steps = trajectories.run(tx, p0, gs, jit=True)
        kernel = references.sgd_trajectory(
            [leaves64(p0["kernel"])[0]], [[leaves64(g["kernel"])[0]] for g in gs], ref_lr, momentum=0.9
        )
        bias = references.sgd_trajectory(
            [leaves64(p0["bias"])[0]], [references_wrappers.clip([leaves64(g["bias"])[0]], 0.5) for g in gs], ref_lr
        )
        want = [[b[0], k[0]] for b, k in zip(bias, kernel, strict=True)]  # jax.tree.leaves order: bias, kernel
        trajectories.assert_follows_in(dtype_name, schedule, [s.params for s in steps], want, initial=p0)
        for k, s in enumerate(steps, 1):
            assert_dtype({"params": s.params, "updates": s.updates}, dtype, f"step {k}")


@pytest.mark.snapshot
@pytest.mark.parametrize("dtype_name", ["float32", "bfloat16"])
def test_state_snapshot(data_regression: Any, dtype_name: Any) -> None:
    """Baseline snapshot (drift, not correctness): ``PartitionState`` of
    ``multi_transform({'sgd': sgd(0.1, momentum=0.9), 'clip': clip(0.5)},
    LABELS)`` after init and two steps (group keys, ``MaskedState``, where the
    ``MaskedNode`` leaves sit, the trace's dtype). Recorded from optax 0.2.6 by
    ``./noxw -s update-snapshots``."""
    params, grads = seeded_layer(steps=2, seed=51)
    dtype = jnp.dtype(dtype_name)
    tx = optax.multi_transform({"sgd": optax.sgd(0.1, momentum=0.9), "clip": optax.clip(0.5)}, LABELS)
    data_regression.check(trajectories.state_signatures(tx, to_jax(params, dtype), [to_jax(g, dtype) for g in grads]))


@pytest.mark.acceptance
def test_jit_matches_eager_and_does_not_recompile() -> None:
    """Labels are static: a jitted update equals eager and a second call with
    new values compiles nothing (labels as a callable included)."""
    params, grads = layer()
    tx = optax.multi_transform(transforms(), by_ndim)
    state = tx.init(params)
    other = jax.tree.map(lambda x: -3.0 * x, grads)
    jit_parity.assert_jit_matches_eager(
        tx.update, [(grads, state, params), (other, state, params)], ulps=ELEMENTWISE, compare=updates_only
    )


@pytest.mark.negative
def test_edge_inputs_none_leaf_empty_tree_and_dtypes(dtype: Any) -> None:
    """Regression protocol edges, pinned to the baseline: a None param leaf
    needs no label (the labels' prefix has it as None) and stays None; an
    empty PyTree with empty labels gives empty updates; each dtype is kept
    (float64 under x64)."""
    params = {"kernel": jnp.ones((2, 2), dtype), "bias": None}
    tx = optax.multi_transform(transforms(), {"kernel": "sgd", "bias": None})
    updates, _ = tx.update(params, tx.init(params), params)
    assert updates["bias"] is None and updates["kernel"].dtype == dtype
    assert_close(updates["kernel"], np.full((2, 2), -0.1), dtype=dtype, ulps=ELEMENTWISE, what="kernel")
    tx = optax.multi_transform(transforms(), {})
    assert tx.update({}, tx.init({}), {})[0] == {}
