"""Generated dtype variants of the transformation protocol's ``init_update``
(issue 18 item 2): every contracted transformation of
``tests/contracts/test_surface_transformations.py`` initialised and updated
once, eagerly, on the representative PyTree in bfloat16, float16, float64
(under ``jax.enable_x64``) and complex64 (``surface_probe.VARIANT_DTYPES``,
``optax_gate.kit.surface.probe.variant_tree``).

``test_init_update_dtype[path-dtype]``: the outcome (``ok``: the update has
the params' structure, shapes and dtypes and is finite; else the first leaf
whose shape or dtype differs, the non-finite leaves, or the exception's type),
as a labelled snapshot of optax 0.2.6 (``data_regression``; recorded by
``./noxw -s update-snapshots``): an API whose baseline raises or returns
non-finite values for a dtype is pinned as it behaves, not skipped.
"""

from __future__ import annotations

from typing import Any

import pytest

from optax_gate.kit.surface import generated as surface_generated
from optax_gate.kit.surface import probe as surface_probe
from optax_gate.kit.surface.table import TRANSFORMATIONS

GUIDE = "docs: optax 0.2.6 GradientTransformation protocol (optax/_src/base.py): updates shaped and typed as the params"
CONTRACTED = [e for e in TRANSFORMATIONS.values() if not e.left_out]
#: An eager line search takes minutes on a loaded 2-core machine.
SLOW_TIMEOUT_S = 600


def _case(entry: Any, dtype: Any) -> Any:
    marks = [
        pytest.mark.contract(api=entry.path, guide=surface_generated.guide(entry.path, GUIDE)),
        pytest.mark.snapshot,
    ]
    if entry.slow:
        marks.append(pytest.mark.timeout(SLOW_TIMEOUT_S))
    return pytest.param(entry.path, dtype, marks=marks, id=f"{entry.path}-{dtype}")


@pytest.mark.parametrize(("path", "dtype"), [_case(e, d) for e in CONTRACTED for d in surface_probe.VARIANT_DTYPES])
def test_init_update_dtype(path: Any, dtype: Any, data_regression: Any) -> None:
    """One init/update on a PyTree of ``dtype``: the outcome (baseline snapshot)."""
    # no ": " in the value: a drift then reads as one "key: old -> new" (optax_gate.gate.run.outcomes.snapshot_diff)
    outcome = surface_probe.init_update_variant(path, dtype).replace(": ", " ")
    data_regression.check({f"init_update_{dtype}": outcome})
