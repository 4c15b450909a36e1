"""Mutants of optax.MultiSteps: deliberately broken variants that the contracts
of ``tests/contracts/test_multi_steps.py`` must catch."""

from __future__ import annotations

from typing import Any

from optax_gate.mutants.patches import nan_to_zero, none_as_zeros, to_f32, traced, tree_map
from optax_gate.mutants.registry import family

mutant = family("multisteps", "tests/contracts/test_multi_steps.py")


@mutant("multisteps-every-call", "ignores every_k_schedule and emits on every call")
def _(optax: Any) -> Any:
    orig = optax.MultiSteps
    return {"MultiSteps": lambda opt, every_k_schedule, *a, **k: orig(opt, 1, *a, **k)}


@mutant("multisteps-sum", "sums the micro-batch gradients instead of averaging")
def _(optax: Any) -> Any:
    orig = optax.MultiSteps
    return {"MultiSteps": lambda opt, every_k_schedule, *a, **k: orig(opt, every_k_schedule, use_grad_mean=False)}


class _Wrapped:
    """A MultiSteps whose update/init are post-processed."""

    def __init__(self, inner: Any, update: Any = None, init: Any = None) -> None:
        self._inner, self._update, self._init = inner, update, init

    def init(self, params: Any) -> Any:
        return self._init(self._inner, params) if self._init else self._inner.init(params)

    def update(self, g: Any, state: Any, params: Any = None, **kw: Any) -> Any:
        return (
            self._update(self._inner, g, state, params) if self._update else self._inner.update(g, state, params, **kw)
        )

    def has_updated(self, state: Any) -> Any:
        return self._inner.has_updated(state)


@mutant("multisteps-lenient", "re-pairs gradients with the params' structure: no structure error")
def _(optax: Any) -> Any:
    import jax

    orig = optax.MultiSteps

    def update(inner: Any, g: Any, state: Any, params: Any) -> Any:
        g = jax.tree.unflatten(jax.tree.structure(state.acc_grads), jax.tree.leaves(g))
        return inner.update(g, state, params)

    return {"MultiSteps": lambda *a, **k: _Wrapped(orig(*a, **k), update=update)}


@mutant("multisteps-acc-float32", "keeps acc_grads in float32 (optax 0.2.8 behaviour)")
def _(optax: Any) -> Any:
    orig = optax.MultiSteps
    return {
        "MultiSteps": lambda *a, **k: _Wrapped(
            orig(*a, **k), init=lambda inner, p: inner.init(p)._replace(acc_grads=to_f32(inner.init(p).acc_grads))
        )
    }


@mutant("multisteps-upcast", "returns float32 updates whatever the dtype")
def _(optax: Any) -> Any:
    orig = optax.MultiSteps

    def update(inner: Any, g: Any, state: Any, params: Any) -> Any:
        u, s = inner.update(g, state, params)
        return to_f32(u), s

    return {"MultiSteps": lambda *a, **k: _Wrapped(orig(*a, **k), update=update)}


@mutant("multisteps-jit-differs", "perturbs the updates by 1e-3 only under jax.jit")
def _(optax: Any) -> Any:
    orig = optax.MultiSteps

    def update(inner: Any, g: Any, state: Any, params: Any) -> Any:
        u, s = inner.update(g, state, params)
        return (tree_map(lambda x: x * 1.001, u) if traced(g) else u), s

    return {"MultiSteps": lambda *a, **k: _Wrapped(orig(*a, **k), update=update)}


@mutant("multisteps-guarded", "zeroes non-finite micro-batches and None leaves")
def _(optax: Any) -> Any:
    orig = optax.MultiSteps

    def update(inner: Any, g: Any, state: Any, params: Any) -> Any:
        return inner.update(nan_to_zero(none_as_zeros(g)), state, params)

    return {"MultiSteps": lambda *a, **k: _Wrapped(orig(*a, **k), update=update)}
