"""Generated protocol and snapshot contracts for every public transformation
factory of optax (``optax_gate.kit.surface.table.TRANSFORMATIONS``).

Each API gets one contract per protocol property (``surface_probe.PROPERTIES``)
plus two snapshots; the contract marker names the API, so the report groups
them under it. A property the baseline (optax 0.2.6) satisfies is an
``acceptance`` contract: the probe's outcome must be ``"ok"``, and an exception
or NaN that appears in a candidate reads ``broken``. A property the baseline
does not satisfy is pinned as the baseline behaves (the table's ``expect``:
the exception's type, or the reason) and labelled ``snapshot`` (its change
reads ``changed``), or ``known_defect`` when the baseline is wrong on a
documented input (its disappearance reads ``fixed``).

Snapshots (recorded from optax 0.2.6 by ``./noxw -s update-snapshots``, drift
not correctness): the params after three jitted ``jax.lax.scan`` steps on the
seeded representative PyTree (``ndarrays_regression``, compared within
``tolerances.SURFACE_TRAJECTORY`` float32 ULPs), and which update leaves come
out non-finite per input class, with the optimizer state's signature
(``data_regression``); and for each edge hyperparameter the factory takes
(zero learning rate, weight decay, momentum, decay: ``surface_edges``) meeting
NaN/inf gradients or params, which update and state leaves come out non-finite
(``data_regression``).
"""

from __future__ import annotations

from typing import Any

import pytest

from optax_gate.kit import tolerances
from optax_gate.kit.surface import edges as surface_edges
from optax_gate.kit.surface import generated as surface_generated
from optax_gate.kit.surface import probe as surface_probe
from optax_gate.kit.surface.table import TRANSFORMATIONS

GUIDE = "docs: optax 0.2.6 GradientTransformation protocol (optax/_src/base.py), each factory's docstring"
CONTRACTED = [e for e in TRANSFORMATIONS.values() if not e.left_out]
#: Snapshots need a baseline trajectory: the APIs whose scan runs.
RUNNING = [e for e in CONTRACTED if e.expect.get("scan_carry", "ok") == "ok"]


def _timeout(entry: Any) -> Any:
    """The first contract of an API to run computes its whole probe; an eager
    line search takes minutes on a loaded 2-core machine."""
    return [pytest.mark.timeout(SLOW_TIMEOUT_S)] if entry.slow else []


SLOW_TIMEOUT_S = 600


def _case(entry: Any, prop: Any) -> Any:
    expected = entry.expect.get(prop, "ok")
    marks = [pytest.mark.contract(api=entry.path, guide=surface_generated.guide(entry.path, GUIDE)), *_timeout(entry)]
    if expected == "ok":
        marks.append(pytest.mark.acceptance)
    else:
        marks.append(pytest.mark.snapshot)
        if prop in entry.defects:
            marks.append(pytest.mark.known_defect(entry.defects[prop]))
    return pytest.param(entry.path, prop, expected, marks=marks, id=f"{entry.path}-{prop}")


@pytest.mark.parametrize(
    ("path", "prop", "expected"), [_case(e, prop) for e in CONTRACTED for prop in surface_probe.PROPERTIES]
)
def test_protocol(path: Any, prop: Any, expected: Any) -> None:
    """init/update structure, shape and dtype; the state as a ``jax.lax.scan``
    carry; jit equal to eager; no recompilation on a second step; ``None``
    leaves; zero gradients staying finite; the extra-arguments protocol (an
    unknown keyword, ``value=`` as a Python float and as an array): each
    outcome as the baseline gives it. A generated entry's extra-arguments
    outcomes follow the type its factory returns (optax/_src/base.py: a
    ``GradientTransformationExtraArgs`` takes them, a plain
    ``GradientTransformation`` raises TypeError); its other properties hold."""
    if TRANSFORMATIONS[path].generated and prop in surface_probe.EXTRA_ARGS_PROPERTIES:
        expected = surface_probe.extra_args_outcome(path)
    assert surface_probe.protocol(path)[prop] == expected


def _snapshot(entry: Any) -> Any:
    return pytest.param(
        entry.path,
        id=entry.path,
        marks=[
            pytest.mark.contract(api=entry.path, guide=surface_generated.guide(entry.path, GUIDE)),
            pytest.mark.snapshot,
            *_timeout(entry),
        ],
    )


@pytest.mark.parametrize("path", [_snapshot(e) for e in RUNNING])
def test_trajectory(path: Any, request: pytest.FixtureRequest) -> None:
    """Params after each of three jitted scan steps (baseline snapshot)."""
    traj = surface_probe.protocol(path)["trajectory"]
    if not traj and TRANSFORMATIONS[path].generated:  # the failure is test_protocol[path-scan_carry]'s
        pytest.skip(f"{path}: no trajectory to record, its scan raises {surface_probe.protocol(path)['scan_carry']}")
    # the fixture after that skip: a candidate skips for the baseline's reason, not for the file it did not record
    ndarrays_regression = request.getfixturevalue("ndarrays_regression")
    assert traj, f"{path}: no trajectory ({surface_probe.protocol(path)['scan_carry']})"
    tol = tolerances.SURFACE_TRAJECTORY * tolerances.eps("float32")
    ndarrays_regression.check(traj, default_tolerance={"atol": tol, "rtol": tol})


@pytest.mark.parametrize("path", [_snapshot(e) for e in RUNNING])
def test_nonfinite_and_state(path: Any, data_regression: Any) -> None:
    """Which update leaves are non-finite for NaN/inf gradients, a NaN param
    and zero edge hyperparameters; the state's signature after one step
    (baseline snapshot)."""
    data_regression.check(
        {"nonfinite": surface_probe.protocol(path)["nonfinite"], "state": surface_probe.state_signature(path)}
    )


#: The APIs with an edge hyperparameter (``surface_edges.names``).
EDGED = [e for e in CONTRACTED if surface_edges.names(e)]


@pytest.mark.parametrize("path", [_snapshot(e) for e in EDGED])
def test_edge_hyperparams(path: Any, data_regression: Any) -> None:
    """Each edge hyperparameter at zero meeting NaN/inf gradients or params:
    which update and state leaves come out non-finite (baseline snapshot)."""
    data_regression.check(surface_edges.outcomes(path))
