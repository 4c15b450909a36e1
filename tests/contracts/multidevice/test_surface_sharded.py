"""Every transformation of the surface table with params sharded over an
explicit 2 x 4 mesh of eight simulated CPU devices, its state created eagerly
and under ``jax.jit`` (``optax_gate.kit.surface.sharded``; issue 40 item 2).

``test_sharded_corners[api]``: per mode, the updates' shardings leaf by leaf,
the state's leaves counted per sharding, and whether the updates are those of
the same step on one device (within ``tolerances.SURFACE_STEP`` float32
ULPs), or the exception's type and message (explicit sharding raises
``ShardingTypeError`` where a sharding is ambiguous). A labelled snapshot of
optax 0.2.6 (``data_regression``, recorded by ``./noxw -s update-snapshots --
-k sharded``): a state that starts to live on one device, an update that
loses its sharding or its value, or a transformation that starts or stops
raising under explicit sharding reads ``changed``.
"""

from __future__ import annotations

from typing import Any

import pytest

from optax_gate.kit.surface import generated as surface_generated
from optax_gate.kit.surface.sharded import paths, record

GUIDE = (
    "docs: JAX explicit sharding (jax.make_mesh with AxisType.Explicit, jax.set_mesh: shardings are part of "
    "the array's type) and optax 0.2.6 GradientTransformation protocol (optax/_src/base.py: updates shaped "
    "as the params)"
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
def test_sharded_corners(path: Any, data_regression: Any) -> None:
    """Shardings of updates and state, and values as on one device, eager and jitted (baseline snapshot)."""
    data_regression.check(record(path))
