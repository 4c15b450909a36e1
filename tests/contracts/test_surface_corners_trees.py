"""Corner grid of the tree utilities and norms (``optax_gate.kit.corners.trees``:
``TREE_CALLS`` x ``TREES``; issue 27).

``test_tree_corners[call]``: the call's outcome on each corner PyTree (an
empty size-0 leaf, only empty leaves, no leaves, a 0-d leaf, ranks 0-5, int32,
mixed float32/int32/bfloat16, bfloat16): the result's dtype, shape and, for a
0-d result, its value; or the exception's type. A labelled snapshot of optax
0.2.6 (``data_regression``, one line per corner, recorded by ``./noxw -s
update-snapshots -- -k corners``): a reduction that raised on an empty leaf
and returns a value now reads ``changed``, as does a result that becomes a
Python float.
"""

from __future__ import annotations

from typing import Any

import pytest

from optax_gate.kit.corners.trees import TREE_CALLS, TREES, tree_case_id, tree_outcome
from optax_gate.kit.surface import generated as surface_generated

GUIDE = (
    "docs: optax 0.2.6 tree utilities' docstrings (optax/tree_utils/_tree_math.py, _casting.py): any PyTree of arrays"
)


@pytest.mark.parametrize(
    ("path", "form", "kwargs"),
    [
        pytest.param(
            p,
            f,
            kw,
            id=tree_case_id(p, kw),
            marks=[pytest.mark.contract(api=p, guide=surface_generated.guide(p, GUIDE)), pytest.mark.snapshot],
        )
        for p, f, kw in TREE_CALLS
    ],
)
def test_tree_corners(path: Any, form: Any, kwargs: Any, data_regression: Any) -> None:
    """The outcome on each corner PyTree (baseline snapshot)."""
    data_regression.check({f"corner.{c}": tree_outcome(path, form, kwargs, c) for c in TREES})
