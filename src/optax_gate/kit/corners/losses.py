"""The losses' corner grid, and the sweep's call of a loss or schedule with its floating hyperparameters."""

from __future__ import annotations

from typing import Any

from optax_gate.kit.corners.outcome import describe, hyper_form, jnp_module
from optax_gate.kit.surface.table import known_defect

#: Loss corners: name -> what changes in the sweep's inputs.
LOSS_CORNERS: dict[str, str] = {
    "neg_inf_logit": "the last entry of the first argument is -inf (a masked class; logits and log-probabilities only)",
    "pos_inf_logit": "the last entry of the first argument is +inf (logits and log-probabilities only)",
    "empty_batch": "every argument's leading (batch) axis sliced to size 0",
    "int_inputs": "the first argument as int32 (the values truncated): a loss of integer predictions",
    "broadcast": "the second argument reduced to its first row, shape (1, ...): broadcastable against the batch",
    "mismatch": "the second argument with one entry fewer on its last axis: shapes that do not broadcast",
    **{
        f"hyper={form}": "every floating hyperparameter (a Python float the sweep passes, or a float default) "
        f"given as {why}"
        for form, why in (
            ("float32", "a 0-d float32 array"),
            ("bfloat16", "a 0-d bfloat16 array"),
            ("float16", "a 0-d float16 array"),
            ("weak", "a weakly typed 0-d array (jnp.asarray of a Python float)"),
            ("numpy_float32", "a NumPy float32 scalar"),
        )
    },
}
#: What is recorded at each loss corner: the value, the reverse-mode gradient
#: of the summed loss, and its forward-mode derivative along ones (``jax.jvp``;
#: ``jax.jacfwd`` is left out: it pushes the one-hot tangents through the same
#: JVP rule, vmapped, and doubled the grid's time, beyond its budget on a
#: 2-core machine).
LOSS_OUTPUTS = ("value", "grad", "jvp")
#: Baseline defects the loss grid shows on a documented input: (path, corner)
#: -> ledger id. The grid's contract is one snapshot per loss, so it is not
#: marked ``known_defect`` (a change at another corner would read ``fixed``):
#: the ledger keeps the defect, this table says where the grid shows it.
LOSS_DEFECTS: dict[tuple[str, str], str] = {
    ("optax.squared_error", "broadcast"): known_defect("squared-error-broadcastable-targets-refused"),
    ("optax.l2_loss", "broadcast"): known_defect("squared-error-broadcastable-targets-refused"),
}
#: Losses the grid leaves out at a corner, with the reason: (path, corner) -> why.
LOSS_LEFT_OUT: dict[tuple[str, str], str] = {
    ("optax.ctc_loss", "broadcast"): "CTC's second argument is a padding mask, not targets",
    ("optax.ctc_loss", "mismatch"): "CTC's second argument is a padding mask, not targets",
    ("optax.ctc_loss_with_forward_probs", "broadcast"): "CTC's second argument is a padding mask, not targets",
    ("optax.ctc_loss_with_forward_probs", "mismatch"): "CTC's second argument is a padding mask, not targets",
}


def loss_outcomes(path: str, corner: str, args: list[Any], kwargs: dict[str, Any]) -> dict[str, str]:
    """The loss ``path`` at ``corner`` (its inputs ``args``/``kwargs`` already
    changed): one outcome per :data:`LOSS_OUTPUTS` key, ``<corner>/<output>``.
    Derivatives are of the summed floating result with respect to the first
    argument (as float32; the int_inputs corner differentiates the float
    values that were truncated)."""
    import jax

    from optax_gate.kit.surface import build as surface_build

    jnp = jnp_module()
    fn = surface_build.resolve(path)
    first = jnp.asarray(args[0]).astype(jnp.float32)

    def total(x: Any) -> Any:
        out = fn(x.astype(jnp.asarray(args[0]).dtype) if corner == "int_inputs" else x, *args[1:], **kwargs)
        return sum(
            jnp.sum(leaf) for leaf in jax.tree.leaves(out) if jnp.issubdtype(jnp.asarray(leaf).dtype, jnp.floating)
        )

    def tangent() -> Any:
        return jnp.ones_like(first)

    errors: dict[str, str] = {}
    return {
        f"{corner}/value": describe(lambda: fn(*args, **kwargs), errors, f"{corner}/error"),
        f"{corner}/grad": describe(lambda: jax.grad(total)(first)),
        f"{corner}/jvp": describe(lambda: jax.jvp(total, (first,), (tangent(),))[1]),
        **errors,
    }


def sweep_inputs(path: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The positional and keyword arguments the sweep (``surface_calls.CALLS``) calls ``path`` with (a loss, a
    schedule)."""
    from optax_gate.kit.surface.calls import CALLS

    captured: dict[str, Any] = {}

    def spy(*args: Any, **kwargs: Any) -> Any:
        captured["args"], captured["kwargs"] = args, kwargs
        return jnp_module().zeros(())

    CALLS[path][2](spy)
    return tuple(captured["args"]), dict(captured["kwargs"])


def loss_corners(path: str) -> list[str]:
    """The corners of :data:`LOSS_CORNERS` the loss ``path`` gets: the
    infinite logits for logits/log-probability losses only
    (``surface_calls.LOGITS``), the targets' corners where the second
    argument is an array, none of ``LOSS_LEFT_OUT``."""
    import jax

    from optax_gate.kit.surface.calls import LOGITS

    args, _ = sweep_inputs(path)
    out = []
    for corner in LOSS_CORNERS:
        if (path, corner) in LOSS_LEFT_OUT or ("inf_logit" in corner and path not in LOGITS):
            continue
        if corner in ("broadcast", "mismatch") and (
            len(args) < 2 or not isinstance(args[1], jax.Array) or not args[1].ndim
        ):
            continue
        if corner.startswith("hyper=") and not float_hypers(path):
            continue
        out.append(corner)
    return out


def loss_inputs(path: str, corner: str) -> tuple[list[Any], dict[str, Any]]:
    """The sweep's arguments of ``path`` changed at ``corner`` (see :data:`LOSS_CORNERS`)."""
    import jax

    jnp = jnp_module()
    positional, kwargs = sweep_inputs(path)
    args = [jnp.asarray(a) if isinstance(a, jax.Array) else a for a in positional]
    first = jnp.asarray(args[0])
    if corner in ("neg_inf_logit", "pos_inf_logit"):
        args[0] = (
            first.astype(jnp.float32).at[(-1,) * first.ndim].set(-jnp.inf if corner == "neg_inf_logit" else jnp.inf)
        )
    elif corner == "empty_batch":
        batch = first.shape[0]
        args = [a[:0] if isinstance(a, jax.Array) and a.ndim and a.shape[0] == batch else a for a in args]
    elif corner == "int_inputs":
        args[0] = jnp.round(first).astype(jnp.int32)
    elif corner == "broadcast":
        args[1] = args[1][:1]
    elif corner == "mismatch":
        args[1] = args[1][..., :-1] if args[1].shape[-1] > 1 else jnp.concatenate([args[1], args[1]], axis=-1)
    elif corner.startswith("hyper="):
        args, kwargs = hyper_inputs(path, args, kwargs, corner.partition("=")[2])
    return args, kwargs


def float_hypers(path: str) -> list[str]:
    """The floating hyperparameters of the loss or schedule ``path`` as the
    sweep calls it: each parameter the call gives a Python float, and each
    parameter it leaves at a Python-float default (``huber_loss``'s
    ``delta``, ``cosine_decay_schedule``'s ``alpha``), in signature order."""
    import inspect

    from optax_gate.kit.surface import build as surface_build

    sig = inspect.signature(surface_build.resolve(path))
    args, kwargs = sweep_inputs(path)
    given = sig.bind_partial(*args, **kwargs).arguments
    return [
        name
        for name, p in sig.parameters.items()
        if type(given.get(name, p.default)) is float
        and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY, p.POSITIONAL_ONLY)
    ]


def hyper_inputs(path: str, args: list[Any], kwargs: dict[str, Any], form: str) -> tuple[list[Any], dict[str, Any]]:
    """``args``/``kwargs`` of a call of ``path`` with every one of
    :func:`float_hypers` given in ``form`` (:data:`HYPER_FORMS`): a
    positional float converted in place, the others as keywords."""
    import inspect

    from optax_gate.kit.surface import build as surface_build

    sig = inspect.signature(surface_build.resolve(path))
    bound = sig.bind_partial(*args, **kwargs).arguments
    names = float_hypers(path)
    positional = list(sig.parameters)[: len(args)]
    args = [hyper_form(a, form) if name in names else a for name, a in zip(positional, args, strict=False)] + list(
        args[len(positional) :]
    )
    kwargs = {
        **kwargs,
        **{n: hyper_form(bound.get(n, sig.parameters[n].default), form) for n in names if n not in positional},
    }
    return args, kwargs
