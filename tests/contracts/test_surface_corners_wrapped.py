"""Every transformation of the surface table inside each wrapper
(``optax_gate.kit.surface.wrapped``: ``WRAPPERS``; issue 40 item 2).

``test_wrapped_corners[api]``: one eager step of the bare transformation and of
it inside ``chain``, ``MultiSteps(every_k_schedule=1)``, ``apply_if_finite``,
``masked`` and ``multi_transform`` selecting every leaf, and
``inject_hyperparams`` of its factory, each of which its docstring says hands
the update through unchanged here: ``same`` (within
``tolerances.SURFACE_STEP`` float32 ULPs), or how it differs or what it
raises; and one step on the empty PyTree ``{}``. A labelled snapshot of optax
0.2.6 (``data_regression``, recorded by ``./noxw -s update-snapshots -- -k
wrapped``): a wrapper that stops handing a transformation's update through,
or starts raising for it, reads ``changed``.
"""

from __future__ import annotations

from typing import Any

import pytest

from optax_gate.kit.surface import generated as surface_generated
from optax_gate.kit.surface.wrapped import paths, record

GUIDE = (
    "docs: optax 0.2.6 wrappers' docstrings: chain applies its transformations in sequence; MultiSteps applies "
    "the mean of every_k_schedule gradients; apply_if_finite applies the inner update when it is finite; masked "
    "and multi_transform apply a transformation where the mask or labels select; inject_hyperparams(f)(**h) "
    "builds f(**h) with h in the state"
)


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(
            p, id=p, marks=[pytest.mark.contract(api=p, guide=surface_generated.guide(p, GUIDE)), pytest.mark.snapshot]
        )
        for p in paths()
    ],
)
def test_wrapped_corners(path: Any, data_regression: Any) -> None:
    """Each wrapper's first update against the bare one, and the empty PyTree (baseline snapshot)."""
    data_regression.check(record(path))
