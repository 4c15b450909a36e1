"""Independent float64 references of Optax's step schedules.

Each function returns a schedule ``step -> float`` written from the formula
that Optax *documents* for it (the docstring's math block or its argument
descriptions, optax 0.2.6 ``optax/schedules/_schedule.py`` and ``_join.py``),
computed in Python floats (IEEE float64), not from Optax's code. ``step`` is
any real number: negative steps and steps past the end follow the formula
literally, which is what the contracts compare the baseline with.

Notation of the docstrings: ``I`` initial value, ``E`` end value, ``T``
transition (or decay) steps, ``B`` transition begin, ``P`` power, ``p``
exponent, ``alpha`` the cosine floor as a fraction of ``I``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

Schedule = Callable[[float], float]


def constant(value: float) -> Schedule:
    """``value`` at every step (``constant_schedule``: "value to be held
    constant throughout")."""
    return lambda step: float(value)


def polynomial(init: float, end: float, power: float, transition_steps: int, transition_begin: int = 0) -> Schedule:
    """``polynomial_schedule``'s cases: ``I`` for ``t < B``;
    ``(I - E) (1 - (t - B) / T)^P + E`` for ``B <= t < B + T``; ``E`` for
    ``t >= B + T``. Documented special cases: ``T <= 0`` holds ``I`` for
    ever; a negative ``B`` falls back to 0."""
    if transition_steps <= 0:
        return lambda step: float(init)
    begin = max(transition_begin, 0)

    def schedule(step: float) -> float:
        if step < begin:
            return float(init)
        if step >= begin + transition_steps:
            return float(end)
        return (init - end) * (1.0 - (step - begin) / transition_steps) ** power + end

    return schedule


def linear(init: float, end: float, transition_steps: int, transition_begin: int = 0) -> Schedule:
    """``linear_schedule``: ``I + (t - B) / T (E - I)`` between ``B`` and
    ``B + T``, ``I`` before, ``E`` after (the docstring's cases; power 1 of
    :func:`polynomial`)."""
    if transition_steps <= 0:
        return lambda step: float(init)
    begin = max(transition_begin, 0)

    def schedule(step: float) -> float:
        t = min(max(step - begin, 0.0), transition_steps)
        return init + t / transition_steps * (end - init)

    return schedule


def cosine_decay(init: float, decay_steps: int, alpha: float = 0.0, exponent: float = 1.0) -> Schedule:
    """``cosine_decay_schedule`` (Loshchilov & Hutter, SGDR, 2017, as the
    docstring writes it): ``alpha I + (1 - alpha) I [(1 + cos(pi t / T)) / 2]^p``
    for ``t <= T`` and ``alpha I`` for ``t > T``. For ``t < 0`` the first case
    applies as written (cosine is even: the value at ``-t`` is the value at
    ``t``)."""

    def schedule(step: float) -> float:
        if step > decay_steps:
            return alpha * init
        return alpha * init + (1.0 - alpha) * init * (0.5 * (1.0 + math.cos(math.pi * step / decay_steps))) ** exponent

    return schedule


def warmup_cosine_decay(
    init: float, peak: float, warmup_steps: int, decay_steps: int, end: float = 0.0, exponent: float = 1.0
) -> Schedule:
    """``warmup_cosine_decay_schedule``: linear warmup from ``init`` to
    ``peak`` over ``warmup_steps``, then a cosine decay from ``peak`` to
    ``end`` over the remaining ``decay_steps - warmup_steps`` (``decay_steps``
    "includes the warmup time"); the cosine floor is ``end``, i.e.
    ``alpha = end / peak`` (0 when ``peak`` is 0). The cosine part starts at
    step ``warmup_steps`` with its own step count ``t - warmup_steps``."""
    alpha = 0.0 if peak == 0.0 else end / peak
    warm = linear(init, peak, warmup_steps)
    cosine = cosine_decay(peak, decay_steps - warmup_steps, alpha, exponent)
    return join([warm, cosine], [warmup_steps])


def exponential(
    init: float,
    transition_steps: int,
    decay_rate: float,
    transition_begin: int = 0,
    staircase: bool = False,
    end: float | None = None,
) -> Schedule:
    """``exponential_decay``'s documented formula: for ``t >= B``,
    ``I * rate ** ((t - B) / T)``, the exponent floored when ``staircase``;
    ``I`` before ``B``. ``end`` is a lower bound when ``rate < 1`` and an
    upper bound otherwise. Documented special cases: ``T <= 0`` or
    ``rate == 0`` hold ``I`` for ever; a negative ``B`` falls back to 0."""
    if transition_steps <= 0 or decay_rate == 0:
        return lambda step: float(init)
    begin = max(transition_begin, 0)

    def schedule(step: float) -> float:
        if step < begin:
            value = float(init)
        else:
            p = (step - begin) / transition_steps
            value = init * decay_rate ** (math.floor(p) if staircase else p)
        if end is not None:
            value = max(value, end) if decay_rate < 1.0 else min(value, end)
        return value

    return schedule


def piecewise_constant(init: float, boundaries_and_scales: Mapping[int, float] | None = None) -> Schedule:
    """``piecewise_constant_schedule``: "init_value scaled by the product of
    all factors f_i such that t >= b_i"."""
    pairs = sorted((boundaries_and_scales or {}).items())

    def schedule(step: float) -> float:
        value = float(init)
        for boundary, scale in pairs:
            if step >= boundary:
                value *= scale
        return value

    return schedule


def join(schedules: Sequence[Schedule], boundaries: Sequence[int]) -> Schedule:
    """``join_schedules``: schedule ``i`` is in force from ``boundaries[i-1]``
    (inclusive) to ``boundaries[i]`` (exclusive) and "receives a step count
    indicating the number of steps since the previous boundary transition";
    the first schedule receives the step itself (also below 0)."""

    def schedule(step: float) -> float:
        start, current = 0, schedules[0]
        for boundary, nxt in zip(boundaries, schedules[1:], strict=True):
            if step >= boundary:
                start, current = boundary, nxt
        return current(step - start)

    return schedule
