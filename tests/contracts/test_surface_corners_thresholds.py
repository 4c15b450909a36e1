"""Corner grid of the thresholds (``optax_gate.kit.corners.thresholds``): each API that compares a quantity
with a threshold, called with the quantity exactly at it and one float32 ULP either side.

``test_threshold_corners[api]``: per point (``below``, ``at``, ``above``), the value and gradient, the
decision or the count, or the exception's type. A labelled snapshot of optax 0.2.6 (``data_regression``,
recorded by ``./noxw -s update-snapshots -- -k thresholds``): a ``<`` that becomes ``<=`` (a gradient of 0
on ``safe_norm``'s floor at equality, an update skipped at the bound) reads ``changed``.

``test_documented_value_at_the_threshold[api-point]`` (acceptance): where a docstring gives the value
(``safe_norm``, ``safe_root_mean_squares``, ``hinge_loss``, ``clip``), the value at each point against a
float64 reference of it: a comparison turned at equality may move a gradient (a snapshot above), never
the value.

``test_skip_large_updates_skips_at_the_bound`` (negative, known defect): ``skip_large_updates``' docstring
says ``should_skip`` "iff ||updates||^2 is greater than max_squared_norm"; 0.2.6 computes
``not (norm_sq < max_squared_norm)`` (optax/transforms/_accumulation.py), so an update whose squared norm
equals the bound is skipped as well.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
import optax
import pytest

from optax_gate.kit.corners.thresholds import POINT_WORDS, POINTS, THRESHOLDS, outcome, threshold
from optax_gate.kit.surface import generated as surface_generated
from optax_gate.kit.tolerances import ELEMENTWISE, assert_close

#: Each API's guide: the optax 0.2.6 docstring that says what happens at its threshold.
GUIDES = {
    "optax.safe_norm": "docs: optax 0.2.6 optax.safe_norm's docstring ('jnp.maximum(jnp.linalg.norm(x), min_norm) "
    "with correct "
    "gradients')",
    "optax.safe_root_mean_squares": "docs: optax 0.2.6 optax.safe_root_mean_squares' "
    "docstring ('maximum(sqrt(mean(abs_sq(x))), "
    "min_norm) "
    "with correct gradients')",
    "optax.skip_large_updates": "docs: optax 0.2.6 optax.skip_large_updates' docstring "
    "('should_skip ... iff ||updates||^2 is "
    "greater "
    "than max_squared_norm')",
    "optax.per_example_global_norm_clip": "docs: optax 0.2.6 optax.per_example_global_norm_clip's "
    "docstring (each example clipped to "
    "l2_norm_clip, "
    "the count of those clipped)",
    "optax.losses.hinge_loss": "docs: optax 0.2.6 optax.losses.hinge_loss' docstring (max(0, 1 - predictor_outputs * "
    "targets))",
    "optax.clip": "docs: optax 0.2.6 optax.clip's docstring (each update clipped to [-max_delta, max_delta])",
}


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(
            p,
            id=p,
            marks=[pytest.mark.contract(api=p, guide=surface_generated.guide(p, GUIDES[p])), pytest.mark.snapshot],
        )
        for p in THRESHOLDS
    ],
)
def test_threshold_corners(path: Any, data_regression: Any) -> None:
    """The outcome at, below and above the threshold (baseline snapshot)."""
    data_regression.check({f"corner.{point}": outcome(path, point) for point in POINTS})


@pytest.mark.negative
@pytest.mark.known_defect("skip-large-updates-skips-at-the-bound")
@pytest.mark.contract(api="optax.skip_large_updates", guide=GUIDES["optax.skip_large_updates"])
def test_skip_large_updates_skips_at_the_bound() -> None:
    """||[3, 4]||^2 = 25 with max_squared_norm=25: skipped (the docstring says only a greater norm is), with
    norm_squared 25; at 25 + 1 ULP it is kept."""
    bound = jnp.float32(25.0)
    skip, aux = optax.skip_large_updates({"w": jnp.array([3.0, 4.0])}, jnp.array(0), None, bound)
    assert bool(skip) is True
    assert float(aux["norm_squared"]) == 25.0
    keep, _ = optax.skip_large_updates(
        {"w": jnp.array([3.0, 4.0])}, jnp.array(0), None, jnp.nextafter(bound, jnp.float32(jnp.inf))
    )
    assert bool(keep) is False


#: The documented value at each point (the docstrings: ``safe_norm`` "Returns jnp.maximum(jnp.linalg.norm(x),
#: min_norm)", ``safe_root_mean_squares`` "maximum(sqrt(mean(abs_sq(x))), min_norm)", ``hinge_loss``
#: max(0, 1 - s * t), ``clip`` each update clipped to [-max_delta, max_delta]), as float64 NumPy.
DOCUMENTED: dict[str, tuple[Any, Any]] = {
    "optax.safe_norm": (lambda t: optax.safe_norm(jnp.array([3.0, 4.0]), t), lambda t: max(5.0, float(t))),
    "optax.safe_root_mean_squares": (
        lambda t: optax.safe_root_mean_squares(jnp.array([2.0, 2.0]), t),
        lambda t: max(2.0, float(t)),
    ),
    "optax.losses.hinge_loss": (
        lambda t: optax.losses.hinge_loss(jnp.float32(t), jnp.float32(1.0)),
        lambda t: max(0.0, 1.0 - float(t)),
    ),
    "optax.clip": (
        lambda t: optax.clip(t).update(jnp.array([1.0, -1.0]), optax.clip(t).init(jnp.zeros(2)))[0],
        lambda t: np.clip(np.array([1.0, -1.0]), -float(t), float(t)),
    ),
}


@pytest.mark.acceptance
@pytest.mark.parametrize(
    ("path", "point"),
    [
        pytest.param(p, pt, id=f"{p}-{pt}", marks=[pytest.mark.contract(api=p, guide=GUIDES[p])])
        for p in DOCUMENTED
        for pt in POINTS
    ],
)
def test_documented_value_at_the_threshold(path: Any, point: Any) -> None:
    """The value at, below and above the threshold is the documented one (float64 reference of the
    docstring's formula), within one float32 rounding (``ELEMENTWISE``): whichever branch a comparison
    takes at equality, the value it returns is the same."""
    call, reference = DOCUMENTED[path]
    t = threshold({"optax.safe_norm": 5.0, "optax.safe_root_mean_squares": 2.0}.get(path, 1.0), point)
    assert_close(call(t), reference(t), dtype=jnp.float32, ulps=ELEMENTWISE, what=f"{path} with {POINT_WORDS[point]}")
