"""Float64 NumPy references of Optax's robustness wrappers and of the training
recipe teams run (AdamW + warmup-cosine + global-norm clipping).

Same rules as :mod:`optax_gate.kit.references.core`: each function is written from
the formula or the documented behaviour it cites, not from Optax's source, and
computes in float64 whatever the input dtype. PyTrees are given as flat lists
of leaves (``jax.tree.leaves``), so this module needs NumPy only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from optax_gate.kit.references.core import Hyper, Leaves, clip_by_global_norm
from optax_gate.kit.references.optimizers import adam_trajectory

__all__ = [
    "adamw_recipe",
    "apply_if_finite",
    "clip",
    "multi_steps_means",
    "warmup_cosine_decay",
    "zero_nans",
]


def _f64(leaves: Leaves) -> list[np.ndarray]:
    return [np.asarray(x, dtype=np.float64) for x in leaves]


def zero_nans(leaves: Leaves) -> tuple[list[np.ndarray], list[bool]]:
    """Every NaN element replaced by 0 (infinities kept), and per leaf whether
    it held a NaN (the documented ``ZeroNansState.found_nan``: "True iff a NaN
    was detected ... at the last call to update").

    Returns:
      ``(leaves, found)``: float64 arrays of the input shapes and one bool per leaf.
    """
    g = _f64(leaves)
    return [np.where(np.isnan(x), 0.0, x) for x in g], [bool(np.isnan(x).any()) for x in g]


def clip(leaves: Leaves, max_delta: float) -> list[np.ndarray]:
    """Element-wise clipping to ``[-max_delta, +max_delta]`` (the documented
    contract of ``optax.clip``); NaN stays NaN (``numpy.clip`` semantics)."""
    return [np.clip(x, -max_delta, max_delta) for x in _f64(leaves)]


def apply_if_finite(
    grads_per_step: Sequence[Leaves], max_consecutive_errors: int, inner: Callable[[list[np.ndarray]], list[np.ndarray]]
) -> list[dict[str, Any]]:
    """The documented behaviour of ``optax.apply_if_finite(inner, N)``, step by step.

    A step whose gradient holds an inf or a NaN anywhere is *not finite*. The
    counters (``ApplyIfFiniteState`` docs): ``notfinite_count`` consecutive
    non-finite steps, reset to 0 by a finite one; ``last_finite`` whether this
    step was finite; ``total_notfinite`` never reset. The step is skipped
    (updates all zero, inner state unchanged) while non-finite and
    ``notfinite_count <= N``; after more than ``N`` consecutive non-finite
    steps the wrapper "gives up and accepts" the update.

    Args:
      grads_per_step: one list of leaves per step.
      max_consecutive_errors: ``N``.
      inner: the inner transformation as a function of the gradient leaves
        (called only on accepted steps, so it may keep its own state).

    Returns:
      one dict per step: ``updates`` (leaves), ``applied`` (bool),
      ``notfinite_count``, ``last_finite``, ``total_notfinite``.
    """
    out, consecutive, total = [], 0, 0
    for grads in grads_per_step:
        g = _f64(grads)
        finite = all(np.isfinite(x).all() for x in g)
        consecutive = 0 if finite else consecutive + 1
        total += 0 if finite else 1
        applied = finite or consecutive > max_consecutive_errors
        updates = inner(g) if applied else [np.zeros_like(x) for x in g]
        out.append(
            {
                "updates": updates,
                "applied": applied,
                "notfinite_count": consecutive,
                "last_finite": finite,
                "total_notfinite": total,
            }
        )
    return out


def warmup_cosine_decay(
    init_value: float, peak_value: float, warmup_steps: int, decay_steps: int, end_value: float = 0.0
) -> Callable[[int], float]:
    """Linear warmup from ``init_value`` to ``peak_value`` over ``warmup_steps``,
    then cosine decay (Loshchilov & Hutter 2017, "SGDR", eq. 5, one cycle)
    from ``peak_value`` to ``end_value`` over the remaining
    ``decay_steps - warmup_steps`` steps (Optax's documented convention:
    ``decay_steps`` includes the warmup), held at ``end_value`` after."""

    def schedule(step: int) -> float:
        if step < warmup_steps:
            return init_value + (peak_value - init_value) * step / warmup_steps
        t = min(step - warmup_steps, decay_steps - warmup_steps)
        cosine = 0.5 * (1.0 + math.cos(math.pi * t / (decay_steps - warmup_steps)))
        return end_value + (peak_value - end_value) * cosine

    return schedule


def adamw_recipe(
    params: Leaves,
    grads_per_step: Sequence[Leaves],
    learning_rate: Hyper,
    *,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
    weight_decay: float = 0.0,
    max_norm: float | None = None,
) -> list[list[np.ndarray]]:
    """Parameters after each step of global-norm clipping then AdamW.

    Per step ``k`` (0 for the first): the gradient is clipped by its global
    norm to ``max_norm`` (Pascanu et al. 2013, Algorithm 1; skipped when None),
    the Adam direction ``d`` is taken (``t = k + 1``; the one Adam reference,
    :func:`optax_gate.kit.references.optimizers.adam_trajectory`), the
    decoupled weight decay is added and both are scaled by the learning rate:
    ``p <- p - lr_k * (d + wd * p)`` (Loshchilov & Hutter 2019, Algorithm 2,
    with the decay multiplied by the learning rate as Optax documents for
    ``adamw``). ``learning_rate`` may be a schedule of ``k``
    (e.g. :func:`warmup_cosine_decay`).

    Returns:
      one list of float64 leaves per step (step 1 first).
    """
    clipped = [clip_by_global_norm(g, max_norm) if max_norm is not None else _f64(g) for g in grads_per_step]
    params_per_step, _ = adam_trajectory(
        params, clipped, learning_rate, b1=b1, b2=b2, eps=eps, weight_decay=weight_decay
    )
    return params_per_step


def multi_steps_means(grads_per_call: Sequence[Leaves], every_k: int) -> list[list[np.ndarray]]:
    """The mean gradient of each complete cycle of ``every_k`` calls (gradient
    accumulation: the inner optimizer sees one averaged gradient per cycle,
    summary of the MultiSteps guide in 001_3de679c23eb4e8d7.txt lines 71-72)."""
    calls = [_f64(g) for g in grads_per_call]
    return [
        [np.mean(np.stack(xs), axis=0) for xs in zip(*calls[i : i + every_k], strict=True)]
        for i in range(0, len(calls) - every_k + 1, every_k)
    ]
