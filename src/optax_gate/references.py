"""Independent float64 NumPy references of the contracted Optax APIs.

Each function is written from the published formula (cited per function), not
from Optax's source, and computes in float64 whatever the input dtype. PyTrees
are given to these functions as flat lists of leaves (``jax.tree.leaves``), so
this module needs NumPy only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

Leaves = Sequence[np.ndarray]


def _f64(leaves: Leaves) -> list[np.ndarray]:
    return [np.asarray(x, dtype=np.float64) for x in leaves]


def per_example_global_norm(leaves: Leaves) -> np.ndarray:
    """Global L2 norm of each example.

    Args:
      leaves: arrays of shape ``(B, ...)``, the batch on axis 0.

    Returns:
      float64 array of shape ``(B,)``: ``sqrt(sum over leaves and non-batch axes
      of g**2)`` (Abadi et al. 2016, "Deep Learning with Differential Privacy",
      Algorithm 1, per-example gradient norm).
    """
    g = _f64(leaves)
    batch = g[0].shape[0]
    sq = np.zeros(batch)
    for x in g:
        sq += np.sum(x.reshape(batch, -1) ** 2, axis=1)
    return np.sqrt(sq)


def per_example_global_norm_clip(leaves: Leaves, l2_norm_clip: float) -> tuple[list[np.ndarray], int]:
    """Sum of per-example gradients clipped to a global L2 norm, and the count.

    Formula (Abadi et al. 2016, Algorithm 1, "clip gradient"; guide
    000_1767c3f5f037268a.txt lines 12 and 39): each example ``b`` is scaled by
    ``min(1, C / ||g_b||)`` and the scaled examples are **summed** over the batch
    axis; the count is the number of **examples** with ``||g_b|| > C``.

    Args:
      leaves: arrays of shape ``(B, ...)`` sharing the batch size ``B``.
      l2_norm_clip: the threshold ``C >= 0``.

    Returns:
      ``(sums, count)``: float64 arrays of shape ``leaf.shape[1:]`` and an int.
    """
    g = _f64(leaves)
    norms = per_example_global_norm(g)
    clipped = norms > l2_norm_clip
    factor = np.where(clipped, l2_norm_clip / np.where(clipped, norms, 1.0), 1.0)
    sums = [np.tensordot(factor, x, axes=1) for x in g]
    return sums, int(np.sum(clipped))


def sgd_updates(grads: Leaves, learning_rate: float) -> list[np.ndarray]:
    """Plain SGD update ``-lr * g`` per leaf (guide 001_3de679c23eb4e8d7.txt line 26)."""
    return [-learning_rate * x for x in _f64(grads)]


def sgd_trajectory(params: Leaves, grads_per_step: Sequence[Leaves], learning_rate: float,
                   momentum: float | None = None, nesterov: bool = False) -> list[list[np.ndarray]]:
    """Parameters after each SGD step, heavy-ball or Nesterov momentum optional.

    Formula (Sutskever et al. 2013, "On the importance of initialization and
    momentum in deep learning", eqs. 1-4, in the trace form): with trace
    ``t_0 = 0``, ``t_k = g_k + mu * t_{k-1}``; the update is ``-lr * t_k``, or
    ``-lr * (g_k + mu * t_k)`` with Nesterov; ``p_k = p_{k-1} + update``.
    The gradients are given per step (they do not depend on the parameters).

    Returns:
      one list of float64 leaves per step (step 1 first).
    """
    p = _f64(params)
    trace = [np.zeros_like(x) for x in p]
    out = []
    for grads in grads_per_step:
        g = _f64(grads)
        if momentum is None:
            step = g
        else:
            trace = [gi + momentum * ti for gi, ti in zip(g, trace)]
            step = [gi + momentum * ti for gi, ti in zip(g, trace)] if nesterov else trace
        p = [pi - learning_rate * si for pi, si in zip(p, step)]
        out.append(p)
    return out


def incremental_update(new: Leaves, old: Leaves, step_size: float) -> list[np.ndarray]:
    """Polyak averaging ``step_size * new + (1 - step_size) * old`` per leaf.

    Source: guide 004_ac3a64a51466adca.txt lines 3 and 51 (Polyak & Juditsky 1992).
    """
    return [step_size * n + (1.0 - step_size) * o for n, o in zip(_f64(new), _f64(old))]


def masked_decayed_updates(updates: Leaves, params: Leaves, weight_decay: float,
                           mask: Sequence[bool]) -> list[np.ndarray]:
    """``g + wd * p`` where the mask is True, ``g`` unchanged where it is False.

    Source: the referenced guide "weight decay without bias" (summary in
    001_3de679c23eb4e8d7.txt lines 67-68); decoupled weight decay term of
    Loshchilov & Hutter 2019, "Decoupled Weight Decay Regularization".
    """
    return [g + weight_decay * p if m else g for g, p, m in zip(_f64(updates), _f64(params), mask)]


def multi_steps_sgd_updates(grads_per_call: Sequence[Leaves], every_k: int,
                            learning_rate: float) -> list[list[np.ndarray]]:
    """Updates emitted by gradient accumulation over ``every_k`` micro-batches
    wrapped around plain SGD: zeros on the first ``every_k - 1`` calls of each
    cycle, ``-lr * mean(grads of the cycle)`` on the last.

    Source: the referenced guide on ``optax.MultiSteps`` (summary in
    001_3de679c23eb4e8d7.txt lines 71-72: "averages two micro-batch gradients and
    updates SGD only on every second call").
    """
    out, cycle = [], []
    for grads in grads_per_call:
        g = _f64(grads)
        cycle.append(g)
        if len(cycle) == every_k:
            mean = [np.mean(np.stack(xs), axis=0) for xs in zip(*cycle)]
            out.append([-learning_rate * m for m in mean])
            cycle = []
        else:
            out.append([np.zeros_like(x) for x in g])
    return out
