"""Mutants of the generated transformation contracts
(``tests/contracts/test_surface_transformations.py``).

Each mutant wraps *every* factory of the surface table at once (so that every
generated contract fails under at least one of them): the factory still takes
its arguments (``functools.wraps`` keeps its signature for the by-name
filling) and returns a transformation whose ``init``/``update`` is perturbed in
one way: extra arguments refused or accepted, a state leaf whose dtype
changes, updates that differ only under ``jax.jit``, NaN for all-zero
gradients, NaN everywhere once any gradient or param is non-finite, a ``None`` leaf refused, a rank-0 update reshaped,
two float
hyperparameters swapped, or a
"repaired" transformation (errors swallowed, shapes and non-finite values
fixed, weak types made strong) that removes every pinned baseline defect.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

from optax_gate.mutants.patches import traced
from optax_gate.mutants.registry import family

mutant = family("surface_transformations", "tests/contracts/test_surface_transformations.py")


def every_transformation(make: Any) -> dict[str, Any]:
    """Replace each table factory (on its own module) by one whose built
    transformation passes through ``make(tx)``; a factory that returns a
    factory (``inject_hyperparams``) is wrapped one level down. Returns {}:
    the attributes are set here, on sub-modules too."""
    from optax_gate.kit.surface.table import TRANSFORMATIONS

    def wrap_result(result: Any) -> Any:
        if hasattr(result, "init") and hasattr(result, "update"):
            return make(result)
        if callable(result):
            return functools.wraps(result)(lambda *a, **k: wrap_result(result(*a, **k)))
        return result

    for path, entry in TRANSFORMATIONS.items():
        if entry.left_out:
            continue
        module_name, _, attr = path.rpartition(".")
        module = importlib.import_module(module_name)
        orig = getattr(module, attr)
        setattr(module, attr, functools.wraps(orig)(lambda *a, _orig=orig, **k: wrap_result(_orig(*a, **k))))
    return {}


def make_transformation(init: Any, update: Any) -> Any:
    import optax

    return optax.GradientTransformationExtraArgs(init, update)


@mutant("surface-refuse-extra-args", "update refuses every extra keyword argument (TypeError)")
def refuse_extra(optax: Any) -> Any:
    def make(tx: Any) -> Any:
        def update(u: Any, s: Any, params: Any = None, **extra: Any) -> Any:
            if extra:
                raise TypeError(f"unexpected keyword arguments {sorted(extra)}")
            return tx.update(u, s, params)

        return make_transformation(tx.init, update)

    return every_transformation(make)


@mutant("surface-accept-extra-args", "update accepts any extra argument, a Python float value= as an array")
def accept_extra(optax: Any) -> Any:
    import inspect

    import jax.numpy as jnp

    def make(tx: Any) -> Any:
        takes_extra = any(p.kind == p.VAR_KEYWORD for p in inspect.signature(tx.update).parameters.values())

        def update(u: Any, s: Any, params: Any = None, **extra: Any) -> Any:
            if not takes_extra:
                return tx.update(u, s, params)
            if isinstance(extra.get("value"), float):
                extra["value"] = jnp.asarray(extra["value"], jnp.float32)
            return tx.update(u, s, params, **extra)

        return make_transformation(tx.init, update)

    return every_transformation(make)


@mutant("surface-state-dtype", "the state gains a float16 leaf that update returns as float32")
def state_dtype(optax: Any) -> Any:
    import jax.numpy as jnp

    def make(tx: Any) -> Any:
        def update(u: Any, s: Any, params: Any = None, **extra: Any) -> Any:
            u, inner = tx.update(u, s[0], params, **extra)
            return u, (inner, jnp.zeros((), jnp.float32))

        return make_transformation(lambda p: (tx.init(p), jnp.zeros((), jnp.float16)), update)

    return every_transformation(make)


def post_every(post: Any) -> dict[str, Any]:
    """Every table factory's updates passed through ``post(updates, grads,
    params)`` after the real ``update`` (the state as it returns it)."""

    def make(tx: Any) -> Any:
        def update(g: Any, s: Any, params: Any = None, **extra: Any) -> Any:
            u, s = tx.update(g, s, params, **extra)
            return post(u, g, params), s

        return make_transformation(tx.init, update)

    return every_transformation(make)


@mutant("surface-jit-differs", "updates scaled by 1.001 and shifted by 1e-3 only under jax.jit")
def jit_differs(optax: Any) -> Any:
    import jax

    # scaled and shifted: a pure shift cancels where a wrapper negates an inner update (contrib.sam)
    return post_every(lambda u, g, params: jax.tree.map(lambda x: x * 1.001 + 1e-3, u) if traced(g) else u)


@mutant("surface-nan-for-zero-grads", "NaN updates when every gradient is zero")
def nan_zero_grads(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    def post(u: Any, g: Any, params: Any) -> Any:
        total = sum(jnp.sum(jnp.abs(x)) for x in jax.tree.leaves(g))
        return jax.tree.map(lambda x: x + jnp.where(total == 0, jnp.nan, 0.0).astype(x.dtype), u)

    return post_every(post)


@mutant("surface-nonfinite-spreads", "a NaN or inf anywhere in the gradients or params makes every update leaf NaN")
def nonfinite_spreads(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    def post(u: Any, g: Any, params: Any) -> Any:
        total = sum(jnp.sum(x) for x in jax.tree.leaves((g, params)))
        return jax.tree.map(lambda x: x + (0.0 * total).astype(x.dtype), u)

    return post_every(post)


@mutant("surface-none-leaf-refused", "update raises TypeError for a None gradient leaf")
def none_refused(optax: Any) -> Any:
    import jax

    def make(tx: Any) -> Any:
        def update(g: Any, s: Any, params: Any = None, **extra: Any) -> Any:
            if any(x is None for x in jax.tree.leaves(g, is_leaf=lambda x: x is None)):
                raise TypeError("None gradient leaf")
            return tx.update(g, s, params, **extra)

        return make_transformation(tx.init, update)

    return every_transformation(make)


@mutant("surface-scalar-reshaped", "rank-0 update leaves come back with shape (1,)")
def scalar_reshaped(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    return post_every(lambda u, g, params: jax.tree.map(lambda x: jnp.reshape(x, (1,)) if jnp.ndim(x) == 0 else x, u))


@mutant("surface-repaired", "errors swallowed, update shapes and non-finite values fixed, weak types made strong")
def repaired(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    def strong(tree: Any) -> Any:
        return jax.tree.map(lambda x: jnp.asarray(x) + jnp.zeros((), jnp.asarray(x).dtype), tree)

    def make(tx: Any) -> Any:
        def init(p: Any) -> Any:
            try:
                return strong(tx.init(p))
            except Exception:
                return ()

        def update(g: Any, s: Any, params: Any = None, **extra: Any) -> Any:
            try:
                u, s = tx.update(g, s, params, **extra)
            except Exception:
                return jax.tree.map(jnp.zeros_like, g), s
            if params is not None:
                u = jax.tree.map(
                    lambda x, p: x if x is None else jnp.reshape(x, jnp.shape(p)) if jnp.size(x) == jnp.size(p) else x,
                    u,
                    params,
                    is_leaf=lambda x: x is None,
                )
            return jax.tree.map(lambda x: jnp.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0), u), strong(s)

        return make_transformation(init, update)

    return every_transformation(make)


@mutant("surface-swapped-args", "each factory's first two float hyperparameters with defaults swapped (b1 for b2, ...)")
def swapped_args(optax: Any) -> Any:
    import inspect

    from optax_gate.kit.surface.table import TRANSFORMATIONS

    for path, entry in TRANSFORMATIONS.items():
        if entry.left_out or entry.builder is not None:
            continue
        owner, _, attr = path.rpartition(".")
        module = importlib.import_module(owner)
        orig = getattr(module, attr)
        floats = [
            p.name
            for p in inspect.signature(orig).parameters.values()
            if isinstance(p.default, float) and not isinstance(p.default, bool)
        ][:2]
        if len(floats) < 2:
            continue

        def factory(*a: Any, _orig: Any = orig, _names: Any = tuple(floats), **k: Any) -> Any:
            bound = inspect.signature(_orig).bind_partial(*a, **k)
            bound.apply_defaults()
            x, y = _names
            bound.arguments[x], bound.arguments[y] = bound.arguments[y], bound.arguments[x]
            return _orig(*bound.args, **bound.kwargs)

        setattr(module, attr, functools.wraps(orig)(factory))
    return {}
