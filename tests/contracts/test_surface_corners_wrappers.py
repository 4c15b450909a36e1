"""Corner grid of the wrappers around the Adam family
(``optax_gate.kit.corners.wrappers``: ``WRAPPERS`` x ``INNERS`` x
``PARAM_DTYPES``, and ``MIXED_INNERS`` x ``MIXED_DTYPES``; issues 27 and 56).

``test_wrapper_corners[wrapper]``: each inner optimizer (Adam with and without
``mu_dtype``, AdamW with a bfloat16 ``mu_dtype``, NAdam) inside the wrapper,
over float32, bfloat16, float16 and complex64 params, and Adam (with and without
a bfloat16 ``mu_dtype``) over trees that mix two dtypes (``MIXED_DTYPES``: every
pair of the floating dtypes, float32 with complex64), three jitted steps carried through
``jax.lax.scan`` (a carry whose structure or dtype changes raises TypeError):
the dtypes of the params and of the state's leaves after the scan, or the
exception's type; for complex64 params also the sum of their imaginary parts
after the scan (``/imag``, 3 significant digits). A labelled snapshot of optax 0.2.6 (``data_regression``,
one line per (inner, dtype), recorded by ``./noxw -s update-snapshots -- -k
corners``).
"""

from __future__ import annotations

from typing import Any

import pytest

from optax_gate.kit.corners.wrappers import WRAPPERS, cases, wrapper_outcome

GUIDE = (
    "docs: optax 0.2.6 wrappers' docstrings (MultiSteps, inject_hyperparams, masked, chain, apply_if_finite) and "
    "adam's mu_dtype; the GradientTransformation protocol: a state carried through jax.lax.scan"
)


@pytest.mark.parametrize(
    "wrapper",
    [pytest.param(w, id=w, marks=[pytest.mark.contract(api=w, guide=GUIDE), pytest.mark.snapshot]) for w in WRAPPERS],
)
def test_wrapper_corners(wrapper: Any, data_regression: Any) -> None:
    """Params and state dtypes after a scan, per inner optimizer and param dtype (baseline snapshot)."""
    imag: dict[str, str] = {}
    outcomes = {f"corner.{i}/{d}": wrapper_outcome(wrapper, i, d, imag) for i, d in cases()}
    data_regression.check({**outcomes, **imag})
