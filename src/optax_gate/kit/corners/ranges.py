"""The hyperparameter range grid: each numeric hyperparameter of each transformation set, one at a time, to the
edges and extremes of its range (0, small, large, negative; 0 and 1 for a rate), a few steps each.

Where :mod:`optax_gate.kit.corners.transformations` gives every hyperparameter at its default in other *forms*
(arrays, dtypes), this grid moves one *value* at a time; an integer hyperparameter (``decay_offset``,
``patience``, ``ns_steps``) is swept as well as a float one.
"""

from __future__ import annotations

import re

#: Float hyperparameters read as a rate or a decay in [0, 1] (by name: ``b1``,
#: ``b2``, ``beta``, ``decay``, ``rho``, ``momentum``, ``adam_b1``...): swept
#: over the interval's edges and its middle, :data:`RATE_VALUES`.
RATE_NAME = re.compile(r"^(adam_)?(b\d|beta\d?|decay|decay_rate|rho|momentum)$")
RATE_VALUES = (0.0, 0.5, 1.0)
#: Any other float hyperparameter (a learning rate, an epsilon, a weight
#: decay, a threshold, a factor): zero, small, large and negative (the
#: default's negative, -1 where the default is 0). A negative value pins what
#: the baseline does with it, allowed or not (a learning rate's sign turns
#: descent into ascent; a lower bound of a loss may be below 0).
SMALL, LARGE = 1e-6, 1e3
#: Integer hyperparameters (``decay_offset``, ``patience``, ``memory_size``...):
#: 0, 1, 2 and twice the default.
INT_VALUES = (0, 1, 2)
#: Hyperparameters left out of the sweep, and why.
LEFT_OUT = {
    "key": "a PRNG seed: another seed draws other noise, not another code path",
    "print_win_rate_every_n_steps": "prints sophia's win rate (jax.debug.print): an output, not a value",
}
#: Updates per corner: the last one's outcome is recorded (an offset, a
#: patience or a bias correction shows after the first step).
RANGE_STEPS = 2
#: Transformations given one update per corner, not :data:`RANGE_STEPS`, and
#: why (besides the surface table's ``slow`` entries, whose eager update
#: re-traces a line search or a Hessian estimate: 0.1 to 0.5 s each).
ONE_STEP = {
    "optax.contrib.muon": "an eager update runs the Newton-Schulz iterations op by op: 0.1 s an update, 36 corners",
}


def range_values(name: str, default: float | int) -> tuple[float | int, ...]:
    """The values the grid gives ``name`` (default ``default``): :data:`RATE_VALUES` for a rate
    (:data:`RATE_NAME`), ``0, SMALL, LARGE, -default`` for another float, :data:`INT_VALUES` and twice the
    default for an int; the default itself left out. Raises ``TypeError`` for a non-numeric default."""
    if isinstance(default, bool) or not isinstance(default, (int, float)):
        raise TypeError(f"{name}: {default!r} is not a numeric hyperparameter")
    if isinstance(default, int):
        values: tuple[float | int, ...] = (*INT_VALUES, 2 * default)
    elif RATE_NAME.match(name):
        values = RATE_VALUES
    else:
        values = (0.0, SMALL, LARGE, -default if default else -1.0)
    return tuple(dict.fromkeys(v for v in values if v != default or type(v) is not type(default)))


def hyperparameters(path: str) -> dict[str, float | int]:
    """``path``'s numeric hyperparameters with their defaults (or the value the surface table fills a
    required one with), less :data:`LEFT_OUT`; none for an entry built by a builder (its builder fixes them)."""
    from optax_gate.kit.corners.transformations import filled_parameters
    from optax_gate.kit.surface import build as surface_build
    from optax_gate.kit.surface.table import TRANSFORMATIONS

    out: dict[str, float | int] = {}
    for name, value, p in filled_parameters(surface_build.resolve(path), TRANSFORMATIONS[path]):
        if name not in LEFT_OUT and type(value) in (int, float):
            # an int default of a parameter annotated float is a float (cocob's alpha=100 in 0.2.6, 100.0 later)
            out[name] = float(value) if p.annotation in (float, "float") else value
    return out


def range_grid() -> list[tuple[str, str]]:
    """(path, hyperparameter) for each transformation of the corner grid and each of its numeric
    hyperparameters (:func:`hyperparameters`)."""
    from optax_gate.kit.corners.transformations import transformation_paths

    out: list[tuple[str, str]] = []
    for path in transformation_paths():
        try:
            names = hyperparameters(path)
        except Exception:  # a removed or changed API: the corner grid's contract says how
            continue
        out.extend((path, name) for name in names)
    return out


def range_record(path: str, name: str) -> dict[str, str]:
    """``<name>=<v>`` -> the outcome of :data:`RANGE_STEPS` eager updates (one for a slow entry,
    :data:`ONE_STEP`) with ``name=v``
    (``transformation_outcome``'s line: dtypes, norm and first entry of the last update, the state's dtypes, or
    the exception's type, its message under ``.../error``), for each ``v`` of :func:`range_values`."""
    from optax_gate.kit.corners.transformations import transformation_outcome
    from optax_gate.kit.surface.table import TRANSFORMATIONS

    out: dict[str, str] = {}
    default = hyperparameters(path)[name]
    steps = 1 if TRANSFORMATIONS[path].slow or path in ONE_STEP else RANGE_STEPS
    for v in range_values(name, default):
        key = f"{name}={v:g}"
        errors: dict[str, str] = {}
        out[key] = transformation_outcome(path, {name: v}, "float32", None, errors, f"{key}/error", steps=steps)
        out.update(errors)
    return out
