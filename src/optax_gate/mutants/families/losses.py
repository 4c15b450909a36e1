"""Mutants of Optax's per-example losses (softmax cross-entropy with
distributions and with integer labels, sigmoid binary cross-entropy, L2 loss,
squared error, Huber loss): deliberately broken variants that the contracts of
``tests/contracts/test_losses.py`` must catch. At least four per API: a wrong
constant or formula, a lost stability trick, a dtype change, a difference only
under ``jax.jit``, a dropped or added check, a changed signature."""

from __future__ import annotations

from typing import Any

from optax_gate.mutants.patches import loss_post
from optax_gate.mutants.registry import family
from optax_gate.mutants.shapes import jit_differs_value

mutant = family("losses", "tests/contracts/test_losses.py")


def _upcast(out: Any, first: Any) -> Any:
    import jax.numpy as jnp

    return out.astype(jnp.float32) if out.dtype != jnp.float64 else out


def _batch_mean(out: Any, first: Any) -> Any:
    return out.mean()


def _naive_log_softmax(x: Any, axis: Any = -1) -> Any:
    """``log(exp(x) / sum exp(x))`` without the max shift: overflows at 1e4."""
    import jax.numpy as jnp

    e = jnp.exp(x)
    return jnp.log(e / jnp.sum(e, axis=axis, keepdims=True))


# softmax_cross_entropy --------------------------------------------------------


@mutant("sce-unstable", "log-softmax without the max shift (overflows for logits of 1e4)")
def _(optax: Any) -> Any:
    def softmax_cross_entropy(logits: Any, labels: Any, axis: Any = -1, where: Any = None) -> Any:
        return -(labels * _naive_log_softmax(logits, axis)).sum(axis)

    return {"softmax_cross_entropy": softmax_cross_entropy}


@mutant("sce-safe-zero-log-zero", "treats 0 * log 0 as 0 (no NaN for a -inf logit with label 0)")
def _(optax: Any) -> Any:
    import jax.numpy as jnp

    orig = optax.softmax_cross_entropy

    def softmax_cross_entropy(logits: Any, labels: Any, axis: Any = -1, where: Any = None) -> Any:
        return orig(jnp.where(jnp.isneginf(logits) & (labels == 0), -1e30, logits), labels, axis, where)

    return {"softmax_cross_entropy": softmax_cross_entropy}


@mutant("sce-where-ignored", "ignores where")
def _(optax: Any) -> Any:
    orig = optax.softmax_cross_entropy

    def softmax_cross_entropy(logits: Any, labels: Any, axis: Any = -1, where: Any = None) -> Any:
        return orig(logits, labels, axis)

    return {"softmax_cross_entropy": softmax_cross_entropy}


@mutant("sce-batch-mean", "reduces to the batch mean")
def _(optax: Any) -> Any:
    return loss_post(optax, "softmax_cross_entropy", _batch_mean)


@mutant("sce-upcast", "returns float32 for low-precision logits")
def _(optax: Any) -> Any:
    return loss_post(optax, "softmax_cross_entropy", _upcast)


jit_differs_value(mutant, "sce-jit-differs")


@mutant("sce-labels-cast", "casts labels to the logits' dtype (no promotion)")
def _(optax: Any) -> Any:
    import jax.numpy as jnp

    orig = optax.softmax_cross_entropy

    def softmax_cross_entropy(logits: Any, labels: Any, axis: Any = -1, where: Any = None) -> Any:
        return orig(logits, jnp.asarray(labels).astype(logits.dtype), axis, where)

    return {"softmax_cross_entropy": softmax_cross_entropy}


@mutant("sce-renamed-labels", "renames labels to targets")
def _(optax: Any) -> Any:
    orig = optax.softmax_cross_entropy

    def softmax_cross_entropy(logits: Any, targets: Any, axis: Any = -1, where: Any = None) -> Any:
        return orig(logits, targets, axis, where)

    return {"softmax_cross_entropy": softmax_cross_entropy}


# softmax_cross_entropy_with_integer_labels ------------------------------------

_SCEIL = "softmax_cross_entropy_with_integer_labels"


@mutant("sceil-clips-labels", "clips labels into [0, C) (no NaN for out-of-range labels)")
def _(optax: Any) -> Any:
    import jax.numpy as jnp

    orig = getattr(optax, _SCEIL)

    def f(logits: Any, labels: Any, axis: Any = -1, where: Any = None) -> Any:
        n = logits.shape[axis] if isinstance(axis, int) else None
        return orig(logits, labels if n is None else jnp.clip(labels, 0, n - 1), axis, where)

    return {_SCEIL: f}


@mutant("sceil-unstable", "log-softmax without the max shift (overflows for logits of 1e4)")
def _(optax: Any) -> Any:
    import jax.numpy as jnp

    orig = getattr(optax, _SCEIL)

    def f(logits: Any, labels: Any, axis: Any = -1, where: Any = None) -> Any:
        if where is not None or not isinstance(axis, int):
            return orig(logits, labels, axis, where)
        lsm = _naive_log_softmax(logits, axis)
        return -jnp.take_along_axis(lsm, jnp.expand_dims(labels, axis), axis=axis).squeeze(axis)

    return {_SCEIL: f}


@mutant("sceil-where-ignored", "ignores where")
def _(optax: Any) -> Any:
    orig = getattr(optax, _SCEIL)
    return {_SCEIL: lambda logits, labels, axis=-1, where=None: orig(logits, labels, axis)}


@mutant("sceil-axis-ignored", "always uses the last axis for an int axis")
def _(optax: Any) -> Any:
    orig = getattr(optax, _SCEIL)
    return {
        _SCEIL: lambda logits, labels, axis=-1, where=None: orig(
            logits, labels, -1 if isinstance(axis, int) else axis, where
        )
    }


@mutant("sceil-float-labels", "accepts float labels (casts them to int)")
def _(optax: Any) -> Any:
    import jax.numpy as jnp

    orig = getattr(optax, _SCEIL)
    return {
        _SCEIL: lambda logits, labels, axis=-1, where=None: orig(
            logits, jnp.asarray(labels).astype(jnp.int32), axis, where
        )
    }


@mutant("sceil-label-smoothing", "compares with a smoothed one-hot (0.9 on the label, 0.1 spread), a wrong constant")
def _(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    orig = getattr(optax, _SCEIL)

    def f(logits: Any, labels: Any, axis: Any = -1, where: Any = None) -> Any:
        if where is not None:
            return orig(logits, labels, axis, where)
        if isinstance(axis, tuple):
            n = 1
            for a in axis:
                n *= logits.shape[a]
            moved = jnp.moveaxis(logits, axis, tuple(range(logits.ndim - len(axis), logits.ndim)))
            logits, axis = moved.reshape((*moved.shape[: logits.ndim - len(axis)], n)), -1
        n = logits.shape[axis]
        target = 0.9 * jax.nn.one_hot(labels, n, axis=axis, dtype=logits.dtype) + 0.1 / n
        return -(target * jax.nn.log_softmax(logits, axis)).sum(axis)

    return {_SCEIL: f}


@mutant("sceil-renamed-labels", "renames labels to targets")
def _(optax: Any) -> Any:
    orig = getattr(optax, _SCEIL)
    return {_SCEIL: lambda logits, targets, axis=-1, where=None: orig(logits, targets, axis, where)}


@mutant("sceil-upcast", "returns float32 for low-precision logits")
def _(optax: Any) -> Any:
    return loss_post(optax, _SCEIL, _upcast)


jit_differs_value(mutant, "sceil-jit-differs")


# sigmoid_binary_cross_entropy -------------------------------------------------


@mutant("sbce-unstable", "log(sigmoid(x)) and log(1 - sigmoid(x)): -inf in the saturated range")
def _(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    def sigmoid_binary_cross_entropy(logits: Any, labels: Any) -> Any:
        labels = jnp.astype(labels, logits.dtype)
        p = jax.nn.sigmoid(logits)
        return -labels * jnp.log(p) - (1.0 - labels) * jnp.log(1.0 - p)

    return {"sigmoid_binary_cross_entropy": sigmoid_binary_cross_entropy}


@mutant("sbce-labels-not-cast", "does not cast labels to the logits' dtype (promotes)")
def _(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    def sigmoid_binary_cross_entropy(logits: Any, labels: Any) -> Any:
        if not jnp.issubdtype(jnp.asarray(logits).dtype, jnp.floating):
            raise AssertionError("[Chex] Assertion assert_type failed: logits")
        return -labels * jax.nn.log_sigmoid(logits) - (1.0 - labels) * jax.nn.log_sigmoid(-logits)

    return {"sigmoid_binary_cross_entropy": sigmoid_binary_cross_entropy}


@mutant("sbce-labels-flipped", "uses 1 - labels")
def _(optax: Any) -> Any:
    orig = optax.sigmoid_binary_cross_entropy
    return {"sigmoid_binary_cross_entropy": lambda logits, labels: orig(logits, 1.0 - labels)}


@mutant("sbce-renamed-labels", "renames labels to targets")
def _(optax: Any) -> Any:
    orig = optax.sigmoid_binary_cross_entropy
    return {"sigmoid_binary_cross_entropy": lambda logits, targets: orig(logits, targets)}


@mutant("sbce-batch-mean", "reduces to the mean")
def _(optax: Any) -> Any:
    return loss_post(optax, "sigmoid_binary_cross_entropy", _batch_mean)


jit_differs_value(mutant, "sbce-jit-differs")


@mutant("sbce-accepts-int-logits", "casts integer logits to float instead of raising")
def _(optax: Any) -> Any:
    import jax.numpy as jnp

    orig = optax.sigmoid_binary_cross_entropy
    return {
        "sigmoid_binary_cross_entropy": lambda logits, labels: orig(
            jnp.asarray(logits, jnp.result_type(float)) if jnp.issubdtype(logits.dtype, jnp.integer) else logits, labels
        )
    }


# l2_loss ----------------------------------------------------------------------


@mutant("l2-no-half", "drops the 1/2 (returns the squared error)")
def _(optax: Any) -> Any:
    orig = optax.squared_error

    def l2_loss(predictions: Any, targets: Any = None) -> Any:
        return orig(predictions, targets)

    return {"l2_loss": l2_loss}


@mutant("l2-batch-mean", "reduces to the mean")
def _(optax: Any) -> Any:
    return loss_post(optax, "l2_loss", _batch_mean)


@mutant("l2-upcast", "returns float32 for low-precision predictions")
def _(optax: Any) -> Any:
    return loss_post(optax, "l2_loss", _upcast)


jit_differs_value(mutant, "l2-jit-differs")


@mutant("l2-broadcasts", "drops the equal-shape check (broadcasts targets)")
def _(optax: Any) -> Any:
    import jax.numpy as jnp

    def l2_loss(predictions: Any, targets: Any = None) -> Any:
        if not jnp.issubdtype(predictions.dtype, jnp.floating):
            raise AssertionError("[Chex] Assertion assert_type failed: predictions")
        e = predictions - targets if targets is not None else predictions
        return 0.5 * e**2

    return {"l2_loss": l2_loss}


@mutant("l2-keyword-only-targets", "makes targets keyword-only")
def _(optax: Any) -> Any:
    orig = optax.l2_loss

    def l2_loss(predictions: Any, *, targets: Any = None) -> Any:
        return orig(predictions, targets)

    return {"l2_loss": l2_loss}


# squared_error ----------------------------------------------------------------


@mutant("squared-abs", "returns |p - t| instead of (p - t)^2")
def _(optax: Any) -> Any:
    import jax.numpy as jnp

    orig = optax.squared_error

    def squared_error(predictions: Any, targets: Any = None) -> Any:
        return jnp.sqrt(orig(predictions, targets))

    return {"squared_error": squared_error}


@mutant("squared-no-checks", "drops the dtype and equal-shape checks (integers accepted, targets broadcast)")
def _(optax: Any) -> Any:
    def squared_error(predictions: Any, targets: Any = None) -> Any:
        e = predictions - targets if targets is not None else predictions
        return e**2

    return {"squared_error": squared_error}


@mutant("squared-renamed-targets", "renames targets to target")
def _(optax: Any) -> Any:
    orig = optax.squared_error

    def squared_error(predictions: Any, target: Any = None) -> Any:
        return orig(predictions, target)

    return {"squared_error": squared_error}


@mutant("squared-upcast", "returns float32 for low-precision predictions")
def _(optax: Any) -> Any:
    return loss_post(optax, "squared_error", _upcast)


jit_differs_value(mutant, "squared-jit-differs")


@mutant("squared-targets-required", "targets has no default")
def _(optax: Any) -> Any:
    orig = optax.squared_error

    def squared_error(predictions: Any, targets: Any) -> Any:
        return orig(predictions, targets)

    return {"squared_error": squared_error}


# huber_loss -------------------------------------------------------------------


@mutant("huber-delta-ignored", "ignores delta (always 1)")
def _(optax: Any) -> Any:
    orig = optax.huber_loss

    def huber_loss(predictions: Any, targets: Any = None, delta: Any = 1.0) -> Any:
        return orig(predictions, targets, delta=1.0)

    return {"huber_loss": huber_loss}


@mutant("huber-linear-offset", "delta * |e| beyond delta, not delta * (|e| - delta / 2) (discontinuous)")
def _(optax: Any) -> Any:
    import jax.numpy as jnp

    def huber_loss(predictions: Any, targets: Any = None, delta: Any = 1.0) -> Any:
        if not jnp.issubdtype(predictions.dtype, jnp.floating):
            raise AssertionError("[Chex] Assertion assert_type failed: predictions")
        e = jnp.abs(predictions - targets if targets is not None else predictions)
        return jnp.where(e <= delta, 0.5 * e**2, delta * e)

    return {"huber_loss": huber_loss}


@mutant("huber-keyword-only-delta", "makes delta keyword-only (TypeError when positional, no warning)")
def _(optax: Any) -> Any:
    orig = optax.huber_loss

    def huber_loss(predictions: Any, targets: Any = None, *, delta: Any = 1.0) -> Any:
        return orig(predictions, targets, delta=delta)

    return {"huber_loss": huber_loss}


@mutant("huber-checks-swapped", "refuses targets of another shape, accepts integer predictions")
def _(optax: Any) -> Any:
    import jax.numpy as jnp

    orig = optax.huber_loss

    def huber_loss(predictions: Any, targets: Any = None, delta: Any = 1.0) -> Any:
        if targets is not None and targets.shape != predictions.shape:
            raise AssertionError("[Chex] Assertion assert_equal_shape failed")
        return orig(jnp.asarray(predictions, jnp.result_type(float)), targets, delta=delta)

    return {"huber_loss": huber_loss}


@mutant("huber-targets-required", "renames targets to target and drops its default")
def _(optax: Any) -> Any:
    orig = optax.huber_loss

    def huber_loss(predictions: Any, target: Any, delta: Any = 1.0) -> Any:
        return orig(predictions, target, delta=delta)

    return {"huber_loss": huber_loss}


@mutant("huber-upcast", "returns float32 for low-precision predictions")
def _(optax: Any) -> Any:
    return loss_post(optax, "huber_loss", _upcast)


jit_differs_value(mutant, "huber-jit-differs")
