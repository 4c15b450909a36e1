"""Contracts of Optax's per-example losses: ``softmax_cross_entropy``,
``softmax_cross_entropy_with_integer_labels``, ``sigmoid_binary_cross_entropy``,
``l2_loss``, ``squared_error`` and ``huber_loss`` (top-level ``optax.*``).

Expected values and gradients come from
``optax_gate.kit.references.losses``: float64 NumPy formulas of each loss and
of its closed-form derivative, evaluated on the inputs *as cast* to the dtype
under test. Each test is marked with the one API it pins.

Shapes: classification logits ``(B, C) = (4, 5)`` (or ``(2, 3, 5)``), integer
labels ``(B,)``, label distributions ``(B, C)``; regression predictions and
targets ``(4, 5)``. Outputs: one loss per example, ``(B,)`` for the
cross-entropies, the input's shape for the element-wise losses; no reduction
(the caller's ``mean``/``sum``). Output dtype: the logits'/predictions' dtype.

Source read: optax 0.2.6 ``optax/losses/_classification.py`` and
``optax/losses/_regression.py``. Behaviours pinned from that source:

- Every loss checks its float input with ``chex.assert_type`` and raises
  ``AssertionError`` ("Assertion assert_type failed"); integer labels are
  checked likewise. ``squared_error``/``l2_loss`` refuse targets of another
  shape even when broadcastable (``chex.assert_equal_shape``);
  ``huber_loss`` does not check and broadcasts.
- ``softmax_cross_entropy`` computes ``labels * log_softmax``: a ``-inf``
  logit with a zero label gives NaN (0 * -inf; the docstring points to
  ``safe_softmax_cross_entropy``), while its gradient stays finite. The
  integer-label version picks the label's logit and stays finite.
- Out-of-range integer labels are not checked: ``jnp.take_along_axis``
  fills NaN for ``label >= C`` or ``label < -C``; ``-C <= label < 0`` wraps
  like NumPy indexing. The same under ``jax.jit``.
- ``where``: an example with no included class gives 0; a mask of batch
  shape is broadcast along ``axis``.
- ``sigmoid_binary_cross_entropy`` casts labels to the logits' dtype;
  ``softmax_cross_entropy`` promotes (bfloat16 logits, float32 labels give
  float32).
- Signatures: all parameters positional-or-keyword; ``huber_loss`` warns
  (``DeprecationWarning``) when ``delta`` is passed positionally
  (``chex.warn_only_n_pos_args_in_future(n=2)``).

Tolerances (``kit.tolerances``): element-wise losses ``ELEMENTWISE`` relative
to the operands' scale (``max(|p|+|t|)**2``, or ``delta * max|e|`` for
Huber); sigmoid cross-entropy two stages (``2 * ELEMENTWISE``: the
``log_sigmoid`` of ``exp``/``log1p``, then the label-weighted sum);
softmax cross-entropy two sums over C classes (the normaliser and the
label-weighted sum: ``reduction(2 * C)``) relative to ``max|x| + log C``.
"""

import functools
import inspect
import math
import re
import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from optax_gate.kit import jit_parity, pinned
from optax_gate.kit.references import losses as ref
from optax_gate.kit.tolerances import ELEMENTWISE, EXACT, assert_close, reduction

SOURCES = {
    "softmax_cross_entropy": "paper: Goodfellow, Bengio & Courville 2016 (Deep "
    "Learning) §3.13, cross-entropy of softmax",
    "softmax_cross_entropy_with_integer_labels": "paper: Goodfellow, Bengio & Courville 2016 §3.13, "
    "cross-entropy of softmax, one-hot label",
    "sigmoid_binary_cross_entropy": "paper: Goodfellow, Bengio & Courville 2016 §6.2.2.2, sigmoid cross-entropy",
    "l2_loss": "paper: Bishop 2006 (PRML) eq. 1.2, (p - t)^2 / 2",
    "squared_error": "formula: (p - t)^2 element-wise",
    "huber_loss": "paper: Huber 1964, e^2/2 for |e| <= delta, delta (|e| - delta/2) beyond",
}
APIS = tuple(SOURCES)
B, C = 4, 5


def contract(api: Any) -> Any:
    """The contract marker of one loss API."""
    return pytest.mark.contract(api=f"optax.{api}", guide=SOURCES[api])


def per_api(apis: Any = APIS) -> Any:
    return [pytest.param(a, marks=contract(a), id=a) for a in apis]


def inputs(api: Any, dtype: Any = jnp.float32, seed: Any = 0, shape: Any = (B, C)) -> Any:
    """Seeded inputs of ``api``: ``(args as JAX arrays in dtype, the same as
    float64 NumPy (the cast values), kwargs)``. Labels are integers, a
    distribution (softmax of normals), or values in [0, 1]."""
    rng = np.random.default_rng(seed)
    first = 2.0 * rng.normal(size=shape)
    if api == "softmax_cross_entropy":
        z = rng.normal(size=shape)
        second = np.exp(z) / np.exp(z).sum(-1, keepdims=True)
    elif api == "softmax_cross_entropy_with_integer_labels":
        second = rng.integers(0, shape[-1], size=shape[:-1])
    elif api == "sigmoid_binary_cross_entropy":
        second = rng.uniform(size=shape)
    else:
        second = 2.0 * rng.normal(size=shape)
    a = jnp.asarray(first, dtype)
    b = jnp.asarray(second) if api == "softmax_cross_entropy_with_integer_labels" else jnp.asarray(second, dtype)
    kwargs = {"delta": 1.5} if api == "huber_loss" else {}
    return (
        (a, b),
        (np.asarray(a, np.float64), np.asarray(b) if b.dtype.kind == "i" else np.asarray(b, np.float64)),
        kwargs,
    )


REFERENCE: dict[str, tuple[Any, ...]] = {
    "softmax_cross_entropy": (ref.softmax_cross_entropy, ref.softmax_cross_entropy_grad),
    "softmax_cross_entropy_with_integer_labels": (
        ref.integer_label_cross_entropy,
        ref.integer_label_cross_entropy_grad,
    ),
    "sigmoid_binary_cross_entropy": (ref.sigmoid_binary_cross_entropy, ref.sigmoid_binary_cross_entropy_grad),
    "l2_loss": (ref.l2_loss, ref.l2_loss_grad),
    "squared_error": (ref.squared_error, ref.squared_error_grad),
    "huber_loss": (ref.huber_loss, ref.huber_loss_grad),
}


def budget(api: Any, args64: Any, kwargs: Any) -> Any:
    """``(ulps, scale)`` of ``api``'s value (see the module docstring)."""
    x = args64[0]
    if api.startswith("softmax"):
        return reduction(2 * x.shape[-1]), float(np.max(np.abs(x))) + math.log(x.shape[-1])
    if api == "sigmoid_binary_cross_entropy":
        return 2 * ELEMENTWISE, float(np.max(np.abs(x))) + 1.0
    e = float(np.max(np.abs(x)) + np.max(np.abs(args64[1])))
    return ELEMENTWISE, (kwargs["delta"] * e if api == "huber_loss" else e * e)


def grad_budget(api: Any, args64: Any, kwargs: Any) -> Any:
    """``(ulps, scale)`` of the gradient: the softmax's normaliser sums C
    terms (``reduction(C)``, relative to 1); a sigmoid is one stage of
    roundings relative to 1; the element-wise derivatives are one stage
    relative to the error's scale. For ``huber_loss`` the operands also include
    ``delta``: the derivative of its linear piece ``delta * (|e| - min(|e|,
    delta))`` is ``delta * (sign(e) - sign(e))``, exactly 0 but formed from two
    terms of size ``delta`` that XLA may add to the quadratic piece's ``e``
    before they cancel (seen at e = 5.7e-6, delta = 1: an error of 2e-8, one
    float32 ULP of 1 times a few), so the scale is ``delta`` when that is larger."""
    x = args64[0]
    if api.startswith("softmax"):
        return reduction(x.shape[-1]), 1.0
    if api == "sigmoid_binary_cross_entropy":
        return 2 * ELEMENTWISE, 1.0
    scale = 2.0 * float(np.max(np.abs(x)) + np.max(np.abs(args64[1])))
    if api == "huber_loss":
        scale = max(scale, float(kwargs.get("delta", 1.0)))
    return ELEMENTWISE, scale


def loss_fn(api: Any) -> Any:
    return getattr(optax, api)


# --------------------------------------------------------------------------- golden


GOLDEN = {
    "softmax_cross_entropy": (
        (jnp.array([[0.0, 0.0], [math.log(3.0), 0.0]]), jnp.array([[1.0, 0.0], [0.0, 1.0]])),
        [math.log(2), math.log(4)],
    ),
    "softmax_cross_entropy_with_integer_labels": (
        (jnp.array([[0.0, 0.0], [math.log(3.0), 0.0]]), jnp.array([0, 1])),
        [math.log(2), math.log(4)],
    ),
    "sigmoid_binary_cross_entropy": (
        (jnp.array([0.0, math.log(3.0)]), jnp.array([1.0, 0.0])),
        [math.log(2), math.log(4)],
    ),
    "l2_loss": ((jnp.array([3.0, -1.0]), jnp.array([1.0, 1.0])), [2.0, 2.0]),
    "squared_error": ((jnp.array([3.0, -1.0]), jnp.array([1.0, 1.0])), [4.0, 4.0]),
    "huber_loss": ((jnp.array([3.0, 0.5, -2.0]), jnp.array([0.0, 0.0, 0.0])), [4.0, 0.125, 2.0]),
}


@pytest.mark.golden
@pytest.mark.parametrize("api", per_api())
def test_closed_form_values(api: Any) -> None:
    """Hand-computable values: softmax([ln 3, 0]) = [3/4, 1/4] so the
    cross-entropies are ln 2 (uniform) and ln 4; sigmoid(ln 3) = 3/4;
    (3 - 1)^2 = 4 and half of it; Huber with delta 2: 2 (3 - 1) = 4,
    0.5^2 / 2, and at |e| = delta both pieces give 2."""
    args, want = GOLDEN[api]
    got = loss_fn(api)(*args, **({"delta": 2.0} if api == "huber_loss" else {}))
    assert_close(got, want, dtype=jnp.float32, ulps=reduction(4), scale=max(want), what=api)


@pytest.mark.golden
@pytest.mark.parametrize("api", per_api(APIS[:2]))
def test_cross_entropy_is_stable_for_logits_of_1e4(api: Any) -> None:
    """Logits [1e4, -1e4, 0] and [-1e4, 1e4, 0], label class 0: losses 0 and
    2e4 (logsumexp shifted by the maximum), finite gradients equal to
    ``softmax - onehot`` = [0, 0, 0] and [-1, 1, 0]."""
    logits = jnp.array([[1e4, -1e4, 0.0], [-1e4, 1e4, 0.0]])
    labels = jnp.array([0, 0]) if api.endswith("labels") else jnp.array([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    fn = loss_fn(api)
    assert_close(fn(logits, labels), [0.0, 2e4], dtype=jnp.float32, ulps=ELEMENTWISE, scale=2e4, what="loss")
    assert_close(
        jax.grad(lambda x: fn(x, labels).sum())(logits),
        [[0, 0, 0], [-1, 1, 0]],
        dtype=jnp.float32,
        ulps=ELEMENTWISE,
        scale=1.0,
        what="grad",
    )


@pytest.mark.golden
@contract("huber_loss")
def test_huber_gradient_is_the_error_clipped_to_delta() -> None:
    """d/dp Huber = clip(e, -delta, delta): at e = -3, -1, 0, 0.5, 1, 3 with
    delta 1 the gradient is -1, -1, 0, 0.5, 1, 1 (continuous at the kink)."""
    e = jnp.array([-3.0, -1.0, 0.0, 0.5, 1.0, 3.0])
    got = jax.grad(lambda p: optax.huber_loss(p, delta=1.0).sum())(e)
    assert_close(got, [-1, -1, 0, 0.5, 1, 1], dtype=jnp.float32, ulps=EXACT, what="huber grad")


# --------------------------------------------------------------------------- every dtype


@pytest.mark.acceptance
@pytest.mark.parametrize("api", per_api())
def test_values_shape_and_dtype_in_every_dtype(api: Any, dtype: Any) -> None:
    """Seeded (4, 5) inputs in float32, bfloat16, float16 and float64 (x64):
    one value per example (shape (4,) or (4, 5): no reduction), in the input
    dtype, within the budget of the float64 reference on the cast inputs."""
    args, args64, kwargs = inputs(api, dtype)
    got = loss_fn(api)(*args, **kwargs)
    want = REFERENCE[api][0](*args64, **kwargs)
    assert got.shape == want.shape and got.dtype == dtype, (got.shape, got.dtype)
    ulps, scale = budget(api, args64, kwargs)
    assert_close(got, want, dtype=dtype, ulps=ulps, scale=scale, what=api)


@pytest.mark.acceptance
@pytest.mark.parametrize("api", per_api())
def test_gradient_matches_analytic_derivative_in_float32_and_float64(api: Any) -> None:
    """``jax.grad`` of the summed loss with respect to the logits or
    predictions equals the closed-form derivative (``references_losses.*_grad``),
    in float32 and under x64 in float64."""
    for name in ("float32", "float64"):
        with jax.enable_x64(name == "float64"):
            dtype = jnp.dtype(name)
            (a, b), args64, kwargs = inputs(api, dtype, seed=1)
            got = jax.grad(lambda x, b=b, kwargs=kwargs: loss_fn(api)(x, b, **kwargs).sum())(a)
            assert got.dtype == dtype
            ulps, scale = grad_budget(api, args64, kwargs)
            assert_close(
                got,
                REFERENCE[api][1](*args64, **kwargs),
                dtype=dtype,
                ulps=ulps,
                scale=scale,
                what=f"{api} grad {name}",
            )


@pytest.mark.acceptance
@pytest.mark.parametrize("api", per_api())
def test_leading_batch_axes_are_kept(api: Any) -> None:
    """With inputs of shape (2, 3, 5) the cross-entropies return (2, 3) and
    the element-wise losses (2, 3, 5): every leading axis is a batch axis."""
    args, args64, kwargs = inputs(api, shape=(2, 3, C))
    got = loss_fn(api)(*args, **kwargs)
    assert got.shape == ((2, 3) if api.startswith("softmax") else (2, 3, C))
    ulps, scale = budget(api, args64, kwargs)
    assert_close(got, REFERENCE[api][0](*args64, **kwargs), dtype=jnp.float32, ulps=ulps, scale=scale, what=api)


# --------------------------------------------------------------------------- properties
# Each property checks the per-example value and the gradient of the summed
# loss, both computed by one jitted function per API (see _jitted_value_and_grad).

_logits = hnp.arrays(np.float64, (3, 4), elements=st.floats(-30.0, 30.0))
_values = hnp.arrays(np.float64, (3, 4), elements=st.floats(-1e3, 1e3))


@functools.cache
def _jitted_value_and_grad(api: Any) -> Any:
    """``(per-example loss, gradient of its sum)`` of ``api`` under one
    ``jax.jit`` per API (``delta`` traced), so a property's examples share one
    compilation; eager calls are pinned by the other contracts."""
    fn = loss_fn(api)

    def run(a: Any, b: Any, delta: Any) -> Any:
        kwargs = {"delta": delta} if api == "huber_loss" else {}
        return fn(a, b, **kwargs), jax.grad(lambda x: fn(x, b, **kwargs).sum())(a)

    return jax.jit(run)


def _check_value_and_grad(api: Any, args: Any, kwargs: Any = None) -> None:
    kwargs = kwargs or {}
    a = jnp.asarray(args[0], jnp.float32)
    b = jnp.asarray(args[1]) if api.endswith("labels") else jnp.asarray(args[1], jnp.float32)
    args64 = (np.asarray(a, np.float64), np.asarray(b) if api.endswith("labels") else np.asarray(b, np.float64))
    per_example, grad = _jitted_value_and_grad(api)(a, b, jnp.float32(kwargs.get("delta", 1.0)))
    if kwargs:
        kwargs = {"delta": float(np.float32(kwargs["delta"]))}
    ulps, scale = budget(api, args64, kwargs)
    assert_close(
        per_example,
        REFERENCE[api][0](*args64, **kwargs),
        dtype=jnp.float32,
        ulps=ulps,
        scale=scale,
        what=f"{api} value",
    )
    gulps, gscale = grad_budget(api, args64, kwargs)
    assert_close(
        grad, REFERENCE[api][1](*args64, **kwargs), dtype=jnp.float32, ulps=gulps, scale=gscale, what=f"{api} grad"
    )


@pytest.mark.property
@contract("softmax_cross_entropy")
@given(logits=_logits, z=_logits)
def test_softmax_cross_entropy_value_and_gradient_property(logits: Any, z: Any) -> None:
    """Any logits in [-30, 30] and any label distribution (softmax of z)."""
    labels = np.exp(z - z.max(-1, keepdims=True))
    _check_value_and_grad("softmax_cross_entropy", (logits, labels / labels.sum(-1, keepdims=True)))


@pytest.mark.property
@contract("softmax_cross_entropy_with_integer_labels")
@given(logits=_logits, labels=hnp.arrays(np.int32, (3,), elements=st.integers(0, 3)))
def test_integer_label_cross_entropy_value_and_gradient_property(logits: Any, labels: Any) -> None:
    """Any logits in [-30, 30] and any in-range labels."""
    _check_value_and_grad("softmax_cross_entropy_with_integer_labels", (logits, labels))


@pytest.mark.property
@contract("sigmoid_binary_cross_entropy")
@given(
    logits=hnp.arrays(np.float64, (3, 4), elements=st.floats(-80.0, 80.0)),
    labels=hnp.arrays(np.float64, (3, 4), elements=st.floats(0.0, 1.0)),
)
def test_sigmoid_cross_entropy_value_and_gradient_property(logits: Any, labels: Any) -> None:
    """Logits in [-80, 80] (far into the saturated range) and soft labels."""
    _check_value_and_grad("sigmoid_binary_cross_entropy", (logits, labels))


@pytest.mark.property
@pytest.mark.parametrize("api", per_api(("l2_loss", "squared_error")))
@given(p=_values, t=_values)
def test_squared_losses_value_and_gradient_property(api: Any, p: Any, t: Any) -> None:
    """Any predictions and targets in [-1e3, 1e3]."""
    _check_value_and_grad(api, (p, t))


@pytest.mark.property
@contract("huber_loss")
@given(p=_values, t=_values, delta=st.floats(0.01, 100.0))
def test_huber_value_and_gradient_property(p: Any, t: Any, delta: Any) -> None:
    """Any predictions, targets and delta: both pieces of the loss."""
    _check_value_and_grad("huber_loss", (p, t), {"delta": delta})


# --------------------------------------------------------------------------- calling conventions


SIGNATURES: dict[str, list[tuple[Any, ...]]] = {
    "softmax_cross_entropy": [
        ("logits", "POSITIONAL_OR_KEYWORD", None),
        ("labels", "POSITIONAL_OR_KEYWORD", None),
        ("axis", "POSITIONAL_OR_KEYWORD", -1),
        ("where", "POSITIONAL_OR_KEYWORD", None),
    ],
    "softmax_cross_entropy_with_integer_labels": [
        ("logits", "POSITIONAL_OR_KEYWORD", None),
        ("labels", "POSITIONAL_OR_KEYWORD", None),
        ("axis", "POSITIONAL_OR_KEYWORD", -1),
        ("where", "POSITIONAL_OR_KEYWORD", None),
    ],
    "sigmoid_binary_cross_entropy": [
        ("logits", "POSITIONAL_OR_KEYWORD", None),
        ("labels", "POSITIONAL_OR_KEYWORD", None),
    ],
    "l2_loss": [("predictions", "POSITIONAL_OR_KEYWORD", None), ("targets", "POSITIONAL_OR_KEYWORD", None)],
    "squared_error": [("predictions", "POSITIONAL_OR_KEYWORD", None), ("targets", "POSITIONAL_OR_KEYWORD", None)],
    "huber_loss": [
        ("predictions", "POSITIONAL_OR_KEYWORD", None),
        ("targets", "POSITIONAL_OR_KEYWORD", None),
        ("delta", "POSITIONAL_OR_KEYWORD", 1.0),
    ],
}


@pytest.mark.negative
@pytest.mark.parametrize("api", per_api())
def test_signature_names_kinds_and_defaults(api: Any) -> None:
    """``inspect.signature``: parameter names, kinds and defaults (a required
    parameter shown with default None here). A release that renames,
    reorders, makes keyword-only or changes a default breaks this contract."""
    params = inspect.signature(loss_fn(api)).parameters.values()
    got = [(p.name, p.kind.name, None if p.default is inspect.Parameter.empty else p.default) for p in params]
    assert got == SIGNATURES[api], got


@pytest.mark.acceptance
@pytest.mark.parametrize("api", per_api())
def test_positional_and_keyword_calls_agree(api: Any) -> None:
    """``f(a, b)``, ``f(a, <second>=b)`` and ``f(<first>=a, <second>=b)``
    return the same values bit for bit, without a warning."""
    (a, b), _, _ = inputs(api)
    first, second = (n for n, *_ in SIGNATURES[api][:2])
    fn = loss_fn(api)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        calls = [fn(a, b), fn(a, **{second: b}), fn(**{first: a, second: b})]
    for c in calls[1:]:
        assert_close(c, np.asarray(calls[0], np.float64), dtype=jnp.float32, ulps=EXACT, what=api)


@pytest.mark.negative
@contract("huber_loss")
@pytest.mark.configuration(delta="passed positionally")
def test_huber_delta_passed_positionally_warns_but_is_used() -> None:
    """``huber_loss(p, t, 2.0)`` gives the delta-2 loss and a
    ``DeprecationWarning`` that only 2 arguments may be positional; by
    keyword no warning."""
    p, t = jnp.array([3.0]), jnp.array([0.0])
    with pytest.warns(DeprecationWarning, match=pinned.POSITIONAL_DELTA):
        got = optax.huber_loss(p, t, 2.0)
    assert_close(got, [4.0], dtype=jnp.float32, ulps=ELEMENTWISE, what="positional delta")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_close(
            optax.huber_loss(p, t, delta=2.0), [4.0], dtype=jnp.float32, ulps=ELEMENTWISE, what="keyword delta"
        )


@pytest.mark.acceptance
@pytest.mark.parametrize("api", per_api(("l2_loss", "squared_error", "huber_loss")))
def test_targets_default_to_zero(api: Any) -> None:
    """Without targets the loss is that of ``targets = 0``."""
    (a, _b), _, kwargs = inputs(api)
    assert_close(
        loss_fn(api)(a, **kwargs),
        np.asarray(loss_fn(api)(a, jnp.zeros_like(a), **kwargs), np.float64),
        dtype=jnp.float32,
        ulps=EXACT,
        what=api,
    )


# --------------------------------------------------------------------------- jit


@pytest.mark.acceptance
@pytest.mark.parametrize("api", per_api())
def test_jit_matches_eager_and_does_not_recompile(api: Any) -> None:
    """``jax.jit(loss)`` on two seeded input sets of one shape equals the
    eager values; the second call compiles nothing."""
    fn = loss_fn(api)
    (a0, b0), args64, kwargs = inputs(api, seed=2)
    (a1, b1), _, _ = inputs(api, seed=3)
    ulps, scale = budget(api, args64, kwargs)
    jit_parity.assert_jit_matches_eager(lambda a, b: fn(a, b, **kwargs), [(a0, b0), (a1, b1)], ulps=ulps, scale=scale)


# --------------------------------------------------------------------------- cross-entropy edges


@pytest.mark.negative
@contract("softmax_cross_entropy")
def test_minus_inf_logit_with_zero_label_gives_nan_but_a_finite_gradient() -> None:
    """``labels * log_softmax``: a -inf logit whose label is 0 gives 0 *
    -inf = NaN (the docstring sends such inputs to
    ``safe_softmax_cross_entropy``); the gradient, ``softmax - labels``, is
    finite: softmax([0, -inf, 1]) - [1, 0, 0] = [-e/(1+e), 0, e/(1+e)]."""
    logits, labels = jnp.array([[0.0, -jnp.inf, 1.0]]), jnp.array([[1.0, 0.0, 0.0]])
    assert np.isnan(float(optax.softmax_cross_entropy(logits, labels)[0]))
    grad = jax.grad(lambda x: optax.softmax_cross_entropy(x, labels).sum())(logits)
    s = 1.0 / (1.0 + math.e)
    assert_close(grad, [[s - 1.0, 0.0, 1.0 - s]], dtype=jnp.float32, ulps=reduction(3), scale=1.0, what="grad")


@pytest.mark.negative
@contract("softmax_cross_entropy_with_integer_labels")
def test_minus_inf_logit_is_finite_unless_it_is_the_label() -> None:
    """Integer labels: a -inf logit of another class is harmless, loss
    log(1 + e) - 0 = ln(1 + e); a -inf logit *at* the label gives +inf."""
    logits = jnp.array([[0.0, -jnp.inf, 1.0]])
    assert_close(
        optax.softmax_cross_entropy_with_integer_labels(logits, jnp.array([0])),
        [math.log(1 + math.e)],
        dtype=jnp.float32,
        ulps=reduction(6),
        scale=2.0,
        what="finite",
    )
    assert float(optax.softmax_cross_entropy_with_integer_labels(logits, jnp.array([1]))[0]) == math.inf


@pytest.mark.negative
@contract("softmax_cross_entropy_with_integer_labels")
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_out_of_range_labels_give_nan_or_wrap(jit: Any) -> None:
    """Labels are not checked: C and C + 2 (too large) and -C - 1 give NaN;
    -1 wraps to the last class (loss = logsumexp - x[-1]). Eager and jitted
    alike."""
    logits = jnp.array([[0.5, 1.0, -1.0]] * 4)
    fn = (
        jax.jit(optax.softmax_cross_entropy_with_integer_labels)
        if jit
        else optax.softmax_cross_entropy_with_integer_labels
    )
    got = np.asarray(fn(logits, jnp.array([3, 5, -4, -1])), np.float64)
    assert np.isnan(got[:3]).all(), got
    assert_close(
        got[3],
        ref.integer_label_cross_entropy(np.array([[0.5, 1.0, -1.0]]), np.array([2]))[0],
        dtype=jnp.float32,
        ulps=reduction(6),
        scale=2.0,
        what="label -1",
    )


@pytest.mark.acceptance
@pytest.mark.parametrize("api", per_api(APIS[:2]))
def test_axis_selects_the_class_axis(api: Any) -> None:
    """``axis=0``: classes along the first axis, (5, 4) logits give 4 losses;
    equal to the reference on the transposed input."""
    (a, b), (a64, b64), _ = inputs(api, seed=4)
    got = loss_fn(api)(a.T, b.T if b.ndim == 2 else b, axis=0)
    want = REFERENCE[api][0](a64, b64)
    ulps, scale = budget(api, (a64,), {})
    assert_close(got, want, dtype=jnp.float32, ulps=ulps, scale=scale, what="axis=0")


@pytest.mark.acceptance
@contract("softmax_cross_entropy_with_integer_labels")
def test_tuple_axis_reads_labels_as_flat_indices() -> None:
    """Docstring: with ``axis=(2, 3)`` on (1, 2, 3, 4) logits a label is a
    flat index into the (3, 4) slice; logits ``arange(24)``, labels
    ravel((1, 1)) = 5 and ravel((2, 3)) = 11: losses logsumexp(0..11) - 5 and
    logsumexp(12..23) - 23 (= logsumexp(0..11) - 11)."""
    logits = jnp.arange(24, dtype=jnp.float32).reshape(1, 2, 3, 4)
    got = optax.softmax_cross_entropy_with_integer_labels(logits, jnp.array([[5, 11]]), axis=(2, 3))
    lse = float(ref.logsumexp(np.arange(12.0)))
    assert got.shape == (1, 2)
    assert_close(got, [[lse - 5.0, lse - 11.0]], dtype=jnp.float32, ulps=reduction(24), scale=24.0, what="tuple axis")


@pytest.mark.acceptance
@pytest.mark.parametrize("api", per_api(APIS[:2]))
def test_where_restricts_the_classes_and_zeroes_empty_examples(api: Any) -> None:
    """``where`` of the logits' shape: the softmax runs over the included
    classes only (labels on included classes); an example with no included
    class gives 0. ``where`` of batch shape (4,): excluded examples give 0,
    the others their full loss."""
    (a, b), (a64, b64), _ = inputs(api, seed=5)
    mask: Any = np.ones((B, C), bool)
    mask[0, 3:] = False
    mask[1, :] = False
    if api.endswith("labels"):
        b = jnp.array([0, 1, 2, 4])
        b64 = np.asarray(b)
    else:
        b64 = np.where(mask, b64, 0.0)
        b64 = b64 / np.maximum(b64.sum(-1, keepdims=True), 1e-300)
        b = jnp.asarray(b64, jnp.float32)
        b64 = np.asarray(b, np.float64)
    fn = loss_fn(api)
    ulps, scale = budget(api, (a64,), {})
    got = fn(a, b, where=jnp.asarray(mask))
    assert_close(
        got, REFERENCE[api][0](a64, b64, where=mask), dtype=jnp.float32, ulps=ulps, scale=scale, what="where (B, C)"
    )
    assert float(got[1]) == 0.0
    rows = np.array([True, False, True, False])
    got = fn(a, b, where=jnp.asarray(rows))
    want = np.where(rows, REFERENCE[api][0](a64, b64), 0.0)
    assert_close(got, want, dtype=jnp.float32, ulps=ulps, scale=scale, what="where (B,)")


@pytest.mark.negative
@contract("sigmoid_binary_cross_entropy")
def test_sigmoid_casts_labels_to_the_logits_dtype() -> None:
    """bfloat16 logits with float32 (or int32) labels give bfloat16 losses
    (``labels.astype(logits.dtype)``), unlike ``softmax_cross_entropy``,
    which promotes."""
    logits = jnp.array([0.5, -1.0], jnp.bfloat16)
    assert optax.sigmoid_binary_cross_entropy(logits, jnp.array([1.0, 0.0], jnp.float32)).dtype == jnp.bfloat16
    assert optax.sigmoid_binary_cross_entropy(logits, jnp.array([1, 0], jnp.int32)).dtype == jnp.bfloat16


@pytest.mark.negative
@contract("softmax_cross_entropy")
def test_softmax_cross_entropy_promotes_mixed_dtypes() -> None:
    """bfloat16 logits with float32 labels give float32 losses (JAX
    promotion of ``labels * log_probs``)."""
    logits = jnp.array([[0.5, -1.0]], jnp.bfloat16)
    assert optax.softmax_cross_entropy(logits, jnp.array([[1.0, 0.0]], jnp.float32)).dtype == jnp.float32


# --------------------------------------------------------------------------- invalid arguments


@pytest.mark.negative
@pytest.mark.parametrize("api", per_api())
def test_integer_logits_or_predictions_raise_assertion_error(api: Any) -> None:
    """``chex.assert_type([x], float)``: an int32 first argument raises
    ``AssertionError``."""
    (a, b), _, kwargs = inputs(api)
    with pytest.raises(AssertionError, match=pinned.CHEX_TYPE):
        loss_fn(api)(a.astype(jnp.int32), b, **kwargs)


@pytest.mark.negative
@contract("softmax_cross_entropy_with_integer_labels")
def test_float_labels_and_bad_axis_are_refused() -> None:
    """Float labels: ``AssertionError`` (chex type check); ``axis=5`` on 2-D
    logits: ``ValueError`` out of bounds; ``axis=[1]`` (a list):
    ``ValueError`` naming the allowed types."""
    (a, b), _, _ = inputs("softmax_cross_entropy_with_integer_labels")
    fn = optax.softmax_cross_entropy_with_integer_labels
    with pytest.raises(AssertionError, match=pinned.CHEX_TYPE):
        fn(a, b.astype(jnp.float32))
    with pytest.raises(ValueError, match=pinned.AXIS_OUT_OF_BOUNDS):
        fn(a, b, axis=5)
    with pytest.raises(ValueError, match=re.escape(pinned.AXIS_TYPE)):
        fn(a, b, axis=[1])


@pytest.mark.negative
@pytest.mark.parametrize("api", per_api(("l2_loss", "squared_error")))
def test_targets_of_another_shape_raise_even_when_broadcastable(api: Any) -> None:
    """``chex.assert_equal_shape``: (4, 5) predictions with (5,) targets
    raise ``AssertionError``, though they would broadcast."""
    (a, b), _, _ = inputs(api)
    with pytest.raises(AssertionError, match=pinned.CHEX_SHAPE):
        loss_fn(api)(a, b[0])


@pytest.mark.negative
@contract("huber_loss")
def test_huber_broadcasts_targets_of_another_shape() -> None:
    """No shape check: (4, 5) predictions with (5,) targets broadcast and
    give the (4, 5) reference of the broadcast targets."""
    (a, b), (a64, b64), kwargs = inputs("huber_loss")
    got = optax.huber_loss(a, b[0], **kwargs)
    ulps, scale = budget("huber_loss", (a64, b64), kwargs)
    assert_close(
        got,
        ref.huber_loss(a64, np.broadcast_to(b64[0], a64.shape), **kwargs),
        dtype=jnp.float32,
        ulps=ulps,
        scale=scale,
        what="broadcast",
    )
