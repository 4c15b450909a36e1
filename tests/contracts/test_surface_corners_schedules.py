"""Corner grid of the schedules of the sweep (``optax_gate.kit.corners.schedules``:
``SCHEDULE_PARAMS`` over each schedule's signature x ``SCHEDULE_STEPS`` x
``SCHEDULE_MODES``; issue 27).

``test_schedule_corners[schedule]``: the sweep's configuration (``base``) and
each degenerate one derived from the signature's parameter names (a
zero-length and a one-step interval, a boundary at step 0 and at the end,
fractions at 0 and 1, a decay rate of 0 and 1, ``staircase``, the other
interpolation), and ``hyper=<form>`` (every floating hyperparameter as a
0-d float32 or bfloat16 array or a NumPy float32 scalar), evaluated at steps 0, 1, 2, 20 and 21 given as a Python int,
as a 0-d int32 array, and as a 0-d int32 array under ``jax.jit``: the values'
dtypes (weak type included), the values to 4 significant digits and their
finiteness; or the exception's type and message. A labelled snapshot of optax
0.2.6 (``data_regression``, one line per corner and step form, recorded by
``./noxw -s update-snapshots -- -k corners``): a schedule that starts to
give NaN at a one-step interval, a Python float where it gave an array, or
values that stop following a bfloat16 hyperparameter's dtype, reads ``changed``.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from optax_gate.kit.corners.schedules import SCHEDULE_LEFT_OUT, schedule_record
from optax_gate.kit.surface import generated as surface_generated
from optax_gate.kit.surface.calls import CALLS

GUIDE = (
    "docs: optax 0.2.6 schedules' docstrings (optax/schedules/_schedule.py, _join.py): the arguments' meaning, "
    "'if transition_steps <= 0 the schedule is constant'; a schedule takes a step count, int or array"
)
#: The schedules of the sweep with a grid.
SCHEDULES = [p for p, (kind, _, _) in CALLS.items() if kind == "schedule" and p not in SCHEDULE_LEFT_OUT]


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(
            p, id=p, marks=[pytest.mark.contract(api=p, guide=surface_generated.guide(p, GUIDE)), pytest.mark.snapshot]
        )
        for p in SCHEDULES
    ],
)
def test_schedule_corners(path: Any, data_regression: Any) -> None:
    """Values, dtypes and finiteness at each degenerate configuration and step form (baseline snapshot)."""
    with warnings.catch_warnings():  # NumPy's 'invalid value' at a zero-length interval: the record says NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        data_regression.check(schedule_record(path))
