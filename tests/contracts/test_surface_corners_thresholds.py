"""Corner grid of the thresholds (``optax_gate.kit.corners.thresholds``): each API that compares a quantity
with a threshold, called with the quantity exactly at it and one float32 ULP either side.

``test_threshold_corners[api]``: per point (``below``, ``at``, ``above``), the value and gradient, the
decision or the count, or the exception's type. A labelled snapshot of optax 0.2.6 (``data_regression``,
recorded by ``./noxw -s update-snapshots -- -k thresholds``): a ``<`` that becomes ``<=`` (a gradient of 0
on ``safe_norm``'s floor at equality, an update skipped at the bound) reads ``changed``.

``test_skip_large_updates_skips_at_the_bound`` (negative, known defect): ``skip_large_updates``' docstring
says ``should_skip`` "iff ||updates||^2 is greater than max_squared_norm"; 0.2.6 computes
``not (norm_sq < max_squared_norm)`` (optax/transforms/_accumulation.py), so an update whose squared norm
equals the bound is skipped as well.
"""

from __future__ import annotations

import jax.numpy as jnp
import optax
import pytest

from optax_gate.kit.corners.thresholds import POINTS, THRESHOLDS, outcome
from optax_gate.kit.surface import generated as surface_generated

GUIDE = (
    "docs: optax 0.2.6 docstrings of safe_norm and safe_root_mean_squares ('maximum(..., min_norm) with correct "
    "gradients'), skip_large_updates, per_example_global_norm_clip, hinge_loss, clip"
)


@pytest.mark.parametrize(
    "path",
    [pytest.param(p, id=p, marks=[pytest.mark.contract(api=p, guide=surface_generated.guide(p, GUIDE)), pytest.mark.snapshot]) for p in THRESHOLDS],
)
def test_threshold_corners(path, data_regression):
    """The outcome at, below and above the threshold (baseline snapshot)."""
    data_regression.check({f"corner.{point}": outcome(path, point) for point in POINTS})


@pytest.mark.negative
@pytest.mark.known_defect("skip-large-updates-skips-at-the-bound")
@pytest.mark.contract(api="optax.skip_large_updates", guide=GUIDE)
def test_skip_large_updates_skips_at_the_bound():
    """||[3, 4]||^2 = 25 with max_squared_norm=25: skipped (the docstring says only a greater norm is), with
    norm_squared 25; at 25 + 1 ULP it is kept."""
    bound = jnp.float32(25.0)
    skip, aux = optax.skip_large_updates({"w": jnp.array([3.0, 4.0])}, jnp.array(0), None, bound)
    assert bool(skip) is True
    assert float(aux["norm_squared"]) == 25.0
    keep, _ = optax.skip_large_updates({"w": jnp.array([3.0, 4.0])}, jnp.array(0), None, jnp.nextafter(bound, jnp.float32(jnp.inf)))
    assert bool(keep) is False
