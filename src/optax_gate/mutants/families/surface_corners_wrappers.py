"""Mutants of the wrappers' corner grid
(``tests/contracts/test_surface_corners_wrappers.py``): the inner Adam
family's ``mu_dtype`` ignored, a state that changes dtype after the first
update (a ``jax.lax.scan`` carry then raises TypeError), NaN updates for
half-precision params, the imaginary part of complex updates dropped, and the
state of a mixed-dtype tree promoted to its widest dtype. Each one replaces the inner factories of the grid
(``corners.wrappers.INNERS``) and returns {}.
"""

from __future__ import annotations

import functools
from typing import Any

from optax_gate.mutants.families.surface_sweep import replace_paths
from optax_gate.mutants.registry import family

mutant = family("surface_corners_wrappers", "tests/contracts/test_surface_corners_wrappers.py")


def _inners() -> list[str]:
    from optax_gate.kit.corners.wrappers import INNERS

    return list(dict.fromkeys(p for p, _ in INNERS.values()))


def _around(change: Any) -> Any:
    """Every inner factory's transformation passed through ``change(tx)``."""

    def make(orig: Any, path: Any) -> Any:
        @functools.wraps(orig)
        def factory(*args: Any, **kwargs: Any) -> Any:
            return change(orig(*args, **kwargs))

        return factory

    return replace_paths(_inners(), make)


@mutant(
    "surface-corners-wrappers-mu-dtype-ignored",
    "the Adam family ignores mu_dtype (its first moment in the params' dtype)",
)
def mu_dtype_ignored(optax: Any) -> Any:
    def make(orig: Any, path: Any) -> Any:
        @functools.wraps(orig)
        def factory(*args: Any, mu_dtype: Any = None, **kwargs: Any) -> Any:
            return orig(*args, **kwargs)

        return factory

    return replace_paths(_inners(), make)


@mutant(
    "surface-corners-wrappers-state-upcast",
    "update returns the state's floating leaves as float32 (init keeps their dtype): a jax.lax.scan carry of "
    "half-precision state raises TypeError",
)
def state_upcast(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    def change(tx: Any) -> Any:
        def update(g: Any, s: Any, params: Any = None) -> Any:
            u, s = tx.update(g, s, params)
            return u, jax.tree.map(lambda x: x.astype(jnp.float32) if jnp.issubdtype(x.dtype, jnp.floating) else x, s)

        return optax.GradientTransformation(tx.init, update)

    return _around(change)


@mutant("surface-corners-wrappers-half-nan", "updates of bfloat16/float16 params come out NaN")
def half_nan(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    def change(tx: Any) -> Any:
        def update(g: Any, s: Any, params: Any = None) -> Any:
            u, s = tx.update(g, s, params)
            return jax.tree.map(lambda x: x * jnp.nan if x.dtype in (jnp.bfloat16, jnp.float16) else x, u), s

        return optax.GradientTransformation(tx.init, update)

    return _around(change)


@mutant(
    "surface-corners-wrappers-imag-dropped", "updates of complex params lose their imaginary part (their dtype kept)"
)
def imag_dropped(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    def change(tx: Any) -> Any:
        def update(g: Any, s: Any, params: Any = None) -> Any:
            u, s = tx.update(g, s, params)
            return jax.tree.map(lambda x: jnp.real(x).astype(x.dtype) if jnp.iscomplexobj(x) else x, u), s

        return optax.GradientTransformation(tx.init, update)

    return _around(change)


@mutant(
    "surface-corners-wrappers-mixed-promoted",
    "init promotes the state of a tree that mixes dtypes to its widest floating dtype",
)
def mixed_promoted(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    def change(tx: Any) -> Any:
        def init(params: Any) -> Any:
            s = tx.init(params)
            floats = [x.dtype for x in jax.tree.leaves(params) if jnp.issubdtype(x.dtype, jnp.inexact)]
            if len(set(floats)) < 2:
                return s
            wide = jnp.result_type(*floats)
            return jax.tree.map(lambda x: x.astype(wide) if jnp.issubdtype(x.dtype, jnp.floating) else x, s)

        return optax.GradientTransformation(init, tx.update)

    return _around(change)
