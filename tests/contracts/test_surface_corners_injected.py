"""Injected-hyperparameter grid of the transformations of the surface table
(``optax_gate.kit.corners.injected``; issue 56, item 3).

``test_injected_hyperparameters[api]`` (each transformation of the corner grid
with a numeric hyperparameter, ``inject_grid``): the factory built through
``optax.inject_hyperparams``, at each corner of ``INJECT_CORNERS``: the
hyperparameters as Python numbers, as 0-d float32, bfloat16, float16 and weakly
typed arrays and as NumPy float32 scalars over float32 params; as Python numbers
over bfloat16 and float16 params, with ``hyperparam_dtype=float32`` over
bfloat16 params, and jitted. At each, two updates: the last update's dtypes,
global norm and first entry (3 significant digits), the state's leaves per
dtype and its hyperparameters' (``h``), finiteness; or the exception's type and
message (``transformation_outcome``). A labelled snapshot of optax 0.2.6
(``data_regression``, one line per corner, recorded by ``./noxw -s
update-snapshots -- -k injected``): ``adam``'s ``b2=0.999`` cast to bfloat16
(1.0, so a NaN update) pinned as the baseline does it, a hyperparameter that
starts to raise under ``jax.jit`` reads ``changed``.
"""

from __future__ import annotations

from typing import Any

import pytest

from optax_gate.kit.corners.injected import inject_grid, inject_record
from optax_gate.kit.surface import generated as surface_generated

GUIDE = (
    "docs: optax 0.2.6 optax.inject_hyperparams' docstring (optax/schedules/_inject.py: 'numeric "
    "hyperparameters', 'hyperparam_dtype: all float hyperparameters will be cast to this type') over each "
    "transformation's docstring"
)


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(
            p, id=p, marks=[pytest.mark.contract(api=p, guide=surface_generated.guide(p, GUIDE)), pytest.mark.snapshot]
        )
        for p in inject_grid()
    ],
)
def test_injected_hyperparameters(path: Any, data_regression: Any) -> None:
    """The outcome of a few updates of ``inject_hyperparams(<path>)`` at each corner (baseline snapshot)."""
    data_regression.check(inject_record(path))
