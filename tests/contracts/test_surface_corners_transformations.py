"""Corner grid of the transformations of the surface table
(``optax_gate.kit.corners.transformations``: ``transformation_corners`` over each
factory's signature; issue 27).

``test_transformation_corners[api]`` (each API with a corner,
``transformation_grid``): one eager ``init`` + ``update`` at each
corner derived from the factory's signature: every floating hyperparameter
given as a 0-d float32 array, a 0-d bfloat16 array and a NumPy float32
scalar (``HYPER_FORMS``), each
boolean option flipped (``nesterov``, ``centered``, ``bias_correction``...),
each ``*_dtype`` option set to bfloat16 over float32 params and to float32
over bfloat16 params (``DTYPE_OPTION_VALUES``), and for a value-driven
transformation ``value=`` positive, zero and negative (``VALUE_CORNERS``):
the updates' dtypes and global norm (3 significant digits), the state's
leaves counted per dtype, finiteness; or the exception's type and message.
A labelled snapshot of optax 0.2.6 (``data_regression``, one line per corner,
recorded by ``./noxw -s update-snapshots -- -k corners``): a dtype option that
stops taking effect, or a typed hyperparameter that starts to set the state's
dtype, reads ``changed``.
"""

from __future__ import annotations

from typing import Any

import pytest

from optax_gate.kit.corners.transformations import transformation_grid, transformation_record
from optax_gate.kit.surface import generated as surface_generated

GUIDE = (
    "docs: optax 0.2.6 transformations' docstrings (optax/_src/alias.py, transform.py, contrib/*.py): each "
    "option's meaning (mu_dtype: 'the dtype of the first order accumulator'), hyperparameters as scalars or "
    "arrays (base.ScalarOrSchedule)"
)


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(
            p, id=p, marks=[pytest.mark.contract(api=p, guide=surface_generated.guide(p, GUIDE)), pytest.mark.snapshot]
        )
        for p in transformation_grid()
    ],
)
def test_transformation_corners(path: Any, data_regression: Any) -> None:
    """Updates' and state's dtypes, the update's norm, finiteness or the error at each corner (baseline snapshot)."""
    data_regression.check(transformation_record(path))
