"""Contracts of ``optax.microbatching`` (``microbatch``, ``micro_grad``,
``reshape_batch_axis``, ``AccumulationType``), public since after the pinned
0.2.6 (issue 40 item 2): at an optax without it every contract here skips
with that reason, so for a team whose baseline has it (0.2.8) they pin the
baseline's behaviour and catch the next release's change.

Source read: optax 0.2.8 ``optax/microbatching/_microbatching.py``:
``reshape_batch_axis`` splits the batch axis into ``(num_microbatches,
microbatch_size)`` in column-major order (microbatch ``i`` holds rows ``i,
i + n, i + 2n, ...`` for ``n`` microbatches); ``microbatch`` runs ``fun`` on each
microbatch in a ``lax.fori_loop`` and combines the results per
``AccumulationType`` (SUM, MEAN over microbatches, RUNNING_MEAN over the
microbatches run, CONCAT back in the batch's order), stopping after
``num_real_microbatches`` when given; ``microbatch_size=None`` returns ``fun``
itself; a batch not divisible by ``microbatch_size`` and batch arguments of
unequal sizes raise ValueError; ``micro_grad`` is a ``value_and_grad`` over
examples of batch size 1 whose transformed gradients are accumulated (SUM by
default) and whose values and metrics come back per example.

Expected values: the docstrings' own examples (golden values), and float64
NumPy references written from those definitions (a sum over rows, the mean of
the microbatch sums, the per-example gradient ``(x . w - t) x`` of
``0.5 (x . w - t)^2``), within ``tolerances.reduction`` ULPs of the terms summed.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from optax_gate.gate.judge.findings import ABSENT_API
from optax_gate.kit import tolerances

GUIDE = "docs: optax 0.2.8 optax.microbatching docstrings (optax/microbatching/_microbatching.py)"
#: The batch: 8 rows of 3 float32 features, seeded; 4 microbatches of 2.
BATCH, FEATURES, MICRO = 8, 3, 2


def _api(name: str) -> Any:
    module = getattr(optax, "microbatching", None)
    if module is None:
        pytest.skip(f"optax.microbatching {ABSENT_API} (public after 0.2.6): the report reads it as new")
    return getattr(module, name)


def _contract(api: str) -> Any:
    return pytest.mark.contract(api=f"optax.microbatching.{api}", guide=GUIDE)


def _batch() -> Any:
    return np.random.default_rng(0).uniform(-1.0, 1.0, (BATCH, FEATURES)).astype(np.float32)


def _rows_and_total(x: Any) -> Any:
    """The function microbatched: per-row sum of squares (a batch-shaped output) and the total sum (a scalar)."""
    return jnp.sum(x**2, axis=1), jnp.sum(x)


def _microbatches(x: Any) -> list[Any]:
    """Column-major split: microbatch i holds rows i, i + n, ... (n microbatches)."""
    n = x.shape[0] // MICRO
    return [x[i::n] for i in range(n)]


@pytest.mark.golden
@_contract("reshape_batch_axis")
def test_reshape_batch_axis_is_column_major() -> None:
    """``reshape_batch_axis(arange(8), 2)`` is ``[[0, 4], [1, 5], [2, 6], [3, 7]]``
    (docstring: shape (num_microbatches, microbatch_size), column-major order)."""
    out = np.asarray(_api("reshape_batch_axis")(jnp.arange(BATCH), MICRO))
    np.testing.assert_array_equal(out, np.arange(BATCH).reshape((BATCH // MICRO, MICRO), order="F"))


@pytest.mark.golden
@_contract("microbatch")
def test_microbatch_docstring_example() -> None:
    """The docstring's example: ``fun = lambda x: (x + 1, sum(3 x))`` on ``[1, 2, 3, 4]``
    with (CONCAT, SUM) and microbatches of 2 gives ``([2, 3, 4, 5], 30)``, int32 as ``fun(data)``."""
    acc = _api("AccumulationType")
    out = optax.microbatch(
        lambda x: (x + 1, jnp.sum(3 * x)), argnums=0, microbatch_size=2, accumulator=(acc.CONCAT, acc.SUM)
    )(jnp.array([1, 2, 3, 4]))
    assert [a.dtype for a in out] == [jnp.int32, jnp.int32]
    np.testing.assert_array_equal(out[0], [2, 3, 4, 5])
    assert int(out[1]) == 30


@pytest.mark.golden
@_contract("microbatch")
@pytest.mark.parametrize("kind", ["SUM", "MEAN", "RUNNING_MEAN", "CONCAT"])
@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_microbatch_accumulators(kind: Any, mode: Any) -> None:
    """The scalar output accumulated per ``kind`` (SUM: the batch's total; MEAN and
    RUNNING_MEAN: the mean of the 4 microbatch totals; CONCAT: the 4 totals in
    order), the batch-shaped output concatenated back in the batch's row order;
    eagerly and under ``jax.jit``."""
    acc = _api("AccumulationType")
    x = _batch()
    fun = optax.microbatch(_rows_and_total, 0, MICRO, (acc.CONCAT, getattr(acc, kind)))
    rows, total = (jax.jit(fun) if mode == "jit" else fun)(jnp.asarray(x))
    x64 = x.astype(np.float64)
    totals = np.array([m.sum() for m in _microbatches(x64)])
    expected = {"SUM": totals.sum(), "MEAN": totals.mean(), "RUNNING_MEAN": totals.mean(), "CONCAT": totals}[kind]
    ulps = tolerances.reduction(x.size)
    tolerances.assert_close(total, expected, dtype="float32", ulps=ulps, scale=float(np.abs(x64).sum()), what=kind)
    tolerances.assert_close(
        rows, (x64**2).sum(axis=1), dtype="float32", ulps=tolerances.reduction(FEATURES), what="CONCAT rows"
    )


@pytest.mark.golden
@_contract("microbatch")
def test_num_real_microbatches_stops_early() -> None:
    """``num_real_microbatches=2`` runs the first two microbatches only (rows 0, 4 and
    1, 5): SUM is their total, RUNNING_MEAN their mean."""
    acc = _api("AccumulationType")
    x = _batch()
    first_two = [m.sum() for m in _microbatches(x.astype(np.float64))[:2]]
    for kind, expected in (("SUM", sum(first_two)), ("RUNNING_MEAN", sum(first_two) / 2)):
        fun = optax.microbatch(lambda b: jnp.sum(b), 0, MICRO, getattr(acc, kind), num_real_microbatches=2)
        tolerances.assert_close(
            fun(jnp.asarray(x)),
            expected,
            dtype="float32",
            ulps=tolerances.reduction(x.size),
            scale=float(np.abs(x).sum()),
            what=kind,
        )


@pytest.mark.golden
@_contract("microbatch")
def test_microbatch_size_none_is_fun_itself() -> None:
    """``microbatch_size=None`` returns ``fun`` unchanged (the source's first line)."""
    _api("microbatch")
    assert optax.microbatch(_rows_and_total, 0, None) is _rows_and_total


@pytest.mark.negative
@_contract("microbatch")
def test_microbatch_refuses_a_batch_it_cannot_split() -> None:
    """Negative cases: a batch of 8 in microbatches of 3 (not a divisor), and batch
    arguments of 8 and 6 rows, each raise ValueError (the docstring: the size
    "must evenly divide the batch axis size")."""
    _api("microbatch")
    x = jnp.asarray(_batch())
    with pytest.raises(ValueError, match="divisible"):
        optax.microbatch(jnp.sum, 0, 3)(x)
    with pytest.raises(ValueError, match="equal-size"):
        optax.microbatch(lambda a, b: jnp.sum(a) + jnp.sum(b), (0, 1), MICRO)(x, x[:6])


@pytest.mark.golden
@_contract("micro_grad")
def test_micro_grad_docstring_example() -> None:
    """The docstring's example: per-example gradients ``[0, 2, 4, 6]`` of a mean
    squared loss at zero params, MEAN of (g, g^2) is ``([-3.], [14.])``; values
    ``[0, 2, 8, 18]`` and metrics (norms) ``[0, 2, 4, 6]`` per example."""
    acc = _api("AccumulationType")

    def mean_squared_loss(params: Any, features: Any, targets: Any) -> Any:
        return 0.5 * jnp.mean((features @ params - targets) ** 2)

    (grads, squared), aux = _api("micro_grad")(
        mean_squared_loss,
        argnums=0,
        batch_argnums=(1, 2),
        accumulator=acc.MEAN,
        transform_fn=lambda g: (g, g**2),
        metrics_fn=jnp.linalg.norm,
    )(jnp.zeros(1), jnp.ones((4, 1)), jnp.array([0, 2, 4, 6]))
    np.testing.assert_array_equal(grads, [-3.0])
    np.testing.assert_array_equal(squared, [14.0])
    np.testing.assert_array_equal(aux.values, [0.0, 2.0, 8.0, 18.0])
    np.testing.assert_array_equal(aux.metrics, [0.0, 2.0, 4.0, 6.0])


@pytest.mark.golden
@_contract("micro_grad")
def test_micro_grad_sums_per_example_gradients() -> None:
    """SUM (the default) of the per-example gradients ``(x_i . w - t_i) x_i`` of
    ``0.5 (x_i . w - t_i)^2`` over 8 examples in microbatches of 2; the values
    ``0.5 (x_i . w - t_i)^2`` per example, in the batch's order."""
    x = _batch()
    w: Any = np.full(FEATURES, 0.1, np.float32)
    t: Any = np.arange(BATCH, dtype=np.float32)

    def loss(params: Any, features: Any, targets: Any) -> Any:
        return 0.5 * jnp.mean((features @ params - targets) ** 2)

    grads, aux = _api("micro_grad")(loss, argnums=0, batch_argnums=(1, 2), microbatch_size=MICRO)(
        jnp.asarray(w), jnp.asarray(x), jnp.asarray(t)
    )
    x64, w64, t64 = (a.astype(np.float64) for a in (x, w, t))
    residual = x64 @ w64 - t64
    scale = float(np.abs(residual[:, None] * x64).sum())
    tolerances.assert_close(
        grads,
        (residual[:, None] * x64).sum(axis=0),
        dtype="float32",
        ulps=tolerances.reduction(BATCH * FEATURES),
        scale=scale,
        what="summed gradient",
    )
    tolerances.assert_close(
        aux.values,
        0.5 * residual**2,
        dtype="float32",
        ulps=tolerances.reduction(FEATURES),
        scale=float(np.max(0.5 * residual**2)),
        what="per-example values",
    )


@pytest.mark.golden
@_contract("microbatch")
@pytest.mark.parametrize("form", ["argnames", "positional_with_keyword", "jit_argnames"])
def test_microbatch_in_each_calling_form(form: Any) -> None:
    """The batch passed by keyword (``argnums=()``, ``argnames="x"``, called ``f(x=batch)``), positionally beside a
    keyword argument that is not batched (``f(batch, scale=2.0)``: each microbatch's total times 2), and by
    keyword under ``jax.jit``: SUM is the batch's total (times the scale), as ``fun`` on the whole batch."""
    _api("microbatch")
    x = _batch()
    scale = 2.0 if form == "positional_with_keyword" else 1.0
    if form == "positional_with_keyword":
        out = optax.microbatch(lambda b, scale: jnp.sum(b) * scale, argnums=0, microbatch_size=MICRO)(
            jnp.asarray(x), scale=2.0
        )
    else:
        fun = optax.microbatch(lambda x: jnp.sum(x), argnums=(), microbatch_size=MICRO, argnames="x")
        out = (jax.jit(fun) if form.startswith("jit") else fun)(x=jnp.asarray(x))
    x64 = x.astype(np.float64)
    tolerances.assert_close(
        out,
        scale * x64.sum(),
        dtype="float32",
        ulps=tolerances.reduction(x.size),
        scale=scale * float(np.abs(x64).sum()),
        what=form,
    )


@pytest.mark.negative
@_contract("microbatch")
@pytest.mark.known_defect("microbatch-empty-batch-errors")
@pytest.mark.parametrize("kind, error", [("SUM", IndexError), ("MEAN", ValueError), ("CONCAT", ValueError)])
def test_microbatch_over_an_empty_batch_raises(kind: Any, error: Any) -> None:
    """A batch of 0 rows in microbatches of 2 (0 divides evenly): optax 0.2.8 raises, IndexError for SUM
    ("Cannot do a non-empty jnp.take() from an empty axis"), ValueError for MEAN and CONCAT
    ("num_microbatches=0 must be positive"), where the sum over no microbatch would be 0."""
    acc = _api("AccumulationType")
    fun = optax.microbatch(lambda b: b * 2.0 if kind == "CONCAT" else jnp.sum(b), 0, MICRO, getattr(acc, kind))
    with pytest.raises(error):
        fun(jnp.zeros((0, FEATURES), jnp.float32))


@pytest.mark.negative
@_contract("microbatch")
@pytest.mark.known_defect("microbatch-argnums-by-keyword-index-error")
def test_microbatch_argnums_called_by_keyword_raises_index_error() -> None:
    """``argnums=0`` with the batch passed by keyword (``f(x=batch)``): optax 0.2.8 raises a bare IndexError
    ("tuple index out of range") instead of microbatching it or naming ``argnames``."""
    _api("microbatch")
    with pytest.raises(IndexError):
        optax.microbatch(lambda x: jnp.sum(x), argnums=0, microbatch_size=MICRO)(x=jnp.asarray(_batch()))
