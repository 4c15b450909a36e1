"""Independent float64 NumPy references of the contracted adaptive optimizers.

Each function is written from the published algorithm (cited per function),
with Optax's documented choices where the paper leaves room (where ``eps`` sits,
how weight decay is scaled), and computes in float64 whatever the input dtype.
PyTrees are given as flat lists of leaves (``jax.tree.leaves``), as in
``optax_gate.kit.references.core``; hyperparameters may be constants or schedules of
the step (0 for the first update, ``references.at``).

Every trajectory function returns ``(params, updates)``: two lists with one
list of float64 leaves per step (step 1 first).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from optax_gate.kit.references.core import Hyper, Leaves, at

Trajectory = tuple[list[list[np.ndarray]], list[list[np.ndarray]]]


def _f64(leaves: Leaves) -> list[np.ndarray]:
    return [np.asarray(x, dtype=np.float64) for x in leaves]


def _apply(p: list[np.ndarray], u: list[np.ndarray]) -> list[np.ndarray]:
    return [pi + ui for pi, ui in zip(p, u, strict=True)]


def adam_trajectory(
    params: Leaves,
    grads_per_step: Sequence[Leaves],
    learning_rate: Hyper,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
    eps_root: float = 0.0,
    nesterov: bool = False,
    weight_decay: float = 0.0,
    decay_mask: Sequence[bool] | None = None,
) -> Trajectory:
    """Adam, NAdam and AdamW steps.

    Formula (Kingma & Ba 2015, "Adam: A Method for Stochastic Optimization",
    Algorithm 1): ``m_t = b1 m + (1-b1) g``, ``v_t = b2 v + (1-b2) g**2``,
    ``m^ = m_t / (1 - b1**t)``, ``v^ = v_t / (1 - b2**t)``; the step is
    ``m^ / (sqrt(v^ + eps_root) + eps)`` (Optax's documented placement: ``eps``
    outside the root as in the paper, ``eps_root`` inside). With ``nesterov``,
    ``m^ = b1 m_t / (1 - b1**(t+1)) + (1-b1) g / (1 - b1**t)`` (Dozat 2016,
    "Incorporating Nesterov Momentum into Adam", Algorithm 2, without the
    extra ``b2`` factor, as ``optax.adam`` documents). With ``weight_decay``
    (Loshchilov & Hutter 2019, "Decoupled Weight Decay Regularization",
    Algorithm 2, *as Optax scales it*: the decay is multiplied by the
    learning rate) the update is ``-lr_t (step + wd * p)`` on the leaves
    ``decay_mask`` selects (all by default).
    """
    p = _f64(params)
    mask = [True] * len(p) if decay_mask is None else list(decay_mask)
    m = [np.zeros_like(x) for x in p]
    v = [np.zeros_like(x) for x in p]
    ps, us = [], []
    for k, grads in enumerate(grads_per_step):
        t = k + 1
        g = _f64(grads)
        m = [b1 * mi + (1 - b1) * gi for mi, gi in zip(m, g, strict=True)]
        v = [b2 * vi + (1 - b2) * gi**2 for vi, gi in zip(v, g, strict=True)]
        if nesterov:
            m_hat = [b1 * mi / (1 - b1 ** (t + 1)) + (1 - b1) * gi / (1 - b1**t) for mi, gi in zip(m, g, strict=True)]
        else:
            m_hat = [mi / (1 - b1**t) for mi in m]
        v_hat = [vi / (1 - b2**t) for vi in v]
        step = [mh / (np.sqrt(vh + eps_root) + eps) for mh, vh in zip(m_hat, v_hat, strict=True)]
        step = [s + weight_decay * pi if mk else s for s, pi, mk in zip(step, p, mask, strict=True)]
        u = [-at(learning_rate, k) * s for s in step]
        p = _apply(p, u)
        ps.append(p)
        us.append(u)
    return ps, us


def lion_trajectory(
    params: Leaves,
    grads_per_step: Sequence[Leaves],
    learning_rate: Hyper,
    b1: float = 0.9,
    b2: float = 0.99,
    weight_decay: float = 1e-3,
    decay_mask: Sequence[bool] | None = None,
) -> Trajectory:
    """Lion (Chen et al. 2023, "Symbolic Discovery of Optimization
    Algorithms", Algorithm 2): ``c = b1 m + (1-b1) g``, update
    ``-lr (sign(c) + wd * p)`` (Optax: decay multiplied by the learning rate,
    on the leaves ``decay_mask`` selects), then ``m = b2 m + (1-b2) g``."""
    p = _f64(params)
    mask = [True] * len(p) if decay_mask is None else list(decay_mask)
    m = [np.zeros_like(x) for x in p]
    ps, us = [], []
    for k, grads in enumerate(grads_per_step):
        g = _f64(grads)
        c = [b1 * mi + (1 - b1) * gi for mi, gi in zip(m, g, strict=True)]
        step = [np.sign(ci) + (weight_decay * pi if mk else 0.0) for ci, pi, mk in zip(c, p, mask, strict=True)]
        u = [-at(learning_rate, k) * s for s in step]
        m = [b2 * mi + (1 - b2) * gi for mi, gi in zip(m, g, strict=True)]
        p = _apply(p, u)
        ps.append(p)
        us.append(u)
    return ps, us


def rmsprop_trajectory(
    params: Leaves,
    grads_per_step: Sequence[Leaves],
    learning_rate: Hyper,
    decay: float = 0.9,
    eps: float = 1e-8,
    initial_scale: float = 0.0,
    eps_in_sqrt: bool = True,
    centered: bool = False,
    momentum: float | None = None,
    nesterov: bool = False,
) -> Trajectory:
    """RMSProp (Hinton 2012, "Neural Networks for Machine Learning", lecture
    6e) and its centered form with momentum (Graves 2013, "Generating
    Sequences With Recurrent Neural Networks", eqs. 38-41).

    ``n = decay n + (1-decay) g**2`` from ``n_0 = initial_scale``; centered,
    also ``a = decay a + (1-decay) g`` from ``a_0 = 0`` and the denominator
    uses ``n - a**2``. The scaled step is ``g / sqrt(d + eps)`` (``eps`` in the
    root, Optax's default) or ``g / (sqrt(d) + eps)``; then ``s = -lr_t * step``.
    With ``momentum`` (Graves eq. 40, the learning rate inside the trace):
    ``T = s + mu T`` from ``T_0 = 0`` and the update is ``T`` (or
    ``s + mu T`` with Nesterov).
    """
    p = _f64(params)
    n = [np.full_like(x, initial_scale) for x in p]
    a = [np.zeros_like(x) for x in p]
    trace = [np.zeros_like(x) for x in p]
    ps, us = [], []
    for k, grads in enumerate(grads_per_step):
        g = _f64(grads)
        n = [decay * ni + (1 - decay) * gi**2 for ni, gi in zip(n, g, strict=True)]
        a = [decay * ai + (1 - decay) * gi for ai, gi in zip(a, g, strict=True)]
        d = [ni - ai**2 for ni, ai in zip(n, a, strict=True)] if centered else n
        step = [
            gi / np.sqrt(di + eps) if eps_in_sqrt else gi / (np.sqrt(di) + eps) for gi, di in zip(g, d, strict=True)
        ]
        u = [-at(learning_rate, k) * s for s in step]
        if momentum is not None:
            trace = [ui + momentum * ti for ui, ti in zip(u, trace, strict=True)]
            u = [ui + momentum * ti for ui, ti in zip(u, trace, strict=True)] if nesterov else trace
        p = _apply(p, u)
        ps.append(p)
        us.append(u)
    return ps, us


def adafactor_trajectory(
    params: Leaves,
    grads_per_step: Sequence[Leaves],
    learning_rate: Hyper,
    factored: Sequence[bool],
    decay_rate: float = 0.8,
    eps: float = 1e-30,
    clipping_threshold: float = 1.0,
    min_scale: float = 1e-3,
) -> Trajectory:
    """Adafactor (Shazeer & Stern 2018, "Adafactor: Adaptive Learning Rates with
    Sublinear Memory Cost", Algorithm 4 for a factored matrix, Algorithm 5
    for an unfactored leaf) with Optax's documented defaults: ``rho_t`` is the
    given learning rate, scaled by ``max(min_scale, RMS(p))``
    (``multiply_by_parameter_scale``), no momentum, no weight decay.

    ``b2_t = 1 - t**-decay_rate``. A factored 2-D leaf keeps row and column
    statistics ``R = b2_t R + (1-b2_t) rowsum(g**2 + eps)``,
    ``C = b2_t C + (1-b2_t) colsum(g**2 + eps)`` and uses
    ``V = outer(R, C) / sum(R)``; an unfactored leaf keeps
    ``V = b2_t V + (1-b2_t)(g**2 + eps)``. ``U = g / sqrt(V)`` is clipped to
    ``U / max(1, RMS(U) / d)``; the update is
    ``-lr_t * max(min_scale, RMS(p)) * U``. ``factored[i]`` says whether
    leaf ``i`` (2-D when factored) takes Algorithm 4.
    """
    p = _f64(params)
    stats = [
        (np.zeros(x.shape[0]), np.zeros(x.shape[1])) if f else np.zeros_like(x)
        for x, f in zip(p, factored, strict=True)
    ]
    ps, us = [], []
    for k, grads in enumerate(grads_per_step):
        b2 = 1.0 - (k + 1) ** -decay_rate
        g = _f64(grads)
        u, new_stats = [], []
        for gi, pi, st, f in zip(g, p, stats, factored, strict=True):
            sq = gi**2 + eps
            if f:
                r = b2 * st[0] + (1 - b2) * sq.sum(axis=1)
                c = b2 * st[1] + (1 - b2) * sq.sum(axis=0)
                v = np.outer(r, c) / r.sum()
                new_stats.append((r, c))
            else:
                v = b2 * st + (1 - b2) * sq
                new_stats.append(v)
            ui = gi / np.sqrt(v)
            ui = ui / max(1.0, float(np.sqrt(np.mean(ui**2))) / clipping_threshold)
            scale = max(min_scale, float(np.sqrt(np.mean(pi**2))))
            u.append(-at(learning_rate, k) * scale * ui)
        stats = new_stats
        p = _apply(p, u)
        ps.append(p)
        us.append(u)
    return ps, us
