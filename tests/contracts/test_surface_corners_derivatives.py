"""Derivatives of every loss and schedule of the sweep with respect to each
differentiable argument (``optax_gate.kit.surface.derivatives``; issue 40
item 2): the sweep's own ``test_loss_grad`` checks the first argument only.

``test_loss_derivatives[api]``: for each floating array argument of the
sweep's call (logits, targets, paddings...), reverse mode against forward mode
along a fixed direction, both finite: ``ok``, ``non-finite gradient``,
``forward and reverse differ``, ``integer input`` or ``raises <type>``.
``test_schedule_derivatives[api]``: the same for each Python-float
hyperparameter of the schedule (the sum of its values at the sweep's steps);
a schedule that branches in Python on a hyperparameter raises a tracer error.
Labelled snapshots of optax 0.2.6 (``data_regression``, recorded by
``./noxw -s update-snapshots -- -k derivatives``).
"""

from __future__ import annotations

from typing import Any

import pytest

from optax_gate.kit.surface import generated as surface_generated
from optax_gate.kit.surface.derivatives import loss_record, losses, schedule_record, schedules

GUIDE = (
    "formula: forward and reverse mode agree, jvp(f)(x; d) = <grad f(x), d>; docs: optax 0.2.6 losses' and "
    "schedules' signatures (which arguments are arrays and floats)"
)


def _case(path: Any) -> Any:
    return pytest.param(
        path,
        id=path,
        marks=[pytest.mark.contract(api=path, guide=surface_generated.guide(path, GUIDE)), pytest.mark.snapshot],
    )


@pytest.mark.parametrize("path", [_case(p) for p in losses()])
def test_loss_derivatives(path: Any, data_regression: Any) -> None:
    """Reverse against forward mode per differentiable argument (baseline snapshot)."""
    data_regression.check(loss_record(path))


@pytest.mark.parametrize("path", [_case(p) for p in schedules()])
def test_schedule_derivatives(path: Any, data_regression: Any) -> None:
    """Reverse against forward mode per float hyperparameter (baseline snapshot)."""
    data_regression.check(schedule_record(path))
