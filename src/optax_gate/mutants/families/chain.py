"""Mutants of optax.chain: deliberately broken variants that the contracts
of ``tests/contracts/test_chain.py`` must catch."""

from __future__ import annotations

from typing import Any

from optax_gate.mutants.patches import post_process, upcast, wrap_tx
from optax_gate.mutants.registry import family
from optax_gate.mutants.shapes import jit_differs

mutant = family("chain", "tests/contracts/test_chain.py")


@mutant("chain-reversed", "applies the transformations in reverse order")
def _(optax: Any) -> Any:
    orig = optax.chain
    return {"chain": lambda *txs: orig(*reversed(txs))}


@mutant("chain-empty-identity", "an empty chain is the identity (a fix of the ledger entry)")
def _(optax: Any) -> Any:
    orig = optax.chain
    return {"chain": lambda *txs: orig(*txs) if txs else optax.identity()}


@mutant("chain-flat-state", "flattens the inner states into one tuple")
def _(optax: Any) -> Any:
    import jax

    orig = optax.chain

    def f(*txs: Any) -> Any:
        tx = orig(*txs)

        def init(p: Any) -> Any:
            return tuple(jax.tree.leaves(tx.init(p))) or tx.init(p)

        return wrap_tx(
            tx,
            init=init,
            update=lambda g, s, params=None: tx.update(g, tx.init(params if params is not None else g), params),
        )

    return {"chain": f}


@mutant("chain-upcast", "returns float32 updates whatever the dtype")
def _(optax: Any) -> Any:
    return post_process(optax, "chain", upcast)


@mutant("chain-strict-structure", "rejects gradients whose structure differs from the state's params")
def _(optax: Any) -> Any:
    import jax

    orig = optax.chain

    def f(*txs: Any) -> Any:
        tx = orig(*txs)

        def update(g: Any, s: Any, params: Any = None) -> Any:
            if params is not None and jax.tree.structure(g) != jax.tree.structure(params):
                raise ValueError("gradients and params differ in structure")
            return tx.update(g, s, params)

        return wrap_tx(tx, update=update)

    return {"chain": f}


jit_differs(mutant, "chain-jit-differs")
