"""Mutants of optax.multi_transform: deliberately broken variants that the
contracts of ``tests/contracts/test_multi_transform.py`` must catch."""

from __future__ import annotations

from typing import Any

from optax_gate.mutants.patches import post_process, upcast
from optax_gate.mutants.registry import family
from optax_gate.mutants.shapes import jit_differs

mutant = family("multi-transform", "tests/contracts/test_multi_transform.py")


@mutant("multi-transform-swapped", "gives each group the transformation of another label")
def _(optax: Any) -> Any:
    orig = optax.multi_transform

    def f(transforms: Any, labels: Any, **kw: Any) -> Any:
        keys = list(transforms)
        rotated = {k: transforms[keys[(i + 1) % len(keys)]] for i, k in enumerate(keys)}
        return orig(rotated, labels, **kw)

    return {"multi_transform": f}


@mutant("multi-transform-first-for-all", "applies the first transformation to every leaf, labels ignored")
def _(optax: Any) -> Any:
    import jax

    orig = optax.multi_transform

    def f(transforms: Any, labels: Any, **kw: Any) -> Any:
        first = next(iter(transforms))
        return orig(transforms, lambda t: jax.tree.map(lambda _: first, t), **kw)

    return {"multi_transform": f}


@mutant("multi-transform-lenient", "an unknown label passes through unchanged instead of raising")
def _(optax: Any) -> Any:
    orig = optax.multi_transform

    def f(transforms: Any, labels: Any, **kw: Any) -> Any:
        import jax

        def relabel(t: Any) -> Any:
            lab = labels(t) if callable(labels) else labels
            return jax.tree.map(lambda x: x if x in transforms else "__identity__", lab)

        return orig({**transforms, "__identity__": optax.identity()}, relabel, **kw)

    return {"multi_transform": f}


@mutant("multi-transform-strict-prefix", "rejects a label naming a whole subtree (labels must match leaf for leaf)")
def _(optax: Any) -> Any:
    import jax

    orig = optax.multi_transform

    def f(transforms: Any, labels: Any, **kw: Any) -> Any:
        tx = orig(transforms, labels, **kw)

        def init(params: Any) -> Any:
            lab = labels(params) if callable(labels) else labels
            if jax.tree.structure(lab) != jax.tree.structure(params):
                raise ValueError("pytree structure error: labels must match the params leaf for leaf")
            return tx.init(params)

        return optax.GradientTransformation(init, tx.update)

    return {"multi_transform": f}


@mutant("multi-transform-dense-state", "keeps every group's state for every leaf (no MaskedNode)")
def _(optax: Any) -> Any:
    orig = optax.multi_transform

    def f(transforms: Any, labels: Any, **kw: Any) -> Any:
        tx = orig(transforms, labels, **kw)

        def init(params: Any) -> Any:
            return optax.MultiTransformState({k: optax.MaskedState(t.init(params)) for k, t in transforms.items()})

        return optax.GradientTransformation(init, tx.update)

    return {"multi_transform": f}


@mutant("multi-transform-upcast", "returns float32 updates whatever the dtype")
def _(optax: Any) -> Any:
    return post_process(optax, "multi_transform", upcast)


jit_differs(mutant, "multi-transform-jit-differs")
