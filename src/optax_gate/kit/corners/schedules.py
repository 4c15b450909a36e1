"""The schedules' corner grid: degenerate configurations from each signature, at each step and step form."""

from __future__ import annotations

import math
from typing import Any

from optax_gate.kit.corners.losses import float_hypers, hyper_inputs, sweep_inputs
from optax_gate.kit.corners.outcome import HYPER_FORMS, jnp_module, message, value_text
from optax_gate.kit.surface.table import known_defect

#: The last step the schedule grid evaluates but one: the sweep's horizon
#: (``surface_calls``' schedules end at 20 steps), where "a boundary at the
#: end" is put.
SCHEDULE_END = 20
#: Steps each schedule configuration is evaluated at: 0, 1 and 2 (around a
#: zero-length or one-step interval), the end and one past it.
SCHEDULE_STEPS = (0, 1, 2, SCHEDULE_END, SCHEDULE_END + 1)
#: How each step is given: a Python int (eager), a 0-d int32 array (eager),
#: and a 0-d int32 array to the schedule under ``jax.jit`` (one compilation
#: per configuration).
SCHEDULE_MODES = ("int", "int32", "jit")
#: Degenerate values per parameter *name*: a schedule whose signature has the
#: parameter gets each value as a corner (one at a time, the sweep's other
#: arguments kept), unless its sweep call already gives that value. name ->
#: ((value, why), ...).
SCHEDULE_PARAMS: dict[str, tuple[tuple[Any, str], ...]] = {
    "transition_steps": (
        (0, "a zero-length interval (documented: the schedule is then constant)"),
        (1, "a one-step interval"),
    ),
    "decay_steps": ((0, "a zero-length decay"), (1, "a one-step decay")),
    "warmup_steps": ((0, "no warmup: the join's boundary at step 0"), (1, "a one-step warmup")),
    "transition_begin": ((0, "the interval begins at step 0"),),
    "pct_start": ((0.0, "a fraction at 0: no rising phase"), (1.0, "a fraction at 1: no falling phase")),
    "pct_final": ((1.0, "a fraction at 1: the second phase ends at the last step"),),
    "alpha": ((0.0, "a fraction at 0: decays to zero"), (1.0, "a fraction at 1: no decay")),
    "decay_rate": ((0.0, "a rate of 0 (documented: logged, a constant schedule)"), (1.0, "a rate of 1: no decay")),
    "peak_value": ((0.0, "a peak of zero (warmup_cosine_decay divides end_value by it)"),),
    "staircase": ((True, "the integer-division code path"),),
    "interpolate_type": (("linear", "the other interpolation"),),
    "boundaries_and_scales": (
        ({0: 0.5}, "a boundary at step 0"),
        ({SCHEDULE_END: 0.5}, "a boundary at the end"),
        ({}, "no boundary"),
    ),
    "boundaries": (([0], "a boundary at step 0"), ([SCHEDULE_END], "a boundary at the end")),
}
#: Baseline defects the schedule grid shows on a documented input: (path,
#: corner) -> ledger id. As ``LOSS_DEFECTS``: the grid's contract is one
#: snapshot per schedule, not marked ``known_defect``; this table says where
#: the grid shows the ledger's defect.
SCHEDULE_DEFECTS: dict[tuple[str, str], str] = {
    ("optax.piecewise_interpolate_schedule", "boundaries_and_scales={0}"): known_defect(
        "piecewise-interpolate-zero-length-interval-nan"
    ),
    ("optax.linear_onecycle_schedule", "pct_start=0.0"): known_defect("piecewise-interpolate-zero-length-interval-nan"),
    ("optax.linear_onecycle_schedule", "transition_steps=1"): known_defect(
        "piecewise-interpolate-zero-length-interval-nan"
    ),
    ("optax.cosine_onecycle_schedule", "pct_start=0.0"): known_defect("piecewise-interpolate-zero-length-interval-nan"),
    ("optax.cosine_onecycle_schedule", "transition_steps=1"): known_defect(
        "piecewise-interpolate-zero-length-interval-nan"
    ),
}
#: Schedules of the sweep with no corner grid, and why.
SCHEDULE_LEFT_OUT: dict[str, str] = {
    "optax.sgdr_schedule": "its cosine_kwargs are warmup_cosine_decay_schedule's arguments, gridded there",
}


def _text(value: Any) -> str:
    if isinstance(value, dict):  # boundaries_and_scales: the boundaries (the scales are the table's)
        return "{" + ",".join(map(str, value)) + "}"
    if isinstance(value, list):
        return "[" + ",".join(map(str, value)) + "]"
    return str(value)


def schedule_corners(path: str) -> dict[str, dict[str, Any]]:
    """Corner name -> the schedule's keyword arguments: ``base`` (the sweep's
    call) and, for each parameter of the signature in
    :data:`SCHEDULE_PARAMS`, ``<name>=<value>`` with that one value changed
    (a value the sweep's call already has is no corner); and ``hyper=<form>``
    per :data:`HYPER_FORMS`, every floating hyperparameter
    (:func:`float_hypers`) given in that form."""
    import inspect

    from optax_gate.kit.surface import build as surface_build

    fn = surface_build.resolve(path)
    sig = inspect.signature(fn)
    args, kwargs = sweep_inputs(path)
    base = dict(sig.bind_partial(*args, **kwargs).arguments)
    out = {"base": base}
    for name, param in sig.parameters.items():
        for value, _why in SCHEDULE_PARAMS.get(name, ()):
            current = base.get(name, param.default)
            if type(current) is type(value) and current == value:
                continue
            out[f"{name}={_text(value)}"] = {**base, name: value}
    if float_hypers(path):
        for form in HYPER_FORMS:
            _, kwargs = hyper_inputs(path, [], base, form)
            out[f"hyper={form}"] = kwargs
    return out


def _result(x: Any) -> tuple[str, str, bool]:
    """(dtype text, value text, finite) of one schedule value."""
    import numpy as np

    if isinstance(x, (bool, int, float)):
        f = float(x)
        return f"py {type(x).__name__}", value_text(f), math.isfinite(f)
    a = np.asarray(x)
    kind = a.dtype.name + ("" if a.ndim == 0 else f"[{','.join(map(str, a.shape))}]")
    weak = " weak" if getattr(x, "weak_type", False) else ""
    f = float(a.astype(np.float32).ravel()[0]) if a.size else math.nan
    return kind + weak, value_text(f), math.isfinite(f)


def schedule_outcomes(path: str, corner: str, kwargs: dict[str, Any]) -> dict[str, str]:
    """The schedule ``path`` built with ``kwargs``, evaluated at
    :data:`SCHEDULE_STEPS` in each of :data:`SCHEDULE_MODES`: one line per
    mode, ``<corner>/<mode>``: ``ok float32 weak 1 0.5 0.25 0.1 0.1`` (the
    dtypes, " weak" for a weakly typed array, ``py float`` for a Python
    number (``py float64`` for NumPy's float64); the values at each step to 4 significant digits), ``non-finite
    ...`` when a value is NaN or infinite, or ``raises <type>`` (the message
    under ``<corner>/<mode>/error``); a schedule that cannot be built is one
    line ``<corner>: build <type>`` (the message under ``<corner>/error``)."""
    import jax

    from optax_gate.kit.surface import build as surface_build

    jnp = jnp_module()
    out: dict[str, str] = {}
    try:
        schedule = surface_build.resolve(path)(**kwargs)
    except Exception as exc:  # the outcome is the exception's type
        out[corner] = f"build {type(exc).__name__}"
        out[f"{corner}/error"] = message(exc)
        return out
    steps32 = [jnp.asarray(s, jnp.int32) for s in SCHEDULE_STEPS]
    calls = {
        "int": lambda: [schedule(s) for s in SCHEDULE_STEPS],
        "int32": lambda: [schedule(s) for s in steps32],
        "jit": lambda: (lambda f: [f(s) for s in steps32])(jax.jit(schedule)),
    }
    for mode in SCHEDULE_MODES:
        key = f"{corner}/{mode}"
        try:
            results = [_result(x) for x in calls[mode]()]
        except Exception as exc:  # the outcome is the exception's type
            out[key] = f"raises {type(exc).__name__}"
            out[f"{key}/error"] = message(exc)
            continue
        kinds = "/".join(dict.fromkeys(k for k, _, _ in results))
        status = "ok" if all(f for _, _, f in results) else "non-finite"
        out[key] = f"{status} {kinds} {' '.join(v for _, v, _ in results)}"
    return out


def schedule_record(path: str) -> dict[str, str]:
    """Every corner of :func:`schedule_corners` with its outcomes, keys ``corner.<corner>/<mode>``."""
    out: dict[str, str] = {}
    for corner, kwargs in schedule_corners(path).items():
        out.update({f"corner.{k}": v for k, v in schedule_outcomes(path, corner, kwargs).items()})
    return out
