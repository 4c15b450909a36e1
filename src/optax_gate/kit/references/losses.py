"""Independent float64 NumPy references of Optax's per-example losses and of
their analytic gradients.

Each function is written from the loss's textbook definition (cited per
function; the same formulas as the docstrings of optax 0.2.6
``optax/losses/_classification.py`` and ``_regression.py``), computes in
float64 whatever the input dtype, and returns one value per example (no
reduction: reductions are the caller's). Gradients are the closed-form
derivatives with respect to the first argument (logits or predictions).
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _f64(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def logsumexp(x: Any, axis: int = -1) -> np.ndarray:
    """``log sum_j exp(x_j)`` along ``axis``, shifted by the maximum so that
    logits of +-1e4 neither overflow nor underflow (the standard stable form)."""
    x = _f64(x)
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    return np.squeeze(m, axis) + np.log(np.sum(np.exp(x - m), axis=axis))


def log_softmax(x: Any, axis: int = -1) -> np.ndarray:
    """``x - logsumexp(x)`` along ``axis``."""
    x = _f64(x)
    return x - np.expand_dims(logsumexp(x, axis), axis)


def softmax(x: Any, axis: int = -1) -> np.ndarray:
    """``exp(log_softmax(x))``."""
    return np.exp(log_softmax(x, axis))


def softmax_cross_entropy(logits: Any, labels: Any, axis: int = -1, where: Any = None) -> np.ndarray:
    """Cross-entropy of the label distribution ``y`` against ``softmax(x)``:
    ``-sum_j y_j log softmax(x)_j`` (Goodfellow, Bengio & Courville, *Deep
    Learning*, 2016, §3.13 and §6.2.2.3; the Optax docstring's sigma_i).

    ``where`` (a boolean mask of ``logits``' shape) restricts the
    distribution to the included classes: the softmax and the sum run over
    them only; an example with no included class has loss 0 (an empty sum)."""
    x, y = _f64(logits), _f64(labels)
    if where is None:
        return -np.sum(y * log_softmax(x, axis), axis=axis)
    where = np.broadcast_to(np.asarray(where, bool), x.shape)
    with np.errstate(divide="ignore", invalid="ignore"):  # excluded rows: log 0, -inf - -inf
        lsm = log_softmax(np.where(where, x, -np.inf), axis)
    return -np.sum(np.where(where, y * np.where(where, lsm, 0.0), 0.0), axis=axis)


def softmax_cross_entropy_grad(logits: Any, labels: Any, axis: int = -1) -> np.ndarray:
    """d/dx of :func:`softmax_cross_entropy`: ``softmax(x) * sum_j y_j - y``."""
    y = _f64(labels)
    return softmax(logits, axis) * np.sum(y, axis=axis, keepdims=True) - y


def integer_label_cross_entropy(logits: Any, labels: Any, axis: int = -1, where: Any = None) -> np.ndarray:
    """``logsumexp(x) - x_label``: the cross-entropy against a one-hot label
    (the Optax docstring's sigma_i with the sign of a loss). With ``where``
    the normaliser runs over the included classes only and an example with
    no included class has loss 0."""
    x = _f64(logits)
    picked = np.squeeze(np.take_along_axis(x, np.expand_dims(np.asarray(labels), axis), axis=axis), axis)
    if where is None:
        return logsumexp(x, axis) - picked
    where = np.broadcast_to(np.asarray(where, bool), x.shape)
    with np.errstate(divide="ignore", invalid="ignore"):  # excluded rows: log 0
        out = logsumexp(np.where(where, x, -np.inf), axis) - picked
    return np.where(np.any(where, axis=axis), out, 0.0)


def integer_label_cross_entropy_grad(logits: Any, labels: Any, axis: int = -1) -> np.ndarray:
    """d/dx of :func:`integer_label_cross_entropy`: ``softmax(x) - onehot(label)``."""
    x = _f64(logits)
    onehot = np.zeros_like(x)
    np.put_along_axis(onehot, np.expand_dims(np.asarray(labels), axis), 1.0, axis=axis)
    return softmax(x, axis) - onehot


def sigmoid_binary_cross_entropy(logits: Any, labels: Any) -> np.ndarray:
    """``-y log sigmoid(x) - (1 - y) log(1 - sigmoid(x))`` element-wise
    (Goodfellow et al. 2016, §6.2.2.2), evaluated in the overflow-free form
    ``max(x, 0) - x y + log1p(exp(-|x|))``."""
    x, y = _f64(logits), _f64(labels)
    return np.maximum(x, 0.0) - x * y + np.log1p(np.exp(-np.abs(x)))


def sigmoid_binary_cross_entropy_grad(logits: Any, labels: Any) -> np.ndarray:
    """d/dx: ``sigmoid(x) - y``."""
    x, y = _f64(logits), _f64(labels)
    return 1.0 / (1.0 + np.exp(-x)) - y


def squared_error(predictions: Any, targets: Any = None) -> np.ndarray:
    """``(p - t)^2`` element-wise (``t = 0`` when absent)."""
    e = _f64(predictions) - (0.0 if targets is None else _f64(targets))
    return e * e


def squared_error_grad(predictions: Any, targets: Any = None) -> np.ndarray:
    """d/dp: ``2 (p - t)``."""
    return 2.0 * (_f64(predictions) - (0.0 if targets is None else _f64(targets)))


def l2_loss(predictions: Any, targets: Any = None) -> np.ndarray:
    """``(p - t)^2 / 2`` (Bishop, *Pattern Recognition and Machine Learning*,
    2006, eq. 1.2: the 1/2 convention)."""
    return 0.5 * squared_error(predictions, targets)


def l2_loss_grad(predictions: Any, targets: Any = None) -> np.ndarray:
    """d/dp: ``p - t``."""
    return _f64(predictions) - (0.0 if targets is None else _f64(targets))


def huber_loss(predictions: Any, targets: Any = None, delta: float = 1.0) -> np.ndarray:
    """Huber (1964), *Robust Estimation of a Location Parameter*: with
    ``e = p - t``, ``e^2 / 2`` for ``|e| <= delta`` and
    ``delta (|e| - delta / 2)`` beyond."""
    e = np.abs(_f64(predictions) - (0.0 if targets is None else _f64(targets)))
    return np.where(e <= delta, 0.5 * e * e, delta * (e - 0.5 * delta))


def huber_loss_grad(predictions: Any, targets: Any = None, delta: float = 1.0) -> np.ndarray:
    """d/dp: ``clip(e, -delta, delta)`` (the derivative is continuous at
    ``|e| = delta``)."""
    return np.clip(_f64(predictions) - (0.0 if targets is None else _f64(targets)), -delta, delta)
