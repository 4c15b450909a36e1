"""Independent float64 NumPy references of the contracted Optax APIs.

Each function is written from the published formula (cited per function), not
from Optax's source, and computes in float64 whatever the input dtype. PyTrees
are given to these functions as flat lists of leaves (``jax.tree.leaves``), so
this module needs NumPy only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

Leaves = Sequence[np.ndarray]
Hyper = float | Callable[[int], float]  # a constant, or a schedule of the step count


def at(value: Hyper, step: int) -> float:
    """A hyperparameter's value at step ``step`` (0 for the first update)."""
    return float(value(step)) if callable(value) else float(value)


def linear_schedule(init: float, end: float, transition_steps: int) -> Callable[[int], float]:
    """``init + (end - init) * min(step, T) / T``: the linear (power-1 polynomial)
    decay of a hyperparameter, written from its definition."""
    return lambda step: init + (end - init) * min(step, transition_steps) / transition_steps


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


def clip_by_global_norm(leaves: Leaves, max_norm: float) -> list[np.ndarray]:
    """All leaves scaled by ``min(1, max_norm / ||g||)`` with ``||g||`` the
    global L2 norm over every leaf (Pascanu et al. 2013, "On the difficulty of
    training recurrent neural networks", Algorithm 1)."""
    g = _f64(leaves)
    norm = float(np.sqrt(sum(np.sum(x**2) for x in g)))
    factor = max_norm / norm if norm > max_norm else 1.0
    return [factor * x for x in g]


def sgd_updates(grads: Leaves, learning_rate: float) -> list[np.ndarray]:
    """Plain SGD update ``-lr * g`` per leaf (guide 001_3de679c23eb4e8d7.txt line 26)."""
    return [-learning_rate * x for x in _f64(grads)]


def sgd_trajectory(
    params: Leaves,
    grads_per_step: Sequence[Leaves],
    learning_rate: Hyper,
    momentum: float | None = None,
    nesterov: bool = False,
    weight_decay: Hyper = 0.0,
    decay_mask: Sequence[bool] | None = None,
) -> list[list[np.ndarray]]:
    """Parameters after each SGD step, heavy-ball or Nesterov momentum optional.

    Formula (Sutskever et al. 2013, "On the importance of initialization and
    momentum in deep learning", eqs. 1-4, in the trace form): with trace
    ``t_0 = 0``, ``t_k = g_k + mu * t_{k-1}``; the update is ``-lr_k * t_k``,
    or ``-lr_k * (g_k + mu * t_k)`` with Nesterov; ``p_k = p_{k-1} + update``.
    With ``weight_decay``, ``g_k`` is first replaced by ``g_k + wd_k * p_{k-1}``
    on the leaves ``decay_mask`` selects (all by default; Loshchilov & Hutter
    2019). ``learning_rate`` and ``weight_decay`` may be schedules of the step
    (0 for the first update). The gradients are given per step.

    Returns:
      one list of float64 leaves per step (step 1 first).
    """
    p = _f64(params)
    mask = [True] * len(p) if decay_mask is None else list(decay_mask)
    trace = [np.zeros_like(x) for x in p]
    out = []
    for k, grads in enumerate(grads_per_step):
        lr, wd = at(learning_rate, k), at(weight_decay, k)
        g = [gi + wd * pi if m else gi for gi, pi, m in zip(_f64(grads), p, mask, strict=True)]
        if momentum is None:
            step = g
        else:
            trace = [gi + momentum * ti for gi, ti in zip(g, trace, strict=True)]
            step = [gi + momentum * ti for gi, ti in zip(g, trace, strict=True)] if nesterov else trace
        p = [pi - lr * si for pi, si in zip(p, step, strict=True)]
        out.append(p)
    return out


def polyak_trajectory(online_per_step: Sequence[Leaves], initial: Leaves, step_size: float) -> list[list[np.ndarray]]:
    """The averaged copy after each step: ``a_k = s * p_k + (1 - s) * a_{k-1}``,
    ``a_0 = initial`` (guide 004 lines 3, 11 and 55: updated after each accepted
    optimizer step)."""
    avg = _f64(initial)
    out = []
    for online in online_per_step:
        avg = incremental_update(online, avg, step_size)
        out.append(avg)
    return out


def incremental_update(new: Leaves, old: Leaves, step_size: float) -> list[np.ndarray]:
    """Polyak averaging ``step_size * new + (1 - step_size) * old`` per leaf.

    Source: guide 004_ac3a64a51466adca.txt lines 3 and 51 (Polyak & Juditsky 1992).
    """
    return [step_size * n + (1.0 - step_size) * o for n, o in zip(_f64(new), _f64(old), strict=True)]


def masked_decayed_updates(
    updates: Leaves, params: Leaves, weight_decay: float, mask: Sequence[bool]
) -> list[np.ndarray]:
    """``g + wd * p`` where the mask is True, ``g`` unchanged where it is False.

    Source: the referenced guide "weight decay without bias" (summary in
    001_3de679c23eb4e8d7.txt lines 67-68); decoupled weight decay term of
    Loshchilov & Hutter 2019, "Decoupled Weight Decay Regularization".
    """
    return [g + weight_decay * p if m else g for g, p, m in zip(_f64(updates), _f64(params), mask, strict=True)]


def multi_steps_sgd_updates(
    grads_per_call: Sequence[Leaves],
    every_k: int | Callable[[int], int],
    learning_rate: Hyper,
    momentum: float | None = None,
) -> list[list[np.ndarray]]:
    """Updates emitted by gradient accumulation over ``every_k`` micro-batches
    wrapped around SGD: zeros on the first ``every_k - 1`` calls of each
    cycle, the inner SGD update of ``mean(grads of the cycle)`` on the last.
    ``every_k`` may be a schedule of the number of emitted updates so far, and
    the inner SGD (``learning_rate`` schedule, ``momentum``) advances only on
    emission.

    Source: the referenced guide on ``optax.MultiSteps`` (summary in
    001_3de679c23eb4e8d7.txt lines 71-72: "averages two micro-batch gradients and
    updates SGD only on every second call").
    """
    out, cycle, emitted, trace = [], [], 0, None
    for grads in grads_per_call:
        g = _f64(grads)
        cycle.append(g)
        if len(cycle) == (every_k(emitted) if callable(every_k) else every_k):
            mean = [np.mean(np.stack(xs), axis=0) for xs in zip(*cycle, strict=True)]
            if momentum is not None:
                trace = mean if trace is None else [m + momentum * t for m, t in zip(mean, trace, strict=True)]
                mean = trace
            out.append([-at(learning_rate, emitted) * m for m in mean])
            cycle, emitted = [], emitted + 1
        else:
            out.append([np.zeros_like(x) for x in g])
    return out


def adamw_trajectory(
    params: Leaves,
    grads_per_step: Sequence[Leaves],
    learning_rate: float,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
    weight_decay: float = 1e-4,
) -> list[list[np.ndarray]]:
    """Parameters after each AdamW step.

    Formula (Kingma & Ba 2015, Algorithm 1, with the decoupled weight decay of
    Loshchilov & Hutter 2019, Algorithm 2, in optax's parameterisation, read in
    optax 0.2.6 ``optax/_src/alias.py`` ``adamw``): ``m_t = b1 m + (1 - b1) g``,
    ``v_t = b2 v + (1 - b2) g**2``, ``m^ = m_t / (1 - b1**t)``,
    ``v^ = v_t / (1 - b2**t)``, ``p_t = p - lr * (m^ / (sqrt(v^) + eps) + wd * p)``.

    Returns:
      one list of float64 leaves per step (step 1 first).
    """
    p = _f64(params)
    m = [np.zeros_like(x) for x in p]
    v = [np.zeros_like(x) for x in p]
    out = []
    for t, grads in enumerate(grads_per_step, start=1):
        g = _f64(grads)
        m = [b1 * mi + (1 - b1) * gi for mi, gi in zip(m, g, strict=True)]
        v = [b2 * vi + (1 - b2) * gi**2 for vi, gi in zip(v, g, strict=True)]
        p = [
            pi - learning_rate * ((mi / (1 - b1**t)) / (np.sqrt(vi / (1 - b2**t)) + eps) + weight_decay * pi)
            for pi, mi, vi in zip(p, m, v, strict=True)
        ]
        out.append(p)
    return out


def linear_mse_grads(w: np.ndarray, b: np.ndarray, x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
    """Gradients of ``mean((x @ w + b - y)**2)`` (the mean over every element of
    the ``(N, out)`` residual) with respect to ``w`` ``(in, out)`` and ``b``
    ``(out,)``: with ``r = x @ w + b - y``, ``dL/dw = 2 x^T r / (N out)`` and
    ``dL/db = 2 sum_n r / (N out)`` (calculus of the squared error)."""
    x, y, w, b = (np.asarray(a, np.float64) for a in (x, y, w, b))
    r = x @ w + b - y
    return {"b": 2.0 * r.sum(axis=0) / r.size, "w": 2.0 * x.T @ r / r.size}
