"""Contracts of the Flax NNX training loop the guides transfer their examples
into: ``flax.nnx.Optimizer`` with ``optax.sgd``, train/eval mode of
``nnx.Dropout`` and ``nnx.BatchNorm``, named RNG streams, shapes and dtypes.

Guide: the shared sections "transfer into a real model" and "acceptance
criteria" (001_3de679c23eb4e8d7.txt lines 29-37, the same in 000 and 004).
Source read: flax 0.12.12 ``flax/nnx/training/optimizer.py`` (``Optimizer``:
``wrt`` is a required keyword; ``update(model, grads, /)`` runs ``tx.update``
on the ``wrt``-filtered state, ``optax.apply_updates``, ``nnx.update``, and
advances ``step``, a uint32 ``OptState``), ``flax/nnx/nn/stochastic.py``
(``Dropout``: keeps with probability 1 - rate, scales by 1 / (1 - rate), draws
from the ``dropout`` stream) and ``flax/nnx/nn/normalization.py``
(``BatchNorm``: running average ``m * ra + (1 - m) * batch``, m = 0.99).

Model: ``optax_gate.kit.training.models.MLP``, x (batch, 3) float32 -> Linear(3, 4) ->
BatchNorm(4) -> relu -> Dropout(0.5) -> Linear(4, 2) -> (batch, 2) float32.
"""

import inspect
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

from optax_gate.kit import guides
from optax_gate.kit.tolerances import ELEMENTWISE, EXACT, assert_close, reduction
from optax_gate.kit.training.models import MLP
from optax_gate.kit.trees import assert_dtype, leaves64


def nnx_contract(name: Any) -> Any:
    """The ``nnx:<name>`` contract marker (the report's API column)."""
    return pytest.mark.contract(api=f"nnx:{name}", guide=guides.NNX_TRANSFER)


LR = 0.1


def model(params_seed: Any = 0, dropout_seed: Any = 1) -> Any:
    return MLP(nnx.Rngs(params=params_seed, dropout=dropout_seed))


def batch(n: Any = 5, seed: Any = 2) -> Any:
    rng = np.random.default_rng(seed)
    return jnp.asarray(rng.normal(size=(n, 3)), jnp.float32), jnp.asarray(rng.normal(size=(n, 2)), jnp.float32)


def loss_fn(m: Any, x: Any, y: Any) -> Any:
    return jnp.mean((m(x) - y) ** 2)


@pytest.mark.golden
@nnx_contract("Optimizer")
def test_optimizer_sgd_step_equals_p_minus_lr_g_and_counts_steps() -> None:
    """One ``nnx.Optimizer(model, optax.sgd(0.1), wrt=nnx.Param).update(model,
    grads)`` moves every ``nnx.Param`` to ``p - 0.1 * g``; the step counter is
    a uint32 going 0 -> 1; batch statistics are not touched by the optimizer."""
    m = model()
    m.eval()
    x, y = batch()
    opt = nnx.Optimizer(m, optax.sgd(LR), wrt=nnx.Param)
    # nnx.state is a live view of the variables: copy the values out first.
    before, stats = leaves64(nnx.state(m, nnx.Param)), leaves64(nnx.state(m, nnx.BatchStat))
    grads = nnx.grad(loss_fn)(m, x, y)
    assert int(opt.step[...]) == 0 and opt.step[...].dtype == jnp.uint32
    updates = opt.update(m, grads)
    # update returns the applied updates: -lr * g, in the structure of the params.
    assert jax.tree.structure(nnx.to_pure_dict(updates)) == jax.tree.structure(
        nnx.to_pure_dict(nnx.state(m, nnx.Param))
    )
    for u, g in zip(leaves64(updates), leaves64(nnx.state(grads, nnx.Param)), strict=True):
        assert_close(u, -LR * g, dtype=jnp.float32, ulps=ELEMENTWISE, what="returned update")
    for p, g, new in zip(before, leaves64(nnx.state(grads, nnx.Param)), leaves64(nnx.state(m, nnx.Param)), strict=True):
        assert_close(new, p - LR * g, dtype=jnp.float32, ulps=ELEMENTWISE, scale=float(np.max(np.abs(p))), what="param")
    for old, new in zip(stats, leaves64(nnx.state(m, nnx.BatchStat)), strict=True):
        assert_close(new, old, dtype=jnp.float32, ulps=EXACT, what="batch stats")
    assert int(opt.step[...]) == 1


@pytest.mark.negative
@nnx_contract("Optimizer")
def test_only_what_wrt_selects_is_updated() -> None:
    """``wrt`` limited to linear2's params: linear1 stays bit for bit."""
    m = model()
    m.eval()
    x, y = batch()
    wrt = nnx.All(nnx.Param, nnx.PathContains("linear2"))
    opt = nnx.Optimizer(m, optax.sgd(LR), wrt=wrt)
    frozen, moving = leaves64(nnx.state(m.linear1, nnx.Param)), leaves64(nnx.state(m.linear2, nnx.Param))
    opt.update(m, nnx.grad(loss_fn, argnums=nnx.DiffState(0, wrt))(m, x, y))
    for old, new in zip(frozen, leaves64(nnx.state(m.linear1, nnx.Param)), strict=True):
        assert_close(new, old, dtype=jnp.float32, ulps=EXACT, what="linear1 (not selected)")
    assert any(not np.array_equal(a, b) for a, b in zip(moving, leaves64(nnx.state(m.linear2, nnx.Param)), strict=True))


@pytest.mark.negative
@nnx_contract("Optimizer")
def test_optimizer_requires_wrt() -> None:
    """Since Flax 0.11 ``wrt`` is required: leaving it out raises TypeError."""
    with pytest.raises(TypeError, match="Missing required argument `wrt`"):
        nnx.Optimizer(model(), optax.sgd(LR))


@pytest.mark.golden
@nnx_contract("Dropout")
def test_dropout_is_identity_in_eval_and_masks_with_scaling_in_train() -> None:
    """Eval: the input comes back unchanged. Train (``dropout`` stream): every
    element is 0 or x / (1 - 0.5) = 2, and both occur."""
    drop = nnx.Dropout(0.5, rngs=nnx.Rngs(dropout=0))
    x = jnp.ones((1000,))
    drop.eval()
    assert_close(drop(x), np.ones(1000), dtype=jnp.float32, ulps=EXACT, what="eval dropout")
    drop.train()
    values = set(np.unique(np.asarray(drop(x))).tolist())
    assert values == {0.0, 2.0}


@pytest.mark.golden
@nnx_contract("BatchNorm")
def test_batchnorm_uses_and_updates_batch_statistics_only_in_train_mode() -> None:
    """Train: the running mean becomes 0.99 * 0 + 0.01 * batch mean and the
    output is normalised by the batch's own statistics (mean ~0). Eval: the
    running statistics are used and left unchanged."""
    bn = nnx.BatchNorm(4, rngs=nnx.Rngs(0))
    h = jnp.asarray(np.random.default_rng(3).normal(loc=5.0, size=(8, 4)), jnp.float32)
    bn.train()
    out = bn(h)
    assert_close(
        bn.mean[...],
        0.01 * np.mean(np.asarray(h, np.float64), axis=0),
        dtype=jnp.float32,
        ulps=reduction(8),
        what="running mean",
    )
    assert_close(
        np.mean(np.asarray(out, np.float64), axis=0),
        np.zeros(4),
        dtype=jnp.float32,
        ulps=reduction(8),
        scale=5.0,
        what="train output mean",
    )
    bn.eval()
    before = np.asarray(bn.mean[...]).copy()
    bn(h)
    assert_close(bn.mean[...], before, dtype=jnp.float32, ulps=EXACT, what="running mean in eval")


@pytest.mark.negative
@nnx_contract("train-eval")
def test_forgetting_eval_mode_changes_the_output() -> None:
    """The guides' criterion 4 (mode set explicitly): the same model and input
    give different outputs in train and eval mode."""
    m = model()
    x, _ = batch()
    m.train()
    train_out = np.asarray(m(x))
    m.eval()
    assert not np.allclose(train_out, np.asarray(m(x)))


@pytest.mark.golden
@nnx_contract("Rngs")
def test_named_rng_streams_reproduce_and_order_matters() -> None:
    """Same seeds and the same order of requests: identical params and
    train-mode outputs. Another params seed: other params. The same two inputs
    in the other order: other dropout masks, so other outputs."""
    x1, _ = batch(seed=4)
    x2, _ = batch(seed=5)
    a, b = model(), model()
    for p, q in zip(leaves64(nnx.state(a, nnx.Param)), leaves64(nnx.state(b, nnx.Param)), strict=True):
        np.testing.assert_array_equal(p, q)
    assert any(
        not np.array_equal(p, q)
        for p, q in zip(
            leaves64(nnx.state(a, nnx.Param)), leaves64(nnx.state(model(params_seed=9), nnx.Param)), strict=True
        )
    )
    a.train()
    b.train()
    a1, a2 = np.asarray(a(x1)), np.asarray(a(x2))
    b1, b2 = np.asarray(b(x1)), np.asarray(b(x2))
    np.testing.assert_array_equal(a1, b1)
    np.testing.assert_array_equal(a2, b2)
    c = model()
    c.train()
    _c2, c1 = np.asarray(c(x2)), np.asarray(c(x1))  # x2 first: x1 then meets the second dropout mask
    assert not np.array_equal(c1, a1)


@pytest.mark.acceptance
@nnx_contract("model")
def test_shapes_dtypes_and_finiteness_of_outputs_loss_and_gradients() -> None:
    """Guides' acceptance criteria 2-3: output (5, 2) float32, scalar float32
    loss, gradients of every param's shape and dtype, all finite; one example
    (batch 1) works in eval mode."""
    m = model()
    m.train()
    x, y = batch()
    out = m(x)
    assert out.shape == (5, 2) and out.dtype == jnp.float32
    loss, grads = nnx.value_and_grad(loss_fn)(m, x, y)
    assert loss.shape == () and loss.dtype == jnp.float32 and bool(jnp.isfinite(loss))
    params = nnx.state(m, nnx.Param)
    assert jax.tree.map(jnp.shape, nnx.state(grads, nnx.Param)) == jax.tree.map(jnp.shape, params)
    assert_dtype(nnx.state(grads, nnx.Param), jnp.float32, "gradients")
    assert all(np.all(np.isfinite(g)) for g in leaves64(grads))
    m.eval()
    assert m(x[:1]).shape == (1, 2)


@pytest.mark.negative
@nnx_contract("model")
def test_a_wrongly_shaped_batch_raises_type_error() -> None:
    """The batch contract (features on the last axis, 3 of them): a (5, 4)
    batch fails in the first Linear with TypeError from dot_general."""
    m = model()
    m.eval()
    with pytest.raises(TypeError, match="dot_general requires contracting dimensions to have the same shape"):
        m(jnp.ones((5, 4)))


@pytest.mark.acceptance
@nnx_contract("Optimizer")
def test_the_optimizer_api_the_guides_rely_on() -> None:
    """``Optimizer(model, tx, *, wrt, graph=None)`` and ``update(model, grads,
    /, **kwargs)``: a Flax release that renames, reorders or drops one of these
    breaks this contract, and the message shows the signature it found."""

    def shape(fn: Any) -> Any:
        return [(p.name, p.kind.name) for p in inspect.signature(fn).parameters.values()]

    init, update = shape(nnx.Optimizer.__init__), shape(nnx.Optimizer.update)
    assert init[:4] == [
        ("self", "POSITIONAL_OR_KEYWORD"),
        ("model", "POSITIONAL_OR_KEYWORD"),
        ("tx", "POSITIONAL_OR_KEYWORD"),
        ("wrt", "KEYWORD_ONLY"),
    ], init
    assert update[:3] == [("self", "POSITIONAL_ONLY"), ("model", "POSITIONAL_ONLY"), ("grads", "POSITIONAL_ONLY")], (
        update
    )
