"""Multi-step runs of a ``GradientTransformation`` and their step-by-step
comparison with a float64 reference (need JAX)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import optax

from optax_gate.kit import tolerances
from optax_gate.kit.trees import leaves64, signature


@dataclass
class Step:
    """One optimizer step: the updates returned, the new state, the new params."""

    updates: Any
    state: Any
    params: Any


def run(tx: Any, params: Any, grads_per_step: list[Any], state: Any = None, jit: bool = False) -> list[Step]:
    """``init`` (unless ``state`` is given), then ``update`` and
    ``optax.apply_updates`` once per gradient PyTree in ``grads_per_step``.

    Args:
      tx: an ``optax.GradientTransformation`` (or ``MultiSteps``).
      params: initial params PyTree.
      grads_per_step: one gradient PyTree per step, of the params' structure.
      jit: run each step under ``jax.jit`` (one compiled step function).

    Returns:
      one :class:`Step` per gradient.
    """
    import jax

    def step(p: Any, g: Any, s: Any) -> Any:
        u, s = tx.update(g, s, p)
        return u, s, optax.apply_updates(p, u)

    step = jax.jit(step) if jit else step
    state = tx.init(params) if state is None else state
    out = []
    for grads in grads_per_step:
        updates, state, params = step(params, grads, state)
        out.append(Step(updates, state, params))
    return out


def state_signatures(tx: Any, params: Any, grads_per_step: list[Any], label: str = "step") -> dict[str, Any]:
    """What a ``snapshot`` contract records: ``{"init": signature(init state),
    "<label>1": signature(state after step 1), ...}`` (``trees.signature``:
    structure, leaf paths, dtypes, shapes, integer counters)."""
    seen = {"init": signature(tx.init(params))}
    for k, step in enumerate(run(tx, params, grads_per_step), start=1):
        seen[f"{label}{k}"] = signature(step.state)
    return seen


def assert_follows(
    got: list[Any],
    want: list[list[np.ndarray]],
    *,
    dtype: Any,
    initial: Any,
    per_step: int = tolerances.ELEMENTWISE,
    what: str = "params",
) -> None:
    """Assert each step's PyTree in ``got`` matches the reference leaves of the
    same step in ``want`` within ``tolerances.accumulated(step, per_step)``
    ULPs, measured against the largest magnitude of the run (initial values
    and every reference value), since every step's rounding is relative to the
    operands carried from the steps before.

    Raises:
      AssertionError: naming the step, the leaf index and the error in ULPs.
    """
    scale = max(
        [float(np.max(np.abs(x), initial=0.0)) for x in leaves64(initial)]
        + [float(np.max(np.abs(x), initial=0.0)) for step in want for x in step]
    )
    assert len(got) == len(want), f"{len(got)} steps, reference has {len(want)}"
    for k, (tree, ref) in enumerate(zip(got, want, strict=True), start=1):
        leaves = leaves64(tree)
        assert len(leaves) == len(ref), f"step {k}: {len(leaves)} leaves, reference has {len(ref)}"
        for i, (a, e) in enumerate(zip(leaves, ref, strict=True)):
            tolerances.assert_close(
                a,
                e,
                dtype=dtype,
                ulps=tolerances.accumulated(k, per_step),
                scale=scale,
                what=f"{what} at step {k}, leaf {i}",
            )


def assert_follows_in(
    dtype_name: str,
    scheduled: bool,
    got: list[Any],
    want: list[list[np.ndarray]],
    *,
    initial: Any,
    per_step: int = tolerances.ELEMENTWISE,
    what: str = "params",
) -> None:
    """:func:`assert_follows` for one case of ``dtypes.trajectory_cases()``.

    For float64 with scheduled hyperparameters it pins the ledger entry
    ``schedule-float32-under-x64``: the run follows the reference within the
    *float32* budget (the hyperparameters' precision) and not within the
    float64 one; when a release computes schedules in float64 the second
    assertion fails and the gate reports the defect as fixed.
    """
    if not (dtype_name == "float64" and scheduled):
        assert_follows(got, want, dtype=dtype_name, initial=initial, per_step=per_step, what=what)
        return
    assert_follows(got, want, dtype="float32", initial=initial, per_step=per_step, what=what)
    try:
        assert_follows(got, want, dtype="float64", initial=initial, per_step=per_step, what=what)
    except AssertionError:
        return
    raise AssertionError(
        "the float64 run with a schedule is float64-accurate: schedule-float32-under-x64 no longer reproduces"
    )
