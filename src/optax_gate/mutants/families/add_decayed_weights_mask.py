"""Mutants of optax.add_decayed_weights with a mask: deliberately broken variants that the contracts
of ``tests/contracts/test_add_decayed_weights_mask.py`` must catch."""

from __future__ import annotations

from typing import Any

from optax_gate.mutants.patches import post_process, upcast, wrap_tx
from optax_gate.mutants.registry import family
from optax_gate.mutants.shapes import jit_differs

mutant = family("decay", "tests/contracts/test_add_decayed_weights_mask.py")


@mutant("decay-mask-ignored", "decays every leaf, the bias too")
def _(optax: Any) -> Any:
    orig = optax.add_decayed_weights
    return {"add_decayed_weights": lambda weight_decay=0.0, mask=None: orig(weight_decay)}


@mutant("decay-no-params-ok", "returns the updates unchanged when params are missing")
def _(optax: Any) -> Any:
    orig = optax.add_decayed_weights

    def f(*a: Any, **k: Any) -> Any:
        tx = orig(*a, **k)
        return wrap_tx(tx, update=lambda g, s, params=None: (g, s) if params is None else tx.update(g, s, params))

    return {"add_decayed_weights": f}


@mutant("decay-upcast", "returns float32 updates whatever the dtype")
def _(optax: Any) -> Any:
    return post_process(optax, "add_decayed_weights", upcast)


@mutant("decay-extra-state", "adds a leaf to the state")
def _(optax: Any) -> Any:
    import jax.numpy as jnp

    orig = optax.add_decayed_weights

    def f(*a: Any, **k: Any) -> Any:
        tx = orig(*a, **k)
        return wrap_tx(
            tx,
            init=lambda p: (tx.init(p), jnp.zeros(())),
            update=lambda g, s, params=None: (tx.update(g, s[0], params)[0], s),
        )

    return {"add_decayed_weights": f}


jit_differs(mutant, "decay-jit-differs")


@mutant("decay-schedule-advances", "advances a scheduled weight decay each step (optax 0.2.8 behaviour)")
def _(optax: Any) -> Any:
    orig = optax.add_decayed_weights

    def f(weight_decay: Any = 0.0, mask: Any = None) -> Any:
        if not callable(weight_decay):
            return orig(weight_decay, mask)
        import jax.numpy as jnp

        count = {"n": 0}

        def schedule(step: Any) -> Any:
            value = weight_decay(jnp.asarray(count["n"]))
            count["n"] += 1
            return value

        return orig(schedule, mask)

    return {"add_decayed_weights": f}
