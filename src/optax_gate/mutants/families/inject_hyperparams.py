"""Mutants of optax.inject_hyperparams: deliberately broken variants that the contracts
of ``tests/contracts/test_inject_hyperparams.py`` must catch."""

from __future__ import annotations

from typing import Any

from optax_gate.mutants.patches import hyperparams_in, to_f32, wrap_tx
from optax_gate.mutants.registry import family

mutant = family("inject", "tests/contracts/test_inject_hyperparams.py")


@mutant("inject-highest-dtype", "stores hyperparameters in float32 (optax 0.2.8 behaviour)")
def _(optax: Any) -> Any:
    return hyperparams_in(optax, "float32")


@mutant("inject-bfloat16-hyperparams", "stores hyperparameters in bfloat16 whatever the params' dtype")
def _(optax: Any) -> Any:
    return hyperparams_in(optax, "bfloat16", unless_given=False)


@mutant("inject-extra-hyperparam", "adds an entry to the injected hyperparameters")
def _(optax: Any) -> Any:
    orig = optax.inject_hyperparams

    def f(factory: Any, *a: Any, **k: Any) -> Any:
        def widened(*args: Any, unused_scale: Any = 1.0, **kwargs: Any) -> Any:
            return factory(*args, **kwargs)

        made = orig(widened, *a, **k)
        return lambda *args, **kwargs: made(*args, unused_scale=1.0, **kwargs)

    return {"inject_hyperparams": f}


@mutant("inject-keyword-only", "refuses positional hyperparameters")
def _(optax: Any) -> Any:
    orig = optax.inject_hyperparams

    def f(factory: Any, *a: Any, **k: Any) -> Any:
        made = orig(factory, *a, **k)

        def build(*args: Any, **kwargs: Any) -> Any:
            if args:
                raise TypeError("hyperparameters are keyword-only")
            return made(**kwargs)

        return build

    return {"inject_hyperparams": f}


@mutant("inject-ignores-state", "uses the initial hyperparameters, not the ones in the state")
def _(optax: Any) -> Any:
    orig = optax.inject_hyperparams

    def f(factory: Any, *a: Any, **k: Any) -> Any:
        made = orig(factory, *a, **k)

        def build(*args: Any, **kwargs: Any) -> Any:
            tx = made(*args, **kwargs)
            fixed: dict[str, Any] = {}

            def init(p: Any) -> Any:
                s = tx.init(p)
                fixed.setdefault("h", dict(s.hyperparams))
                return s

            def update(g: Any, s: Any, params: Any = None) -> Any:
                return tx.update(g, s._replace(hyperparams=dict(fixed.get("h", s.hyperparams))), params)

            return wrap_tx(tx, init=init, update=update)

        return build

    return {"inject_hyperparams": f}


@mutant("inject-schedule-ahead", "evaluates schedules one step ahead")
def _(optax: Any) -> Any:
    orig = optax.inject_hyperparams

    def f(factory: Any, *a: Any, **k: Any) -> Any:
        made = orig(factory, *a, **k)

        def build(*args: Any, **kwargs: Any) -> Any:
            shifted = {n: (lambda fn: lambda step: fn(step + 1))(v) if callable(v) else v for n, v in kwargs.items()}
            return made(*args, **shifted)

        return build

    return {"inject_hyperparams": f}


@mutant("inject-upcast", "returns float32 updates whatever the dtype")
def _(optax: Any) -> Any:
    orig = optax.inject_hyperparams

    def f(factory: Any, *a: Any, **k: Any) -> Any:
        made = orig(factory, *a, **k)

        def build(*args: Any, **kwargs: Any) -> Any:
            tx = made(*args, **kwargs)

            def update(g: Any, s: Any, params: Any = None) -> Any:
                u, s = tx.update(g, s, params)
                return to_f32(u), s

            return wrap_tx(tx, update=update)

        return build

    return {"inject_hyperparams": f}


@mutant(
    "inject-dtypeless-float32",
    "stores float32 hyperparameters at init when the params' first leaf has no dtype (an empty PyTree, a "
    "Python scalar)",
)
def _(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    orig = optax.inject_hyperparams

    def f(factory: Any, *a: Any, **k: Any) -> Any:
        made, made_f32 = (
            orig(factory, *a, **k),
            orig(factory, *a, **{**k, "hyperparam_dtype": k.get("hyperparam_dtype") or jnp.float32}),
        )

        def build(*args: Any, **kwargs: Any) -> Any:
            tx, tx_f32 = made(*args, **kwargs), made_f32(*args, **kwargs)

            def init(p: Any) -> Any:
                first = next(iter(jax.tree.leaves(p)), None)
                return (tx if hasattr(first, "dtype") else tx_f32).init(p)

            return wrap_tx(tx, init=init)

        return build

    return {"inject_hyperparams": f}
