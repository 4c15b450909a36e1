"""Mutants of every transformation inside each wrapper
(``tests/contracts/test_surface_corners_wrapped.py``): ``MultiSteps`` that
applies half the mean gradient's update, ``apply_if_finite`` that drops the
extra arguments of ``update``, ``inject_hyperparams`` whose updates come out bfloat16 (each
replaces one wrapper on ``optax``), and every transformation raising on the
empty PyTree (its factories replaced).
"""

from __future__ import annotations

import functools
from typing import Any

from optax_gate.mutants.families.surface_sweep import replace_paths
from optax_gate.mutants.patches import with_update
from optax_gate.mutants.registry import family

mutant = family("surface_corners_wrapped", "tests/contracts/test_surface_corners_wrapped.py")


def _scaled_updates(optax: Any, tx: Any, factor: Any) -> Any:
    import jax

    return with_update(optax, tx, lambda u, extra: jax.tree.map(lambda x: None if x is None else x * factor, u))


@mutant("surface-corners-wrapped-multisteps-half", "MultiSteps applies half of the accumulated update")
def multisteps_half(optax: Any) -> Any:
    original = optax.MultiSteps

    class MultiSteps(original):  # type: ignore[valid-type, misc]  # optax's class, read as Any
        def __init__(self, opt: Any, *args: Any, **kwargs: Any) -> None:
            super().__init__(_scaled_updates(optax, optax.with_extra_args_support(opt), 0.5), *args, **kwargs)

    return {"MultiSteps": MultiSteps}


@mutant(
    "surface-corners-wrapped-apply-if-finite-drops-extra-args",
    "apply_if_finite calls the inner update without its extra arguments (value=, grad=...)",
)
def apply_if_finite_drops_extra(optax: Any) -> Any:
    original = optax.apply_if_finite

    @functools.wraps(original)
    def apply_if_finite(inner: Any, *args: Any, **kwargs: Any) -> Any:
        tx = original(inner, *args, **kwargs)

        def update(updates: Any, state: Any, params: Any = None, **extra: Any) -> Any:
            return tx.update(updates, state, params)

        return optax.GradientTransformationExtraArgs(tx.init, update)

    return {"apply_if_finite": apply_if_finite}


@mutant(
    "surface-corners-wrapped-inject-bfloat16",
    "inject_hyperparams casts the updates to bfloat16 (as a bfloat16 hyperparameter would)",
)
def inject_bfloat16(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    original = optax.inject_hyperparams

    @functools.wraps(original)
    def inject_hyperparams(factory: Any, *args: Any, **kwargs: Any) -> Any:
        make = original(factory, *args, **kwargs)

        @functools.wraps(make)
        def build(*a: Any, **k: Any) -> Any:
            tx = make(*a, **k)

            def update(updates: Any, state: Any, params: Any = None, **extra: Any) -> Any:
                u, s = tx.update(updates, state, params, **extra)
                return jax.tree.map(lambda x: None if x is None else x.astype(jnp.bfloat16), u), s

            return optax.GradientTransformationExtraArgs(tx.init, update)

        return build

    return {"inject_hyperparams": inject_hyperparams}


@mutant(
    "surface-corners-wrapped-empty-tree-raises",
    "every transformation's init raises RuntimeError on the empty PyTree {}",
)
def empty_tree_raises(optax: Any) -> Any:
    import jax

    from optax_gate.kit.surface.wrapped import paths

    def make(orig: Any, path: Any) -> Any:
        @functools.wraps(orig)
        def factory(*args: Any, **kwargs: Any) -> Any:
            tx = orig(*args, **kwargs)

            def init(params: Any) -> Any:
                if not jax.tree.leaves(params):
                    raise RuntimeError("no leaves")
                return tx.init(params)

            return (
                optax.GradientTransformationExtraArgs
                if isinstance(tx, optax.GradientTransformationExtraArgs)
                else optax.GradientTransformation
            )(init, tx.update)

        return factory

    return replace_paths(paths(), make)
