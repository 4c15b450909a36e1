"""Hyperparameter range grid of the transformations of the surface table
(``optax_gate.kit.corners.ranges``; issue 56, item 3).

``test_hyperparameter_range[api-name]`` (each numeric hyperparameter of each
transformation of the corner grid, ``range_grid``): the hyperparameter set, one
at a time, to the values its range allows and to its extremes
(``range_values``): 0, 0.5 and 1 for a rate or a decay (``b1``, ``decay``,
``momentum``...); 0, 1e-6, 1e3 and its negative for another float; 0, 1, 2 and
twice the default for an integer (``decay_offset``, ``patience``,
``ns_steps``). At each, two eager updates (one for a slow entry): the last
update's dtypes, global norm and first entry (3 significant digits), the
state's leaves per dtype, finiteness; or the exception's type and message
(``transformation_outcome``). A labelled snapshot of optax 0.2.6
(``data_regression``, one line per value, recorded by ``./noxw -s
update-snapshots -- -k ranges``): ``adafactor(decay_offset=1)`` giving NaN
from its first step, or a rate edge read otherwise, reads ``changed``.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from optax_gate.kit.corners.ranges import range_grid, range_record
from optax_gate.kit.surface import generated as surface_generated

GUIDE = (
    "docs: optax 0.2.6 transformations' docstrings (optax/_src/alias.py, transform.py, factorized.py, "
    "contrib/*.py): each hyperparameter's meaning and range (decay_offset: 'starting step' of the decay; "
    "reduce_on_plateau: 'factor must be in the range (0, 1)')"
)


@pytest.mark.parametrize(
    ("path", "name"),
    [
        pytest.param(
            p,
            n,
            id=f"{p}-{n}",
            marks=[pytest.mark.contract(api=p, guide=surface_generated.guide(p, GUIDE)), pytest.mark.snapshot],
        )
        for p, n in range_grid()
    ],
)
def test_hyperparameter_range(
    path: Any, name: Any, data_regression: Any, original_datadir: Any, request: pytest.FixtureRequest
) -> None:
    """The outcome of a few updates at each value of one hyperparameter's range (baseline snapshot). A
    hyperparameter the baseline's factory did not have (``scale_by_lion``'s ``smooth_beta`` from 0.2.8 on) has no
    snapshot: skipped as new (never recorded on the fly into the snapshot folder)."""
    basename = re.sub(r"\W", "_", request.node.name)
    regen = request.config.getoption("force_regen") or request.config.getoption("regen_all")
    if not regen and not any(original_datadir.glob(basename + ".*")):
        pytest.skip(
            f"new: {path} takes {name} here, which the baseline's {path} did not (no snapshot recorded at the baseline)"
        )
    data_regression.check(range_record(path, name))
