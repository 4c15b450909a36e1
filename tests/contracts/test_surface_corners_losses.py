"""Corner grid of the losses of the sweep (``optax_gate.kit.corners.losses``:
``LOSS_CORNERS`` x ``LOSS_OUTPUTS``; issue 27).

``test_loss_corners[loss]``: at each corner the loss gets (``loss_corners``:
a ``-inf`` and a ``+inf`` logit for logits/log-probability losses, an empty
batch, int32 inputs, broadcastable and mismatched targets, and
``hyper=<form>``: every floating hyperparameter, passed or defaulted, as a
0-d float32 or bfloat16 array or a NumPy float32 scalar), the value (an
error's type and message), the reverse-mode gradient of the summed loss and
its forward-mode derivative (``jax.jvp`` along ones): dtype,
shape, finiteness. A labelled snapshot of optax 0.2.6 (``data_regression``,
one line per corner and output, recorded by ``./noxw -s update-snapshots --
-k corners``): a NaN that appears in forward mode only, or a loss that
refuses an array hyperparameter, reads ``changed``.
"""

from __future__ import annotations

from typing import Any

import pytest

from optax_gate.kit.corners.losses import loss_corners, loss_inputs, loss_outcomes
from optax_gate.kit.surface import generated as surface_generated
from optax_gate.kit.surface.calls import CALLS, EXPECT

GUIDE = (
    "docs: optax 0.2.6 losses' docstrings (optax/losses/*.py): the arguments' meaning and shapes; JAX's jvp and grad"
)
#: The losses the sweep calls directly (as ``test_surface_loss_edges.LOSSES``).
LOSSES = [p for p, (kind, _, _) in CALLS.items() if kind == "loss" and p not in EXPECT and "make_" not in p]


#: Up to 18 eager evaluations and their compilations per loss: CTC takes over a minute on a loaded 2-core machine.
TIMEOUT_S = 600


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(
            p,
            id=p,
            marks=[
                pytest.mark.contract(api=p, guide=surface_generated.guide(p, GUIDE)),
                pytest.mark.snapshot,
                pytest.mark.timeout(TIMEOUT_S),
            ],
        )
        for p in LOSSES
    ],
)
def test_loss_corners(path: Any, data_regression: Any) -> None:
    """Value, gradient and forward-mode derivatives at each corner (baseline snapshot)."""
    out = {}
    for corner in loss_corners(path):
        args, kwargs = loss_inputs(path, corner)
        out.update({f"corner.{k}": v for k, v in loss_outcomes(path, corner, args, kwargs).items()})
    data_regression.check(out)
