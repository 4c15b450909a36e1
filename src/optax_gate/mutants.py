"""Mutants of the contracted Optax APIs: proof that every contract can fail.

A contract that cannot fail is a defect. Each mutant below replaces one
contracted API with a deliberately broken variant (a sign flipped, a mask
ignored, a mean for a sum, a dtype upcast, a check dropped or added, a value
perturbed only under ``jax.jit``...). ``python -m optax_gate.mutants`` runs the
API's contract module once per mutant and then requires that

- every mutant is caught by at least one contract (else the mutant names a
  behaviour nobody pins), and
- every contract fails under at least one mutant (else the contract cannot
  fail and is a check that asserts nothing).

Used as a pytest plugin (``-p optax_gate.mutants --mutant NAME``), it patches
``optax`` before the tests run. Written here rather than with a mutation
testing tool (mutmut, cosmic-ray): those mutate the project's own source at
random and report surviving mutants; here the code under test is a third-party
package, the mutations must be behaviours the guides name, and the question is
the converse one (does every *test* fail under some mutant).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

MODULES = {
    "clip": "tests/contracts/test_per_example_global_norm_clip.py",
    "sgd": "tests/contracts/test_sgd.py",
    "polyak": "tests/contracts/test_incremental_update.py",
    "decay": "tests/contracts/test_add_decayed_weights_mask.py",
    "multisteps": "tests/contracts/test_multi_steps.py",
    "global-norm": "tests/contracts/test_clip_by_global_norm.py",
    "masked": "tests/contracts/test_masked.py",
    "chain": "tests/contracts/test_chain.py",
    "inject": "tests/contracts/test_inject_hyperparams.py",
    "nnx": "tests/contracts/test_nnx.py",
    "resume": "tests/contracts/test_resume.py",
}
#: Resume mutants act on the reader (the candidate); the checkpoints they
#: resume from are written by an unmutated process first, as in the gate,
#: except for these, which break the writer itself.
WRITER_SIDE = {"resume-writer-forgets-versions"}

# optax module -> {attribute: replacement}; a Flax mutant patches flax.nnx
# itself and returns {}.
Patch = Callable[[Any], dict[str, Any]]
MUTANTS: dict[str, tuple[str, str, Patch]] = {}


def mutant(name: str, area: str, what: str):
    """Register ``fn(optax) -> {attribute: replacement}`` as a mutant."""
    def register(fn: Patch) -> Patch:
        MUTANTS[name] = (area, what, fn)
        return fn
    return register


def _traced(tree: Any) -> bool:
    import jax

    return any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(tree))


def _map(fn, tree):
    import jax

    return jax.tree.map(fn, tree)


def _f32(tree):
    import jax.numpy as jnp

    return _map(lambda x: jnp.asarray(x, jnp.float32), tree)


def _lenient(fn):
    """Pair leaves by flatten order and resize the second to the first's shape,
    so structure and shape mistakes no longer raise."""
    import jax
    import jax.numpy as jnp

    @functools.wraps(fn)
    def wrapped(a, b, *args, **kwargs):
        la, treedef = jax.tree.flatten(a)
        lb = [jnp.resize(jnp.asarray(y), jnp.shape(x)) for x, y in zip(la, jax.tree.leaves(b))]
        return fn(a, jax.tree.unflatten(treedef, lb), *args, **kwargs)
    return wrapped


def _wrap_tx(tx, update=None, init=None):
    import optax

    return optax.GradientTransformation(init or tx.init, update or tx.update)


def _upcast(updates, grads):
    return _f32(updates)


def _perturbed_under_jit(updates, grads):
    return _map(lambda x: x * 1.001, updates) if _traced(grads) else updates


def _post_process(optax, attr: str, post) -> dict[str, Any]:
    """Replace the transformation factory ``optax.<attr>`` by one whose updates
    pass through ``post(updates, grads)``."""
    orig = getattr(optax, attr)

    def factory(*args, **kwargs):
        tx = orig(*args, **kwargs)

        def update(g, s, params=None):
            u, s = tx.update(g, s, params)
            return post(u, g), s
        return _wrap_tx(tx, update=update)
    return {attr: factory}


# --- optax.per_example_global_norm_clip -------------------------------------
@mutant("clip-mean", "clip", "returns the mean over the batch instead of the sum")
def _(optax):
    orig = optax.per_example_global_norm_clip
    def f(grads, l2_norm_clip):
        import jax
        s, c = orig(grads, l2_norm_clip)
        return _map(lambda x: x / jax.tree.leaves(grads)[0].shape[0], s), c
    return {"per_example_global_norm_clip": f}


@mutant("clip-counts-elements", "clip", "counts clipped elements instead of examples")
def _(optax):
    orig = optax.per_example_global_norm_clip
    def f(grads, l2_norm_clip):
        import jax
        s, c = orig(grads, l2_norm_clip)
        per_example = sum(x[0].size for x in jax.tree.leaves(grads))
        return s, c * per_example
    return {"per_example_global_norm_clip": f}


@mutant("clip-no-clipping", "clip", "never clips (threshold ignored)")
def _(optax):
    orig = optax.per_example_global_norm_clip
    return {"per_example_global_norm_clip": lambda grads, l2_norm_clip: orig(grads, float("inf"))}


@mutant("clip-strict-inputs", "clip", "rejects empty input and leaves without a feature axis with ValueError")
def _(optax):
    orig = optax.per_example_global_norm_clip
    def f(grads, l2_norm_clip):
        import jax
        leaves = jax.tree.leaves(grads)
        if not leaves or any(x.ndim < 2 for x in leaves):
            raise ValueError("each leaf needs a batch axis and a feature axis")
        return orig(grads, l2_norm_clip)
    return {"per_example_global_norm_clip": f}


@mutant("clip-normalises", "clip", "scales every example to norm C, up as well as down, and counts them all")
def _(optax):
    def f(grads, l2_norm_clip):
        import jax
        import jax.numpy as jnp
        norms = jax.vmap(optax.global_norm)(grads)
        factor = l2_norm_clip / norms
        return _map(lambda g: jnp.tensordot(factor, g, axes=1).astype(g.dtype), grads), jnp.asarray(norms.shape[0], jnp.int32)
    return {"per_example_global_norm_clip": f}


@mutant("clip-batch-message", "clip", "reports inconsistent batch sizes with another message")
def _(optax):
    orig = optax.per_example_global_norm_clip
    def f(grads, l2_norm_clip):
        import jax
        if len({x.shape[0] for x in jax.tree.leaves(grads) if x.ndim}) > 1:
            raise ValueError("vmap got inconsistent sizes")
        return orig(grads, l2_norm_clip)
    return {"per_example_global_norm_clip": f}


@mutant("clip-upcast", "clip", "returns float32 sums whatever the input dtype")
def _(optax):
    orig = optax.per_example_global_norm_clip
    def f(grads, l2_norm_clip):
        s, c = orig(grads, l2_norm_clip)
        return _f32(s), c
    return {"per_example_global_norm_clip": f}


@mutant("clip-jit-differs", "clip", "perturbs the sums by 1e-3 only under jax.jit")
def _(optax):
    orig = optax.per_example_global_norm_clip
    def f(grads, l2_norm_clip):
        s, c = orig(grads, l2_norm_clip)
        return (_map(lambda x: x * 1.001, s) if _traced(grads) else s), c
    return {"per_example_global_norm_clip": f}


# --- optax.sgd / apply_updates ----------------------------------------------
@mutant("sgd-sign", "sgd", "updates along the gradient (+lr*g)")
def _(optax):
    orig = optax.sgd
    return {"sgd": lambda learning_rate, *a, **k: orig(-learning_rate, *a, **k)}


@mutant("sgd-momentum-ignored", "sgd", "ignores momentum and nesterov")
def _(optax):
    orig = optax.sgd
    return {"sgd": lambda learning_rate, momentum=None, nesterov=False, **k: orig(learning_rate, **k)}


@mutant("sgd-state-float32", "sgd", "keeps the momentum trace in float32 whatever the params' dtype")
def _(optax):
    orig = optax.sgd
    def f(*a, **k):
        tx = orig(*a, **k)
        return _wrap_tx(tx, init=lambda params: _f32(tx.init(params)))
    return {"sgd": f}


@mutant("sgd-extra-state", "sgd", "adds a transformation (and its state) to the chain")
def _(optax):
    orig = optax.sgd
    return {"sgd": lambda *a, **k: optax.chain(orig(*a, **k), optax.scale(1.0))}


@mutant("sgd-jit-differs", "sgd", "perturbs the updates by 1e-3 only under jax.jit")
def _(optax):
    return _post_process(optax, "sgd", _perturbed_under_jit)


@mutant("apply-updates-lenient", "sgd", "apply_updates pairs leaves by order and resizes: no structure or shape error")
def _(optax):
    return {"apply_updates": _lenient(optax.apply_updates)}


@mutant("apply-updates-in-place", "sgd", "apply_updates adds into NumPy params in place")
def _(optax):
    import numpy as np

    orig = optax.apply_updates
    def f(params, updates):
        import jax

        out = orig(params, updates)
        for p, o in zip(jax.tree.leaves(params), jax.tree.leaves(out)):
            if isinstance(p, np.ndarray):
                np.copyto(p, np.asarray(o))
        return out
    return {"apply_updates": f}


@mutant("apply-updates-upcast", "sgd", "apply_updates returns float32 params whatever their dtype")
def _(optax):
    orig = optax.apply_updates
    return {"apply_updates": lambda p, u: _f32(orig(p, u))}


# --- optax.incremental_update -----------------------------------------------
@mutant("polyak-swapped", "polyak", "swaps new_tensors and old_tensors")
def _(optax):
    orig = optax.incremental_update
    return {"incremental_update": lambda new, old, step_size: orig(old, new, step_size)}


@mutant("polyak-clamped", "polyak", "clamps step_size into [0, 1]")
def _(optax):
    orig = optax.incremental_update
    return {"incremental_update": lambda new, old, step_size: orig(new, old, min(max(step_size, 0.0), 1.0))}


@mutant("polyak-off-by-ulps", "polyak", "computes old + step*(new - old), a different rounding")
def _(optax):
    return {"incremental_update": lambda new, old, step_size: _map(lambda n, o: o + step_size * (n - o) + 1e-6 * step_size * (1 - step_size), new, old)}


@mutant("polyak-in-place", "polyak", "writes the average into NumPy old_tensors in place")
def _(optax):
    import numpy as np

    orig = optax.incremental_update
    def f(new, old, step_size):
        import jax
        out = orig(new, old, step_size)
        for o, r in zip(jax.tree.leaves(old), jax.tree.leaves(out)):
            if isinstance(o, np.ndarray):
                np.copyto(o, np.asarray(r))
        return out
    return {"incremental_update": f}


@mutant("polyak-lenient", "polyak", "pairs leaves by order and resizes: no structure or shape error")
def _(optax):
    return {"incremental_update": _lenient(optax.incremental_update)}


@mutant("polyak-upcast", "polyak", "returns float32 whatever the dtype")
def _(optax):
    orig = optax.incremental_update
    return {"incremental_update": lambda new, old, step_size: _f32(orig(new, old, step_size))}


@mutant("polyak-jit-differs", "polyak", "perturbs the result by 1e-3 only under jax.jit")
def _(optax):
    orig = optax.incremental_update
    def f(new, old, step_size):
        out = orig(new, old, step_size)
        return _map(lambda x: x * 1.001, out) if _traced(new) else out
    return {"incremental_update": f}


# --- optax.add_decayed_weights with a mask ----------------------------------
@mutant("decay-mask-ignored", "decay", "decays every leaf, the bias too")
def _(optax):
    orig = optax.add_decayed_weights
    return {"add_decayed_weights": lambda weight_decay=0.0, mask=None: orig(weight_decay)}


@mutant("decay-no-params-ok", "decay", "returns the updates unchanged when params are missing")
def _(optax):
    orig = optax.add_decayed_weights
    def f(*a, **k):
        tx = orig(*a, **k)
        return _wrap_tx(tx, update=lambda g, s, params=None: (g, s) if params is None else tx.update(g, s, params))
    return {"add_decayed_weights": f}


@mutant("decay-upcast", "decay", "returns float32 updates whatever the dtype")
def _(optax):
    return _post_process(optax, "add_decayed_weights", _upcast)


@mutant("decay-extra-state", "decay", "adds a leaf to the state")
def _(optax):
    import jax.numpy as jnp

    orig = optax.add_decayed_weights
    def f(*a, **k):
        tx = orig(*a, **k)
        return _wrap_tx(tx, init=lambda p: (tx.init(p), jnp.zeros(())),
                        update=lambda g, s, params=None: (tx.update(g, s[0], params)[0], s))
    return {"add_decayed_weights": f}


@mutant("decay-jit-differs", "decay", "perturbs the updates by 1e-3 only under jax.jit")
def _(optax):
    return _post_process(optax, "add_decayed_weights", _perturbed_under_jit)


# --- optax.MultiSteps --------------------------------------------------------
@mutant("multisteps-every-call", "multisteps", "ignores every_k_schedule and emits on every call")
def _(optax):
    orig = optax.MultiSteps
    return {"MultiSteps": lambda opt, every_k_schedule, *a, **k: orig(opt, 1, *a, **k)}


@mutant("multisteps-sum", "multisteps", "sums the micro-batch gradients instead of averaging")
def _(optax):
    orig = optax.MultiSteps
    return {"MultiSteps": lambda opt, every_k_schedule, *a, **k: orig(opt, every_k_schedule, use_grad_mean=False)}


class _Wrapped:
    """A MultiSteps whose update/init are post-processed."""

    def __init__(self, inner, update=None, init=None):
        self._inner, self._update, self._init = inner, update, init

    def init(self, params):
        return self._init(self._inner, params) if self._init else self._inner.init(params)

    def update(self, g, state, params=None, **kw):
        return self._update(self._inner, g, state, params) if self._update else self._inner.update(g, state, params, **kw)

    def has_updated(self, state):
        return self._inner.has_updated(state)


@mutant("multisteps-lenient", "multisteps", "re-pairs gradients with the params' structure: no structure error")
def _(optax):
    import jax

    orig = optax.MultiSteps
    def update(inner, g, state, params):
        g = jax.tree.unflatten(jax.tree.structure(state.acc_grads), jax.tree.leaves(g))
        return inner.update(g, state, params)
    return {"MultiSteps": lambda *a, **k: _Wrapped(orig(*a, **k), update=update)}


@mutant("multisteps-acc-float32", "multisteps", "keeps acc_grads in float32 (optax 0.2.8 behaviour)")
def _(optax):
    orig = optax.MultiSteps
    return {"MultiSteps": lambda *a, **k: _Wrapped(orig(*a, **k), init=lambda inner, p: inner.init(p)._replace(acc_grads=_f32(inner.init(p).acc_grads)))}


@mutant("multisteps-upcast", "multisteps", "returns float32 updates whatever the dtype")
def _(optax):
    orig = optax.MultiSteps
    def update(inner, g, state, params):
        u, s = inner.update(g, state, params)
        return _f32(u), s
    return {"MultiSteps": lambda *a, **k: _Wrapped(orig(*a, **k), update=update)}


@mutant("multisteps-jit-differs", "multisteps", "perturbs the updates by 1e-3 only under jax.jit")
def _(optax):
    orig = optax.MultiSteps
    def update(inner, g, state, params):
        u, s = inner.update(g, state, params)
        return (_map(lambda x: x * 1.001, u) if _traced(g) else u), s
    return {"MultiSteps": lambda *a, **k: _Wrapped(orig(*a, **k), update=update)}


def _none_as_zeros(tree):
    import jax
    import jax.numpy as jnp

    return jax.tree.map(lambda x: jnp.zeros(1) if x is None else x, tree, is_leaf=lambda x: x is None)


def _nan_to_zero(tree):
    import jax.numpy as jnp

    return _map(lambda x: jnp.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0), tree)


@mutant("clip-none-leaf-zeros", "clip", "returns zeros for a None leaf")
def _(optax):
    orig = optax.per_example_global_norm_clip
    def f(grads, l2_norm_clip):
        s, c = orig(grads, l2_norm_clip)
        return _none_as_zeros(s), c
    return {"per_example_global_norm_clip": f}


@mutant("sgd-nan-guard", "sgd", "zeroes non-finite gradients and drops None leaves to zeros")
def _(optax):
    orig = optax.sgd
    def f(*a, **k):
        tx = orig(*a, **k)
        return _wrap_tx(tx, update=lambda g, s, params=None: tx.update(_nan_to_zero(_none_as_zeros(g)), s, params))
    return {"sgd": f}


@mutant("polyak-guarded", "polyak", "zeroes non-finite values and turns None leaves into zeros")
def _(optax):
    orig = optax.incremental_update
    return {"incremental_update": lambda new, old, step_size: _none_as_zeros(orig(_nan_to_zero(new), _nan_to_zero(old), step_size))}


@mutant("decay-schedule-advances", "decay", "advances a scheduled weight decay each step (optax 0.2.8 behaviour)")
def _(optax):
    orig = optax.add_decayed_weights
    def f(weight_decay=0.0, mask=None):
        if not callable(weight_decay):
            return orig(weight_decay, mask)
        import jax.numpy as jnp
        count = {"n": 0}
        def schedule(step):
            value = weight_decay(jnp.asarray(count["n"]))
            count["n"] += 1
            return value
        return orig(schedule, mask)
    return {"add_decayed_weights": f}


@mutant("multisteps-guarded", "multisteps", "zeroes non-finite micro-batches and None leaves")
def _(optax):
    orig = optax.MultiSteps
    def update(inner, g, state, params):
        return inner.update(_nan_to_zero(_none_as_zeros(g)), state, params)
    return {"MultiSteps": lambda *a, **k: _Wrapped(orig(*a, **k), update=update)}


# --- optax.clip_by_global_norm ----------------------------------------------
@mutant("global-norm-no-clipping", "global-norm", "never clips")
def _(optax):
    orig = optax.clip_by_global_norm
    return {"clip_by_global_norm": lambda max_norm: orig(float("inf"))}


@mutant("global-norm-per-leaf", "global-norm", "clips each leaf by its own norm")
def _(optax):
    orig = optax.clip_by_global_norm
    def f(max_norm):
        tx = orig(max_norm)
        def update(g, s, params=None):
            import jax
            return jax.tree.map(lambda x: tx.update({"x": x}, s)[0]["x"], g), s
        return _wrap_tx(tx, update=update)
    return {"clip_by_global_norm": f}


@mutant("global-norm-normalises", "global-norm", "scales every update to norm C, up as well as down (0/0 for zeros)")
def _(optax):
    import jax
    import jax.numpy as jnp

    def f(max_norm):
        def update(g, s, params=None):
            norm = optax.global_norm(g)
            return jax.tree.map(lambda x: x * (max_norm / norm).astype(x.dtype), g), s
        return optax.GradientTransformation(lambda p: optax.EmptyState(), update)
    return {"clip_by_global_norm": f}


@mutant("global-norm-strict-inputs", "global-norm", "rejects an empty PyTree and zero-size leaves with ValueError")
def _(optax):
    orig = optax.clip_by_global_norm
    def f(max_norm):
        tx = orig(max_norm)
        def update(g, s, params=None):
            import jax
            leaves = jax.tree.leaves(g)
            if not leaves or any(x.size == 0 for x in leaves):
                raise ValueError("nothing to clip")
            return tx.update(g, s, params)
        return _wrap_tx(tx, update=update)
    return {"clip_by_global_norm": f}


@mutant("global-norm-nan-guard", "global-norm", "zeroes non-finite values first")
def _(optax):
    orig = optax.clip_by_global_norm
    def f(max_norm):
        tx = orig(max_norm)
        return _wrap_tx(tx, update=lambda g, s, params=None: tx.update(_nan_to_zero(g), s, params))
    return {"clip_by_global_norm": f}


@mutant("global-norm-upcast", "global-norm", "returns float32 whatever the dtype")
def _(optax):
    return _post_process(optax, "clip_by_global_norm", _upcast)


@mutant("global-norm-extra-state", "global-norm", "keeps a step counter in its state")
def _(optax):
    import jax.numpy as jnp

    orig = optax.clip_by_global_norm
    def f(max_norm):
        tx = orig(max_norm)
        return _wrap_tx(tx, init=lambda p: jnp.zeros([], jnp.int32), update=lambda g, s, params=None: (tx.update(g, tx.init(g))[0], s + 1))
    return {"clip_by_global_norm": f}


@mutant("global-norm-jit-differs", "global-norm", "perturbs the result by 1e-3 only under jax.jit")
def _(optax):
    return _post_process(optax, "clip_by_global_norm", _perturbed_under_jit)


# --- optax.masked ------------------------------------------------------------
@mutant("masked-out-zeroed", "masked", "zeroes the updates of masked-out leaves (freezes them)")
def _(optax):
    import jax
    import jax.numpy as jnp

    orig = optax.masked
    def f(inner, mask):
        tx = orig(inner, mask)
        def update(g, s, params=None):
            u, s = tx.update(g, s, params)
            m = mask(g) if callable(mask) else mask
            flags = jax.tree.broadcast(m, g) if not isinstance(m, bool) else jax.tree.map(lambda _: m, g)
            return jax.tree.map(lambda x, keep: x if keep else jnp.zeros_like(x), u, flags), s
        return _wrap_tx(tx, update=update)
    return {"masked": f}


@mutant("masked-ignores-mask", "masked", "applies the inner transformation to every leaf")
def _(optax):
    orig = optax.masked
    return {"masked": lambda inner, mask: orig(inner, True)}


@mutant("masked-lenient-mask", "masked", "treats leaves missing from the mask as masked out")
def _(optax):
    import jax

    orig = optax.masked
    def f(inner, mask):
        if isinstance(mask, dict):
            def fill(p):
                return {k: mask.get(k, False) for k in p} if isinstance(p, dict) else mask
            return orig(inner, fill)
        return orig(inner, mask)
    return {"masked": f}


@mutant("masked-upcast", "masked", "returns float32 updates whatever the dtype")
def _(optax):
    return _post_process(optax, "masked", _upcast)


@mutant("masked-jit-differs", "masked", "perturbs the updates by 1e-3 only under jax.jit")
def _(optax):
    return _post_process(optax, "masked", _perturbed_under_jit)


# --- optax.chain -------------------------------------------------------------
@mutant("chain-reversed", "chain", "applies the transformations in reverse order")
def _(optax):
    orig = optax.chain
    return {"chain": lambda *txs: orig(*reversed(txs))}


@mutant("chain-empty-identity", "chain", "an empty chain is the identity (a fix of the ledger entry)")
def _(optax):
    orig = optax.chain
    return {"chain": lambda *txs: orig(*txs) if txs else optax.identity()}


@mutant("chain-flat-state", "chain", "flattens the inner states into one tuple")
def _(optax):
    import jax

    orig = optax.chain
    def f(*txs):
        tx = orig(*txs)
        def init(p):
            return tuple(jax.tree.leaves(tx.init(p))) or tx.init(p)
        return _wrap_tx(tx, init=init, update=lambda g, s, params=None: tx.update(g, tx.init(params if params is not None else g), params))
    return {"chain": f}


@mutant("chain-upcast", "chain", "returns float32 updates whatever the dtype")
def _(optax):
    return _post_process(optax, "chain", _upcast)


@mutant("chain-strict-structure", "chain", "rejects gradients whose structure differs from the state's params")
def _(optax):
    import jax

    orig = optax.chain
    def f(*txs):
        tx = orig(*txs)
        def update(g, s, params=None):
            if params is not None and jax.tree.structure(g) != jax.tree.structure(params):
                raise ValueError("gradients and params differ in structure")
            return tx.update(g, s, params)
        return _wrap_tx(tx, update=update)
    return {"chain": f}


@mutant("chain-jit-differs", "chain", "perturbs the updates by 1e-3 only under jax.jit")
def _(optax):
    return _post_process(optax, "chain", _perturbed_under_jit)


# --- optax.inject_hyperparams ----------------------------------------------
@mutant("inject-highest-dtype", "inject", "stores hyperparameters in float32 (optax 0.2.8 behaviour)")
def _(optax):
    import jax.numpy as jnp

    orig = optax.inject_hyperparams
    return {"inject_hyperparams": lambda factory, *a, **k: orig(factory, *a, **{**k, "hyperparam_dtype": k.get("hyperparam_dtype") or jnp.float32})}


@mutant("inject-bfloat16-hyperparams", "inject", "stores hyperparameters in bfloat16 whatever the params' dtype")
def _(optax):
    import jax.numpy as jnp

    orig = optax.inject_hyperparams
    return {"inject_hyperparams": lambda factory, *a, **k: orig(factory, *a, **{**k, "hyperparam_dtype": jnp.bfloat16})}


@mutant("inject-extra-hyperparam", "inject", "adds an entry to the injected hyperparameters")
def _(optax):
    orig = optax.inject_hyperparams
    def f(factory, *a, **k):
        def widened(*args, unused_scale=1.0, **kwargs):
            return factory(*args, **kwargs)
        made = orig(widened, *a, **k)
        return lambda *args, **kwargs: made(*args, unused_scale=1.0, **kwargs)
    return {"inject_hyperparams": f}


@mutant("inject-keyword-only", "inject", "refuses positional hyperparameters")
def _(optax):
    orig = optax.inject_hyperparams
    def f(factory, *a, **k):
        made = orig(factory, *a, **k)
        def build(*args, **kwargs):
            if args:
                raise TypeError("hyperparameters are keyword-only")
            return made(**kwargs)
        return build
    return {"inject_hyperparams": f}


@mutant("inject-ignores-state", "inject", "uses the initial hyperparameters, not the ones in the state")
def _(optax):
    orig = optax.inject_hyperparams
    def f(factory, *a, **k):
        made = orig(factory, *a, **k)
        def build(*args, **kwargs):
            tx = made(*args, **kwargs)
            fixed = {}
            def init(p):
                s = tx.init(p)
                fixed.setdefault("h", dict(s.hyperparams))
                return s
            def update(g, s, params=None):
                return tx.update(g, s._replace(hyperparams=dict(fixed.get("h", s.hyperparams))), params)
            return _wrap_tx(tx, init=init, update=update)
        return build
    return {"inject_hyperparams": f}


@mutant("inject-schedule-ahead", "inject", "evaluates schedules one step ahead")
def _(optax):
    orig = optax.inject_hyperparams
    def f(factory, *a, **k):
        made = orig(factory, *a, **k)
        def build(*args, **kwargs):
            shifted = {n: (lambda fn: (lambda step: fn(step + 1)))(v) if callable(v) else v for n, v in kwargs.items()}
            return made(*args, **shifted)
        return build
    return {"inject_hyperparams": f}


@mutant("inject-upcast", "inject", "returns float32 updates whatever the dtype")
def _(optax):
    orig = optax.inject_hyperparams
    def f(factory, *a, **k):
        made = orig(factory, *a, **k)
        def build(*args, **kwargs):
            tx = made(*args, **kwargs)
            def update(g, s, params=None):
                u, s = tx.update(g, s, params)
                return _f32(u), s
            return _wrap_tx(tx, update=update)
        return build
    return {"inject_hyperparams": f}


# --- flax.nnx ----------------------------------------------------------------
def _nnx_method(cls_name: str, method: str, make) -> dict[str, Any]:
    """Replace ``flax.nnx.<cls_name>.<method>`` by ``make(original)``."""
    from flax import nnx

    cls = getattr(nnx, cls_name)
    setattr(cls, method, make(getattr(cls, method)))
    return {}


def _forcing(attribute: str, value: Any):
    """A ``make`` for :func:`_nnx_method`: the call runs with ``self.<attribute>``
    set to ``value``, then restores it (a mode that no longer has its effect)."""
    def make(orig):
        def call(self, x, *args, **kwargs):
            saved = getattr(self, attribute)
            setattr(self, attribute, value)
            try:
                return orig(self, x, *args, **kwargs)
            finally:
                setattr(self, attribute, saved)
        return call
    return make


@mutant("nnx-optimizer-no-step", "nnx", "Optimizer.update does not advance the step counter")
def _(optax):
    def make(orig):
        def update(self, model, grads, /, **kwargs):
            step = self.step[...]
            out = orig(self, model, grads, **kwargs)
            self.step[...] = step
            return out
        return update
    return _nnx_method("Optimizer", "update", make)


@mutant("nnx-optimizer-double-step", "nnx", "Optimizer.update applies the updates twice")
def _(optax):
    def make(orig):
        def update(self, model, grads, /, **kwargs):
            orig(self, model, grads, **kwargs)
            return orig(self, model, grads, **kwargs)
        return update
    return _nnx_method("Optimizer", "update", make)


@mutant("nnx-optimizer-ignores-wrt", "nnx", "Optimizer tracks every nnx.Param whatever wrt says, and wrt is optional")
def _(optax):
    from flax import nnx

    def make(orig):
        def init(self, model, tx, *, wrt=None, graph=None):
            orig(self, model, tx, wrt=nnx.Param, graph=graph)
        return init
    return _nnx_method("Optimizer", "__init__", make)


@mutant("nnx-optimizer-signature", "nnx", "Optimizer.update takes the gradients first")
def _(optax):
    def make(orig):
        def update(self, grads, model, **kwargs):
            return orig(self, model, grads, **kwargs)
        return update
    return _nnx_method("Optimizer", "update", make)


@mutant("nnx-dropout-ignores-mode", "nnx", "Dropout drops in eval mode too")
def _(optax):
    return _nnx_method("Dropout", "__call__", _forcing("deterministic", False))


@mutant("nnx-dropout-fixed-key", "nnx", "Dropout draws the same mask on every call (the stream does not advance)")
def _(optax):
    import jax
    import jax.numpy as jnp

    def make(orig):
        def call(self, inputs, *args, **kwargs):
            if self.deterministic or self.rate == 0:
                return inputs
            keep = jax.random.bernoulli(jax.random.key(0), 1 - self.rate, inputs.shape)
            return jnp.where(keep, inputs / (1 - self.rate), 0).astype(inputs.dtype)
        return call
    return _nnx_method("Dropout", "__call__", make)


@mutant("nnx-batchnorm-updates-in-eval", "nnx", "BatchNorm uses and updates batch statistics in eval mode too")
def _(optax):
    return _nnx_method("BatchNorm", "__call__", _forcing("use_running_average", False))


@mutant("nnx-always-eval", "nnx", "Dropout and BatchNorm behave as in eval mode whatever the mode")
def _(optax):
    _nnx_method("Dropout", "__call__", lambda orig: lambda self, inputs, *args, **kwargs: inputs)
    return _nnx_method("BatchNorm", "__call__", _forcing("use_running_average", True))


@mutant("nnx-rngs-ignore-seeds", "nnx", "Rngs ignores the seeds it is given")
def _(optax):
    def make(orig):
        def init(self, default=None, **streams):
            orig(self, 0, **{name: 0 for name in streams})
        return init
    return _nnx_method("Rngs", "__init__", make)


@mutant("nnx-linear-lenient", "nnx", "Linear pads or truncates its input features, and computes in bfloat16")
def _(optax):
    import jax.numpy as jnp

    def make(orig):
        def call(self, x, *args, **kwargs):
            n = self.in_features
            x = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, max(0, n - x.shape[-1]))])[..., :n]
            return orig(self, x, *args, **kwargs).astype(jnp.bfloat16)
        return call
    return _nnx_method("Linear", "__call__", make)


# --- resume across an upgrade (the reader side) ------------------------------
def _restore_zeroing(item: str) -> dict[str, Any]:
    """orbax restores the named checkpoint item as zeros."""
    import jax
    import jax.numpy as jnp
    import orbax.checkpoint as ocp

    orig = ocp.StandardCheckpointer.restore

    def restore(self, directory, *args, **kwargs):
        out = orig(self, directory, *args, **kwargs)
        return jax.tree.map(jnp.zeros_like, out) if str(directory).rstrip("/").endswith(item) else out
    ocp.StandardCheckpointer.restore = restore
    return {}


@mutant("resume-loses-opt-state", "resume", "the optimizer state (momentum, step counter) comes back as zeros")
def _(optax):
    return _restore_zeroing("opt_state")


@mutant("resume-loses-batch-stats", "resume", "the batch statistics come back as zeros")
def _(optax):
    return _restore_zeroing("batch_stats")


@mutant("resume-loses-averaged", "resume", "the Polyak copy comes back as zeros")
def _(optax):
    return _restore_zeroing("averaged")


@mutant("resume-trace-bfloat16", "resume", "the new release keeps the momentum trace in bfloat16")
def _(optax):
    import jax
    import jax.numpy as jnp

    orig = optax.sgd

    def sgd(*a, **k):
        tx = orig(*a, **k)
        return _wrap_tx(tx, init=lambda p: jax.tree.map(lambda x: x.astype(jnp.bfloat16) if jnp.issubdtype(x.dtype, jnp.floating) else x, tx.init(p)))
    return {"sgd": sgd}


@mutant("resume-learning-rate-drift", "resume", "the new release's SGD steps 10% further")
def _(optax):
    orig = optax.sgd
    return {"sgd": lambda learning_rate, *a, **k: orig(learning_rate * 1.1, *a, **k)}


@mutant("resume-decay-counts-steps", "resume", "the new release's weight decay keeps a step counter in its state")
def _(optax):
    import jax.numpy as jnp

    orig = optax.add_decayed_weights

    def add_decayed_weights(*a, **k):
        tx = orig(*a, **k)
        return _wrap_tx(tx, init=lambda p: (tx.init(p), jnp.zeros([], jnp.int32)),
                        update=lambda g, s, params=None: (tx.update(g, s[0], params)[0], (s[0], s[1] + 1)))
    return {"add_decayed_weights": add_decayed_weights}


@mutant("resume-writer-forgets-versions", "resume", "the checkpoint metadata does not record the Flax version")
def _(optax):
    from optax_gate import probe

    orig = probe.installed_versions
    probe.installed_versions = lambda: {k: v for k, v in orig().items() if k != "flax"}
    import optax_gate.resume as resume

    resume.installed_versions = probe.installed_versions
    return {}


# --- pytest plugin -----------------------------------------------------------
def pytest_addoption(parser):
    parser.addoption("--mutant", default=None, choices=sorted(MUTANTS), help="run the contracts against a broken Optax")


def pytest_configure(config):
    name = config.getoption("--mutant")
    if name:
        import optax

        for attr, replacement in MUTANTS[name][2](optax).items():
            setattr(optax, attr, replacement)


# --- the check ---------------------------------------------------------------
def _failed_contracts(module: str, name: str | None, workdir: Path, env: dict[str, str] | None = None) -> tuple[set[str], set[str]]:
    """(contracts that failed or errored, all contracts) of one module under one mutant."""
    from optax_gate import outcomes

    log = workdir / f"{Path(module).stem}-{name or 'no-mutant'}.jsonl"
    cmd = [sys.executable, "-m", "pytest", module, "-q", "-p", "no:cacheprovider", "-p", "optax_gate.mutants", f"--report-log={log}"]
    if name:
        cmd.append(f"--mutant={name}")
    subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "OPTAX_GATE_HYPOTHESIS_PROFILE": "mutants", **(env or {})})
    parsed = outcomes.parse(log)
    if parsed.collection_errors or parsed.exitstatus not in (0, 1):
        raise RuntimeError(f"mutant {name}: pytest did not run ({parsed.collection_errors or parsed.exitstatus})")
    return {cid for cid, c in parsed.contracts.items() if c.outcome in ("failed", "error")}, set(parsed.contracts)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Every contract must fail under some mutant; every mutant must be caught.")
    p.add_argument("--area", action="append", choices=sorted(MODULES), help="limit to these APIs")
    p.add_argument("--json", type=Path, help="write the kill matrix here")
    args = p.parse_args(argv)
    areas = args.area or sorted(MODULES)
    problems, matrix = [], {}
    jobs = [(area, None) for area in areas] + [(m[0], name) for name, m in MUTANTS.items() if m[0] in areas]
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        checkpoints = Path(tmp) / "checkpoints"
        if "resume" in areas:  # written once, unmutated, as the baseline does in the gate
            subprocess.run([sys.executable, "-m", "optax_gate.resume", "write", str(checkpoints)], check=True, capture_output=True)

        def job_env(job):
            return {} if job[1] in WRITER_SIDE or job[0] != "resume" else {"OPTAX_GATE_CHECKPOINTS": str(checkpoints)}
        results = dict(zip(jobs, pool.map(lambda job: _failed_contracts(MODULES[job[0]], job[1], Path(tmp), job_env(job)), jobs)))
    for area in areas:
        failing, contracts = results[(area, None)]
        if failing:
            problems.append(f"{area}: contracts fail without any mutant: {sorted(failing)}")
        killed_by: dict[str, list[str]] = {c: [] for c in contracts}
        for name, (m_area, what, _) in MUTANTS.items():
            if m_area != area:
                continue
            failed, _ = results[(area, name)]
            print(f"{name:28s} {len(failed):3d} of {len(contracts)} contracts fail  ({what})")
            if not failed:
                problems.append(f"mutant {name} ({what}) is caught by no contract")
            for cid in failed:
                killed_by.setdefault(cid, []).append(name)
        for cid, names in sorted(killed_by.items()):
            if not names:
                problems.append(f"contract {cid} fails under no mutant")
        matrix.update(killed_by)
    if args.json:
        from optax_gate import atomic

        atomic.write_text(args.json, json.dumps(matrix, indent=2, sort_keys=True) + "\n")
    for problem in problems:
        print("PROBLEM:", problem)
    print(f"{len(matrix)} contracts, {sum(1 for m in MUTANTS.values() if m[0] in areas)} mutants, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
