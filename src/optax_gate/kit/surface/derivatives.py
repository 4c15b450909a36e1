"""Derivatives of every loss and schedule of the sweep with respect to each of their differentiable arguments,
not only the first (issue 40 item 2; needs the environment's optax and JAX when called).

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

from typing import Any

from optax_gate.kit import tolerances
from optax_gate.kit.surface import build as surface_build
from optax_gate.kit.surface import calls as surface_calls


def _capture(path: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The arguments the sweep's call of ``path`` passes (a spy in place of the function)."""
    seen: dict[str, Any] = {}

    def spy(*args: Any, **kwargs: Any) -> Any:
        seen["args"], seen["kwargs"] = args, kwargs
        return lambda step: 0.0

    surface_calls.CALLS[path][2](spy)
    return seen["args"], seen["kwargs"]


def _names(fn: Any, count: int) -> list[str]:
    """The parameter names of ``fn``'s first ``count`` positional parameters
    (``arg<i>`` where the signature cannot be read)."""
    import inspect

    try:
        params = [
            p.name
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        params = []
    return [params[i] if i < len(params) else f"arg{i}" for i in range(count)]


def _by_name(path: str, fn: Any) -> dict[str, Any]:
    """The sweep's arguments of ``path`` by parameter name (positional ones named by the signature)."""
    args, kwargs = _capture(path)
    return {**dict(zip(_names(fn, len(args)), args, strict=False)), **kwargs}


def _check(total: Any, x: Any, direction: Any) -> str:
    """The outcome of differentiating the scalar function ``total`` at ``x``."""
    import jax
    import numpy as np

    try:
        grad = jax.grad(total)(x)
        _, tangent = jax.jvp(total, (x,), (direction,))
    except Exception as exc:  # the outcome is the exception's type
        return f"raises {type(exc).__name__}"
    g, d = np.asarray(grad, np.float64), np.asarray(direction, np.float64)
    if not (np.all(np.isfinite(g)) and np.isfinite(float(tangent))):
        return "non-finite gradient"
    size = max(int(np.size(g)), 1)
    bound = (
        (tolerances.reduction(size) + tolerances.SURFACE_STEP)
        * tolerances.eps("float32")
        * max(1.0, float(np.sum(np.abs(g))))
    )
    return "ok" if abs(float(tangent) - float(np.sum(g * d))) <= bound else "forward and reverse differ"


def _floating(value: Any) -> bool:
    import jax.numpy as jnp

    return hasattr(value, "dtype") and jnp.issubdtype(value.dtype, jnp.floating)


def loss_record(path: str) -> dict[str, str]:
    """``{"corner.grad_wrt=<parameter>": outcome}`` for each positional array argument of the
    sweep's call of the loss ``path`` (see the module docstring)."""
    import jax
    import jax.numpy as jnp

    args, kwargs = _capture(path)
    fn = surface_build.resolve(path)
    names = _names(fn, len(args))
    out = {}
    for i, arg in enumerate(args):
        if not hasattr(arg, "dtype"):
            continue
        if not _floating(arg):
            out[f"corner.grad_wrt={names[i]}"] = "integer input"
            continue
        x = jnp.asarray(arg, jnp.float32)

        def total(v: Any, i: int = i) -> Any:
            result = fn(*args[:i], v, *args[i + 1 :], **kwargs)
            return sum(jnp.sum(leaf) for leaf in jax.tree.leaves(result) if _floating(jnp.asarray(leaf)))

        direction = jnp.linspace(-1.0, 1.0, x.size, dtype=jnp.float32).reshape(x.shape)
        out[f"corner.grad_wrt={names[i]}"] = _check(total, x, direction)
    return out


def schedule_record(path: str) -> dict[str, str]:
    """``{"corner.grad_wrt=<hyperparameter>": outcome}`` for each Python-float hyperparameter the
    sweep's call of the schedule factory ``path`` passes."""
    import jax.numpy as jnp

    fn = surface_build.resolve(path)
    given = _by_name(path, fn)
    out = {}
    for name, value in given.items():
        if not isinstance(value, float):
            continue

        def total(v: Any, name: str = name) -> Any:
            schedule = fn(**{**given, name: v})
            return sum(jnp.asarray(schedule(step), jnp.float32) for step in surface_calls.SCHEDULE_STEPS)

        out[f"corner.grad_wrt={name}"] = _check(total, jnp.asarray(value, jnp.float32), jnp.asarray(1.0, jnp.float32))
    return out


def losses() -> list[str]:
    """The losses of the sweep called directly (``test_surface_sweep.LOSSES``' rule)."""
    return [
        p
        for p, (kind, _, _) in surface_calls.CALLS.items()
        if kind == "loss" and p not in surface_calls.EXPECT and "make_" not in p
    ]


def schedules() -> list[str]:
    """The schedule factories of the sweep called with at least one Python-float
    hyperparameter (``join_schedules`` and ``sgdr_schedule`` take schedules and
    dicts: none)."""
    out = []
    for path, (kind, _, _) in surface_calls.CALLS.items():
        if kind != "schedule":
            continue
        args, kwargs = _capture(path)
        if any(isinstance(v, float) for v in (*args, *kwargs.values())):
            out.append(path)
    return out
