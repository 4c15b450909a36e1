"""Contracts of Optax's step schedules: ``constant_schedule``,
``linear_schedule``, ``cosine_decay_schedule``, ``warmup_cosine_decay_schedule``,
``exponential_decay``, ``piecewise_constant_schedule`` and ``join_schedules``.

A schedule maps a step count (a Python int, or the int32 ``count`` an optimizer
state carries) to a hyperparameter value. Expected values come from
``optax_gate.kit.references.schedules``: float64 formulas written from each
schedule's documented formula (docstring math blocks and argument texts).
Each test is marked with the one API it pins (per-test ``contract`` marker).

Source read: optax 0.2.6 ``optax/schedules/_schedule.py`` and ``_join.py``.
Behaviours pinned from that source (not from a formula):

- ``constant_schedule(v)`` returns ``v`` itself (a Python float stays a float,
  an int an int), never an array.
- ``cosine_decay_schedule`` clamps the step only from above
  (``jnp.minimum(count, decay_steps)``): a negative step mirrors the decay
  (value at ``-t`` = value at ``t``), as its formula does when read literally.
  ``decay_steps <= 0`` raises ``ValueError``, also from
  ``warmup_cosine_decay_schedule`` when ``decay_steps == warmup_steps``.
- ``linear_schedule`` and ``exponential_decay`` clamp negative steps to the
  initial value; ``transition_steps <= 0`` (and ``decay_rate == 0`` for the
  exponential) silently give a constant schedule, a negative
  ``transition_begin`` is treated as 0 (logged, not raised); without
  ``end_value`` the exponential decays for ever.
- ``piecewise_constant_schedule`` switches *at* a boundary (``t >= b``) and
  raises ``ValueError`` for a negative scale.
- ``join_schedules`` passes a negative step to its first schedule unchanged,
  and ``zip``s schedules with boundaries: surplus boundaries are ignored.
- Value dtype: float32 in JAX's default mode. Under ``jax_enable_x64`` an int32
  step (what optimizer states carry) gives float32 for the schedules that
  divide the step by a Python int (linear, warmup-cosine, exponential, join
  of those): ledger ``schedule-float32-under-x64``; cosine and piecewise give
  float64.

Tolerances (``kit.tolerances``): one ``ELEMENTWISE`` budget per stage of
roundings, relative to the schedule's largest hyperparameter (its operands):
linear and piecewise 1 stage; cosine, warmup-cosine and exponential 2 stages
(the transcendental ``cos``/``pow`` of a rounded argument, then the affine
combination); join the budget of the schedule in force.
"""

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hypothesis import given
from hypothesis import strategies as st

from optax_gate.kit import pinned, recompilation
from optax_gate.kit.references import schedules as ref
from optax_gate.kit.tolerances import ELEMENTWISE, EXACT, assert_close

#: The source label of each API: the documented formula the reference encodes.
SOURCES = {
    "constant_schedule": "docs: optax.constant_schedule (value held constant throughout)",
    "linear_schedule": "docs: optax.linear_schedule formula (I before B, I + (t-B)/T (E-I), E after B+T)",
    "cosine_decay_schedule": "paper: Loshchilov & Hutter 2017 (SGDR), as optax.cosine_decay_schedule documents it",
    "warmup_cosine_decay_schedule": "docs: optax.warmup_cosine_decay_schedule (linear warmup, "
    "then cosine to end_value)",
    "exponential_decay": "docs: optax.exponential_decay formula (init * rate ** ((t-B)/T), staircase, end_value)",
    "piecewise_constant_schedule": "docs: optax.piecewise_constant_schedule (init times the scales of boundaries <= t)",
    "join_schedules": "docs: optax.join_schedules (schedule i from boundary i-1, step since that boundary)",
}


def contract(api: Any) -> Any:
    """The contract marker of one schedule API."""
    return pytest.mark.contract(api=f"optax.{api}", guide=SOURCES[api])


#: One case per configuration: (API, optax schedule factory, reference,
#: steps to check (every boundary, one either side, negative, far past the
#: end), ULP budget, scale = largest hyperparameter magnitude).
CASES: dict[str, tuple[Any, ...]] = {
    "constant": (
        "constant_schedule",
        lambda: optax.constant_schedule(0.5),
        ref.constant(0.5),
        [-3, 0, 1, 1000],
        EXACT,
        0.5,
    ),
    "linear-delayed": (
        "linear_schedule",
        lambda: optax.linear_schedule(1.0, 0.1, transition_steps=4, transition_begin=2),
        ref.linear(1.0, 0.1, 4, 2),
        [-1, 0, 1, 2, 3, 4, 5, 6, 7, 100],
        ELEMENTWISE,
        1.0,
    ),
    "linear-increasing": (
        "linear_schedule",
        lambda: optax.linear_schedule(0.0, 2.0, transition_steps=5),
        ref.linear(0.0, 2.0, 5),
        [-1, 0, 1, 4, 5, 6],
        ELEMENTWISE,
        2.0,
    ),
    "cosine": (
        "cosine_decay_schedule",
        lambda: optax.cosine_decay_schedule(2.0, decay_steps=4),
        ref.cosine_decay(2.0, 4),
        [0, 1, 2, 3, 4, 5, 100],
        2 * ELEMENTWISE,
        2.0,
    ),
    "cosine-alpha-exponent": (
        "cosine_decay_schedule",
        lambda: optax.cosine_decay_schedule(1.0, decay_steps=4, alpha=0.1, exponent=2.0),
        ref.cosine_decay(1.0, 4, 0.1, 2.0),
        [0, 1, 2, 3, 4, 5, 100],
        2 * ELEMENTWISE,
        1.0,
    ),
    "warmup-cosine": (
        "warmup_cosine_decay_schedule",
        lambda: optax.warmup_cosine_decay_schedule(0.0, 1.0, warmup_steps=2, decay_steps=6, end_value=0.1),
        ref.warmup_cosine_decay(0.0, 1.0, 2, 6, 0.1),
        [-1, 0, 1, 2, 3, 4, 5, 6, 7, 100],
        2 * ELEMENTWISE,
        1.0,
    ),
    "warmup-cosine-exponent": (
        "warmup_cosine_decay_schedule",
        lambda: optax.warmup_cosine_decay_schedule(
            0.1, 1.0, warmup_steps=3, decay_steps=7, end_value=0.0, exponent=2.0
        ),
        ref.warmup_cosine_decay(0.1, 1.0, 3, 7, 0.0, 2.0),
        [0, 2, 3, 4, 5, 7, 8],
        2 * ELEMENTWISE,
        1.0,
    ),
    "exponential": (
        "exponential_decay",
        lambda: optax.exponential_decay(1.0, transition_steps=2, decay_rate=0.5),
        ref.exponential(1.0, 2, 0.5),
        [-1, 0, 1, 2, 3, 4, 6],
        2 * ELEMENTWISE,
        1.0,
    ),
    "exponential-staircase-begin": (
        "exponential_decay",
        lambda: optax.exponential_decay(1.0, transition_steps=2, decay_rate=0.5, transition_begin=1, staircase=True),
        ref.exponential(1.0, 2, 0.5, 1, True),
        [-1, 0, 1, 2, 3, 4, 5, 7],
        2 * ELEMENTWISE,
        1.0,
    ),
    "exponential-end-lower": (
        "exponential_decay",
        lambda: optax.exponential_decay(1.0, transition_steps=2, decay_rate=0.5, end_value=0.3),
        ref.exponential(1.0, 2, 0.5, end=0.3),
        [0, 2, 3, 4, 100],
        2 * ELEMENTWISE,
        1.0,
    ),
    "exponential-end-upper": (
        "exponential_decay",
        lambda: optax.exponential_decay(1.0, transition_steps=2, decay_rate=2.0, end_value=3.0),
        ref.exponential(1.0, 2, 2.0, end=3.0),
        [0, 1, 2, 3, 4, 100],
        2 * ELEMENTWISE,
        3.0,
    ),
    "piecewise": (
        "piecewise_constant_schedule",
        lambda: optax.piecewise_constant_schedule(1.0, {4: 0.1, 2: 0.5}),
        ref.piecewise_constant(1.0, {2: 0.5, 4: 0.1}),
        [-1, 0, 1, 2, 3, 4, 5, 100],
        ELEMENTWISE,
        1.0,
    ),
    "join": (
        "join_schedules",
        lambda: optax.join_schedules(
            [optax.constant_schedule(1.0), optax.linear_schedule(1.0, 0.0, 2), optax.cosine_decay_schedule(0.5, 4)],
            [3, 6],
        ),
        ref.join([ref.constant(1.0), ref.linear(1.0, 0.0, 2), ref.cosine_decay(0.5, 4)], [3, 6]),
        [-1, 0, 2, 3, 4, 5, 6, 7, 8, 10, 11, 100],
        2 * ELEMENTWISE,
        1.0,
    ),
}


def cases(names: Any = None, marks: Any = ()) -> Any:
    """pytest parameters ``(name)`` over ``CASES`` (or ``names``), each
    carrying the contract marker of its API."""
    return [pytest.param(n, marks=[contract(CASES[n][0]), *marks], id=n) for n in (names or CASES)]


def values(schedule: Any, steps: Any) -> Any:
    """The schedule at each step, called as an optimizer calls it (an int32
    scalar step), as float64 NumPy."""
    return np.array([float(schedule(jnp.int32(s))) for s in steps])


# --------------------------------------------------------------------------- golden


@pytest.mark.golden
@pytest.mark.parametrize("name", cases())
def test_values_at_every_boundary_step(name: Any) -> None:
    """At each boundary (transition begin/end, warmup end, decay end,
    piecewise boundaries, join boundaries), one step either side, a negative
    step and a step far past the end, the float32 value equals the float64
    documented formula within the case's budget."""
    _api, make, reference, steps, ulps, scale = CASES[name]
    got = values(make(), steps)
    assert_close(
        got, [reference(s) for s in steps], dtype=jnp.float32, ulps=ulps, scale=scale, what=f"{name} at {steps}"
    )


@pytest.mark.golden
@contract("warmup_cosine_decay_schedule")
def test_warmup_ends_at_warmup_steps_with_peak_and_decays_to_end_value() -> None:
    """Docstring: the warmup reaches ``peak_value`` at step ``warmup_steps``
    (not one step later), ``decay_steps`` includes the warmup, and the value
    at ``decay_steps`` and after is ``end_value``: warmup 0 -> 1 over 4
    steps, cosine to 0.2 by step 10: steps 3, 4, 5 = 0.75, 1, 0.2 + 0.8 *
    (1 + cos(pi / 6)) / 2; steps 10, 11 = 0.2."""
    schedule = optax.warmup_cosine_decay_schedule(0.0, 1.0, warmup_steps=4, decay_steps=10, end_value=0.2)
    want = [0.75, 1.0, 0.2 + 0.8 * (1 + math.cos(math.pi / 6)) / 2, 0.2, 0.2]
    assert_close(
        values(schedule, [3, 4, 5, 10, 11]),
        want,
        dtype=jnp.float32,
        ulps=2 * ELEMENTWISE,
        scale=1.0,
        what="warmup-cosine",
    )


@pytest.mark.golden
@contract("exponential_decay")
def test_staircase_holds_each_value_for_transition_steps() -> None:
    """``staircase=True``: ``0.5 ** floor((t - 1) / 3)`` with begin 1 — steps
    1..3 give 1, 4..6 give 0.5, step 7 gives 0.25 (exact powers of two)."""
    schedule = optax.exponential_decay(1.0, transition_steps=3, decay_rate=0.5, transition_begin=1, staircase=True)
    assert_close(
        values(schedule, range(1, 8)), [1, 1, 1, 0.5, 0.5, 0.5, 0.25], dtype=jnp.float32, ulps=EXACT, what="staircase"
    )


@pytest.mark.golden
@contract("piecewise_constant_schedule")
def test_piecewise_scales_multiply_at_and_after_each_boundary() -> None:
    """Docstring example: {100: 0.1, 200: 0.01} from 1 gives 1 at 99, 0.1 at
    100 and 199, 0.001 at 200 (scales accumulate); EXACT for the steps before
    the first boundary (a copy of init_value)."""
    schedule = optax.piecewise_constant_schedule(1.0, {100: 0.1, 200: 0.01})
    got = values(schedule, [99, 100, 199, 200])
    assert_close(got[:1], [1.0], dtype=jnp.float32, ulps=EXACT, what="before")
    assert_close(got[1:], [0.1, 0.1, 0.001], dtype=jnp.float32, ulps=ELEMENTWISE, scale=1.0, what="after")


# --------------------------------------------------------------------------- properties

_STEPS: Any = np.arange(-3, 40)


def _batched(schedule: Any) -> Any:
    """The schedule at every step of ``_STEPS`` through ``jax.vmap`` (one
    traced int32 step per element, no compilation per example)."""
    return np.asarray(jax.vmap(schedule)(jnp.asarray(_STEPS, jnp.int32)), np.float64)


def _assert_monotone(got: Any, increasing: Any, scale: Any, what: Any) -> None:
    """Non-increasing (or non-decreasing) within one ELEMENTWISE rounding of
    ``scale`` between neighbours."""
    slack = ELEMENTWISE * 2.0**-23 * scale
    diffs = np.diff(got) if increasing else -np.diff(got)
    assert np.all(diffs >= -slack), f"{what}: not monotone at steps {_STEPS[1:][diffs < -slack]}"


_value = st.floats(0.01, 10.0)


@pytest.mark.property
@contract("linear_schedule")
@given(init=_value, end=_value, steps=st.integers(1, 30), begin=st.integers(0, 8))
def test_linear_matches_formula_and_is_monotone(init: Any, end: Any, steps: Any, begin: Any) -> None:
    """Every step in [-3, 40) against the formula; non-increasing when
    ``init >= end``, non-decreasing otherwise; constant before ``begin`` and
    after ``begin + steps``."""
    got = _batched(optax.linear_schedule(init, end, steps, begin))
    reference = ref.linear(init, end, steps, begin)
    scale = max(init, end)
    assert_close(got, [reference(s) for s in _STEPS], dtype=jnp.float32, ulps=ELEMENTWISE, scale=scale, what="linear")
    _assert_monotone(got, end > init, scale, "linear")


@pytest.mark.property
@contract("cosine_decay_schedule")
@given(init=_value, decay=st.integers(1, 30), alpha=st.floats(0.0, 1.0), exponent=st.floats(0.5, 3.0))
def test_cosine_matches_formula_and_decays_monotonically(init: Any, decay: Any, alpha: Any, exponent: Any) -> None:
    """Against the formula at every step (negative ones mirrored); from step
    0 on non-increasing, between ``alpha * init`` and ``init``."""
    got = _batched(optax.cosine_decay_schedule(init, decay, alpha, exponent))
    reference = ref.cosine_decay(init, decay, alpha, exponent)
    assert_close(
        got, [reference(s) for s in _STEPS], dtype=jnp.float32, ulps=2 * ELEMENTWISE, scale=init, what="cosine"
    )
    _assert_monotone(got[_STEPS >= 0], False, init, "cosine")
    slack = 2 * ELEMENTWISE * 2.0**-23 * init
    assert np.all(got >= alpha * init - slack) and np.all(got <= init + slack)


@pytest.mark.property
@contract("warmup_cosine_decay_schedule")
@given(init=_value, peak=_value, end=_value, warmup=st.integers(0, 10), decay=st.integers(1, 25))
def test_warmup_cosine_matches_formula_rises_then_falls(
    init: Any, peak: Any, end: Any, warmup: Any, decay: Any
) -> None:
    """Against the formula; with ``init <= peak >= end`` non-decreasing up to
    ``warmup_steps`` and non-increasing after it."""
    init, end = min(init, peak), min(end, peak)
    got = _batched(optax.warmup_cosine_decay_schedule(init, peak, warmup, warmup + decay, end))
    reference = ref.warmup_cosine_decay(init, peak, warmup, warmup + decay, end)
    assert_close(
        got, [reference(s) for s in _STEPS], dtype=jnp.float32, ulps=2 * ELEMENTWISE, scale=peak, what="warmup-cosine"
    )
    _assert_monotone(got[warmup >= _STEPS], True, peak, "warmup")
    _assert_monotone(got[warmup <= _STEPS], False, peak, "decay")


@pytest.mark.property
@contract("exponential_decay")
@given(
    init=_value, steps=st.integers(1, 20), rate=st.floats(0.3, 0.99), begin=st.integers(0, 8), staircase=st.booleans()
)
def test_exponential_matches_formula_and_decays_monotonically(
    init: Any, steps: Any, rate: Any, begin: Any, staircase: Any
) -> None:
    """Against the formula (exponents here stay <= 40 * |ln 0.3| / 1, within
    the pow stage's budget); with ``rate < 1`` non-increasing."""
    got = _batched(optax.exponential_decay(init, steps, rate, begin, staircase))
    reference = ref.exponential(init, steps, rate, begin, staircase)
    want = np.array([reference(s) for s in _STEPS])
    # pow(rate, p) = exp(p ln rate): the rounding of p ln rate is amplified by |p ln rate|.
    amplification = max(1.0, float(np.max(np.abs((_STEPS - begin).clip(0) / steps * math.log(rate)))))
    assert_close(
        got,
        want,
        dtype=jnp.float32,
        ulps=math.ceil(2 * ELEMENTWISE * amplification),
        scale=init,
        what="exponential",
    )
    _assert_monotone(got, False, init, "exponential")


@pytest.mark.property
@contract("piecewise_constant_schedule")
@given(init=_value, table=st.dictionaries(st.integers(0, 35), st.floats(0.0, 1.0), max_size=4))
def test_piecewise_matches_formula_and_with_scales_below_one_never_rises(init: Any, table: Any) -> None:
    """Against the product formula; with every scale in [0, 1] the schedule
    never rises."""
    got = _batched(optax.piecewise_constant_schedule(init, table))
    reference = ref.piecewise_constant(init, table)
    assert_close(
        got,
        [reference(s) for s in _STEPS],
        dtype=jnp.float32,
        ulps=ELEMENTWISE * max(1, len(table)),
        scale=init,
        what="piecewise",
    )
    _assert_monotone(got, False, init, "piecewise")


@pytest.mark.property
@contract("join_schedules")
@given(a=_value, b=_value, boundary=st.integers(0, 30), decay=st.integers(1, 20))
def test_join_runs_each_schedule_from_its_boundary(a: Any, b: Any, boundary: Any, decay: Any) -> None:
    """``join([linear(a, b, 5), cosine(b, decay)], [boundary])``: before the
    boundary the linear schedule at ``t``, from it the cosine at
    ``t - boundary``."""
    got = _batched(
        optax.join_schedules([optax.linear_schedule(a, b, 5), optax.cosine_decay_schedule(b, decay)], [boundary])
    )
    reference = ref.join([ref.linear(a, b, 5), ref.cosine_decay(b, decay)], [boundary])
    assert_close(
        got, [reference(s) for s in _STEPS], dtype=jnp.float32, ulps=2 * ELEMENTWISE, scale=max(a, b), what="join"
    )


# --------------------------------------------------------------------------- steps outside the schedule


@pytest.mark.negative
@contract("linear_schedule")
def test_linear_clamps_negative_steps_and_steps_past_the_end() -> None:
    """Negative steps give ``init_value`` and steps past ``begin + T`` give
    ``end_value`` (``jnp.clip(count - begin, 0, T)``), exactly."""
    got = values(optax.linear_schedule(1.0, 0.25, transition_steps=4), [-100, -1, 4, 5, 10**6])
    assert_close(got, [1.0, 1.0, 0.25, 0.25, 0.25], dtype=jnp.float32, ulps=EXACT, what="clamped")


@pytest.mark.negative
@contract("cosine_decay_schedule")
def test_cosine_mirrors_negative_steps_and_holds_alpha_past_the_end() -> None:
    """A negative step is *not* clamped: the value at -1 equals the value at
    1 (below ``init_value``); at -T it is the floor ``alpha * init``. Past
    ``decay_steps`` the value stays ``alpha * init``."""
    got = values(optax.cosine_decay_schedule(1.0, decay_steps=4, alpha=0.25), [-4, -1, 1, 4, 5, 10**6])
    assert_close(
        got, [0.25, got[2], got[2], 0.25, 0.25, 0.25], dtype=jnp.float32, ulps=EXACT, scale=1.0, what="mirrored"
    )
    assert_close(
        got[2], ref.cosine_decay(1.0, 4, 0.25)(1), dtype=jnp.float32, ulps=2 * ELEMENTWISE, scale=1.0, what="step 1"
    )


@pytest.mark.negative
@contract("warmup_cosine_decay_schedule")
def test_warmup_cosine_holds_init_before_zero_and_end_value_past_the_end() -> None:
    """Negative steps: ``init_value`` (the warmup clamps); past
    ``decay_steps``: ``end_value``."""
    got = values(
        optax.warmup_cosine_decay_schedule(0.1, 1.0, warmup_steps=2, decay_steps=6, end_value=0.05),
        [-50, -1, 6, 7, 10**6],
    )
    assert_close(got, [0.1, 0.1, 0.05, 0.05, 0.05], dtype=jnp.float32, ulps=ELEMENTWISE, scale=1.0, what="outside")


@pytest.mark.negative
@contract("exponential_decay")
def test_exponential_holds_init_before_begin_and_without_end_value_decays_for_ever() -> None:
    """Negative steps and steps before ``transition_begin`` give
    ``init_value`` exactly; without ``end_value`` step 200 gives 0.5 ** 100
    (no floor; budget: the pow stage's rounding amplified by
    |p ln rate| = 100 ln 2 < 70); with it, the floor holds."""
    schedule = optax.exponential_decay(1.0, transition_steps=2, decay_rate=0.5, transition_begin=3)
    assert_close(values(schedule, [-10, 0, 3]), [1.0, 1.0, 1.0], dtype=jnp.float32, ulps=EXACT, what="before begin")
    far = values(schedule, [203])[0]
    assert_close(far, 0.5**100, dtype=jnp.float32, ulps=2 * ELEMENTWISE * 70, what="no floor")
    floored = optax.exponential_decay(1.0, transition_steps=2, decay_rate=0.5, end_value=0.01)
    assert_close(values(floored, [203]), [0.01], dtype=jnp.float32, ulps=1, what="floor (a stored decimal: 1 ULP)")


@pytest.mark.negative
@contract("piecewise_constant_schedule")
def test_piecewise_before_zero_and_far_past_the_last_boundary() -> None:
    """Negative steps: ``init_value``; far past the last boundary: the
    product of every scale."""
    got = values(optax.piecewise_constant_schedule(2.0, {1: 0.5, 3: 0.5}), [-5, 10**6])
    assert_close(got, [2.0, 0.5], dtype=jnp.float32, ulps=EXACT, what="outside")


@pytest.mark.negative
@contract("join_schedules")
def test_join_passes_negative_steps_to_the_first_schedule_unclamped() -> None:
    """``join([cosine(1, 4), constant(0.1)], [4])`` at -1 gives the first
    schedule's value at -1 (the mirrored cosine, below 1): the join does not
    clamp; far past the boundary the last schedule holds."""
    joined = optax.join_schedules([optax.cosine_decay_schedule(1.0, 4), optax.constant_schedule(0.1)], [4])
    got = values(joined, [-1, 1, 10**6])
    assert_close(got[0], got[1], dtype=jnp.float32, ulps=EXACT, what="mirrored")
    assert_close(
        got[0], ref.cosine_decay(1.0, 4)(-1), dtype=jnp.float32, ulps=2 * ELEMENTWISE, scale=1.0, what="step -1"
    )
    assert_close(got[2], 0.1, dtype=jnp.float32, ulps=ELEMENTWISE, what="past")


@pytest.mark.negative
@contract("constant_schedule")
def test_constant_returns_the_value_itself_at_any_step() -> None:
    """``constant_schedule(v)(t)`` is ``v`` itself (no array, no cast): a
    float stays a Python float, an int an int, at negative and huge steps,
    traced or not."""
    assert optax.constant_schedule(0.5)(-7) == 0.5 and type(optax.constant_schedule(0.5)(jnp.int32(10**6))) is float
    assert type(optax.constant_schedule(5)(3)) is int


# --------------------------------------------------------------------------- dtypes


@pytest.mark.acceptance
@pytest.mark.parametrize("name", cases([n for n in CASES if n != "constant"]))
def test_value_is_float32_for_int32_and_python_int_steps(name: Any) -> None:
    """In JAX's default mode the value is a float32 array for an int32 step
    and for a Python int step, and the two agree bit for bit."""
    _api, make, _reference, steps, _ulps, _scale = CASES[name]
    schedule = make()
    for s in steps[:3]:
        a, b = schedule(jnp.int32(s)), schedule(s)
        assert jnp.result_type(a) == jnp.float32 and jnp.result_type(b) == jnp.float32, (s, a, b)
        assert_close(a, float(b), dtype=jnp.float32, ulps=EXACT, what=f"int32 vs int at {s}")


_X64_FLOAT32 = ["linear-delayed", "warmup-cosine", "exponential", "join"]


@pytest.mark.acceptance
@pytest.mark.known_defect("schedule-float32-under-x64")
@pytest.mark.parametrize("name", cases(_X64_FLOAT32))
def test_under_x64_an_int32_step_gives_a_float32_value(name: Any) -> None:
    """With x64 on, the int32 ``count`` an optimizer state carries gives a
    float32 value (``count / transition_steps`` of an int32 and a Python int
    is float32): the pinned defect."""
    _api, make, *_ = CASES[name]
    with jax.enable_x64(True):
        assert jnp.result_type(make()(jnp.int32(3))) == jnp.float32


@pytest.mark.acceptance
@pytest.mark.parametrize("name", cases([n for n in CASES if n != "constant"]))
def test_under_x64_an_int64_or_python_step_gives_float64_accuracy(name: Any) -> None:
    """With x64 on, a Python int or int64 step gives a float64 value, equal
    to the formula within the float64 budget; cosine and piecewise are
    float64 for an int32 step as well."""
    api, make, reference, steps, ulps, scale = CASES[name]
    with jax.enable_x64(True):
        schedule = make()
        got = [schedule(s) for s in steps] + [schedule(jnp.int64(s)) for s in steps]
        assert all(jnp.result_type(v) == jnp.float64 for v in got), [jnp.result_type(v) for v in got]
        if api in ("cosine_decay_schedule", "piecewise_constant_schedule"):
            assert jnp.result_type(schedule(jnp.int32(steps[0]))) == jnp.float64
        want = [reference(s) for s in steps] * 2
        assert_close(
            np.array([float(v) for v in got]),
            want,
            dtype=jnp.float64,
            ulps=max(ulps, ELEMENTWISE),
            scale=scale,
            what=name,
        )


# --------------------------------------------------------------------------- jit


@pytest.mark.acceptance
@pytest.mark.parametrize("name", cases([n for n in CASES if n != "constant"]))
def test_jit_matches_eager_with_a_traced_step_and_compiles_once(name: Any) -> None:
    """``jax.jit(schedule)`` called with int32 steps (traced) equals the eager
    value at every case step; after the first call no step compiles again."""
    _api, make, _reference, steps, _ulps, scale = CASES[name]
    schedule = make()
    jitted = jax.jit(schedule)
    with recompilation.counting() as compiled:
        got = [float(jitted(jnp.int32(s))) for s in steps[:1]]
        first = compiled.count
        got += [float(jitted(jnp.int32(s))) for s in steps[1:]]
    assert compiled.count == first, f"{compiled.count - first} recompilations across steps"
    assert_close(got, values(schedule, steps), dtype=jnp.float32, ulps=ELEMENTWISE, scale=scale, what="jit vs eager")


@pytest.mark.acceptance
@contract("constant_schedule")
def test_constant_under_jit_is_the_value_as_a_float32_array() -> None:
    """Under ``jax.jit`` the returned Python float becomes a float32 output
    equal to the value; no recompilation across steps."""
    jitted = jax.jit(optax.constant_schedule(0.5))
    with recompilation.counting() as compiled:
        first = jitted(jnp.int32(0))
        n = compiled.count
        rest = [jitted(jnp.int32(s)) for s in (1, 1000)]
    assert compiled.count == n and first.dtype == jnp.float32
    assert_close([first, *rest], [0.5] * 3, dtype=jnp.float32, ulps=EXACT, what="constant under jit")


# --------------------------------------------------------------------------- invalid arguments


@pytest.mark.negative
@contract("cosine_decay_schedule")
@pytest.mark.parametrize("decay_steps", [0, -2])
def test_cosine_with_non_positive_decay_steps_raises_value_error(decay_steps: Any) -> None:
    with pytest.raises(ValueError, match=pinned.COSINE_DECAY_STEPS):
        optax.cosine_decay_schedule(1.0, decay_steps)


@pytest.mark.negative
@contract("warmup_cosine_decay_schedule")
def test_warmup_cosine_with_decay_steps_equal_to_warmup_raises_value_error() -> None:
    """``decay_steps`` includes the warmup: equal to ``warmup_steps`` leaves a
    cosine part of 0 steps, refused by ``cosine_decay_schedule``."""
    with pytest.raises(ValueError, match=pinned.COSINE_DECAY_STEPS):
        optax.warmup_cosine_decay_schedule(0.0, 1.0, warmup_steps=5, decay_steps=5)


@pytest.mark.negative
@contract("piecewise_constant_schedule")
def test_piecewise_with_a_negative_scale_raises_value_error() -> None:
    with pytest.raises(ValueError, match=pinned.PIECEWISE_NEGATIVE_SCALE):
        optax.piecewise_constant_schedule(1.0, {2: -0.5})


@pytest.mark.negative
@contract("linear_schedule")
def test_linear_degenerate_arguments_are_accepted_silently() -> None:
    """``transition_steps=0`` gives the constant ``init_value`` (the Python
    value itself); a negative ``transition_begin`` counts as 0. No error."""
    assert optax.linear_schedule(1.0, 0.0, transition_steps=0)(100) == 1.0
    got = values(optax.linear_schedule(1.0, 0.0, transition_steps=4, transition_begin=-2), [0, 1, 4])
    assert_close(got, [1.0, 0.75, 0.0], dtype=jnp.float32, ulps=ELEMENTWISE, scale=1.0, what="begin -2 as 0")


@pytest.mark.negative
@contract("exponential_decay")
def test_exponential_degenerate_arguments_are_accepted_silently() -> None:
    """``transition_steps <= 0`` or ``decay_rate == 0`` give the constant
    ``init_value`` (the Python value itself); a negative ``transition_begin``
    counts as 0."""
    assert optax.exponential_decay(2.0, transition_steps=0, decay_rate=0.5)(10) == 2.0
    assert optax.exponential_decay(2.0, transition_steps=2, decay_rate=0.0)(10) == 2.0
    got = values(optax.exponential_decay(1.0, transition_steps=1, decay_rate=0.5, transition_begin=-3), [0, 1, 2])
    assert_close(got, [1.0, 0.5, 0.25], dtype=jnp.float32, ulps=2 * ELEMENTWISE, scale=1.0, what="begin -3 as 0")


@pytest.mark.negative
@contract("join_schedules")
def test_join_does_not_check_the_number_of_boundaries() -> None:
    """One schedule and one boundary: no error, the boundary is ignored
    (``zip``); three schedules and one boundary: the third never runs."""
    assert optax.join_schedules([optax.constant_schedule(1.0)], [3])(5) == 1.0
    joined = optax.join_schedules(
        [optax.constant_schedule(1.0), optax.constant_schedule(2.0), optax.constant_schedule(3.0)], [2]
    )
    assert_close(values(joined, [1, 2, 100]), [1.0, 2.0, 2.0], dtype=jnp.float32, ulps=EXACT, what="surplus schedule")
