"""Shared building blocks of the mutants: PyTree maps, dtype casts, and
wrappers that post-process a ``GradientTransformation``'s updates, a
schedule's value or a loss. JAX and
Optax are imported inside each function, so importing this module is cheap."""

from __future__ import annotations

import functools
from typing import Any


def traced(tree: Any) -> bool:
    """Whether any leaf of ``tree`` is a JAX tracer (under ``jit``)."""
    import jax

    return any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(tree))


def tree_map(fn: Any, tree: Any, *rest: Any) -> Any:
    """``jax.tree.map(fn, tree, *rest)``."""
    import jax

    return jax.tree.map(fn, tree, *rest)


def to_f32(tree: Any) -> Any:
    """Every leaf of ``tree`` as a float32 array."""
    import jax.numpy as jnp

    return tree_map(lambda x: jnp.asarray(x, jnp.float32), tree)


def lenient(fn: Any) -> Any:
    """Pair leaves by flatten order and resize the second to the first's shape,
    so structure and shape mistakes no longer raise."""
    import jax
    import jax.numpy as jnp

    @functools.wraps(fn)
    def wrapped(a: Any, b: Any, *args: Any, **kwargs: Any) -> Any:
        la, treedef = jax.tree.flatten(a)
        lb = [jnp.resize(jnp.asarray(y), jnp.shape(x)) for x, y in zip(la, jax.tree.leaves(b), strict=False)]
        return fn(a, jax.tree.unflatten(treedef, lb), *args, **kwargs)

    return wrapped


def wrap_tx(tx: Any, update: Any = None, init: Any = None) -> Any:
    """``tx`` with its ``update`` and/or ``init`` replaced."""
    import optax

    return optax.GradientTransformation(init or tx.init, update or tx.update)


def with_update(optax: Any, tx: Any, change: Any, init: Any = None) -> Any:
    """``tx`` whose ``update`` passes its updates through ``change(updates,
    extra)`` (``extra``: the extra keyword arguments of that call, handed to
    the inner ``update`` as they came), and whose ``init`` is ``init`` when
    given; a ``GradientTransformationExtraArgs``, so that a value-driven
    transformation keeps taking ``value=``/``grad=``."""

    def update(updates: Any, state: Any, params: Any = None, **extra: Any) -> Any:
        u, s = tx.update(updates, state, params, **extra)
        return change(u, extra), s

    return optax.GradientTransformationExtraArgs(init or tx.init, update)


def upcast(updates: Any, grads: Any) -> Any:
    """A :func:`post_process` that returns the updates as float32 whatever their dtype."""
    return to_f32(updates)


def perturbed_under_jit(updates: Any, grads: Any) -> Any:
    """A :func:`post_process` that scales the updates by 1.001 under ``jit`` only."""
    return tree_map(lambda x: x * 1.001, updates) if traced(grads) else updates


def post_process(optax: Any, attr: str, post: Any) -> dict[str, Any]:
    """Replace the transformation factory ``optax.<attr>`` by one whose updates
    pass through ``post(updates, grads)``."""
    orig = getattr(optax, attr)

    def factory(*args: Any, **kwargs: Any) -> Any:
        tx = orig(*args, **kwargs)

        def update(g: Any, s: Any, params: Any = None) -> Any:
            u, s = tx.update(g, s, params)
            return post(u, g), s

        return wrap_tx(tx, update=update)

    return {attr: factory}


def state_cast(optax: Any, attr: str, cast: Any) -> dict[str, Any]:
    """Replace the transformation factory ``optax.<attr>`` by one whose state,
    from ``init`` and from every ``update``, passes through ``cast(state)``
    (the state-dtype mutants: e.g. moments kept in float32 whatever the
    params' dtype)."""
    orig = getattr(optax, attr)

    def factory(*args: Any, **kwargs: Any) -> Any:
        tx = orig(*args, **kwargs)

        def update(g: Any, s: Any, params: Any = None) -> Any:
            u, s = tx.update(g, s, params)
            return u, cast(s)

        return wrap_tx(tx, init=lambda p: cast(tx.init(p)), update=update)

    return {attr: factory}


def first_state_f32(*fields: str) -> Any:
    """A ``cast`` for :func:`state_cast`: the named fields of the first state
    of a chain (``state[0]``, a NamedTuple) in float32, the rest unchanged."""

    def cast(state: Any) -> Any:
        return (state[0]._replace(**{f: to_f32(getattr(state[0], f)) for f in fields}), *tuple(state[1:]))

    return cast


def none_as_zeros(tree: Any) -> Any:
    """``tree`` with each None leaf a zero array."""
    import jax
    import jax.numpy as jnp

    return jax.tree.map(lambda x: jnp.zeros(1) if x is None else x, tree, is_leaf=lambda x: x is None)


def nan_to_zero(tree: Any) -> Any:
    """``tree`` with each NaN and infinity set to 0."""
    import jax.numpy as jnp

    return tree_map(lambda x: jnp.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0), tree)


def schedule_post(optax: Any, attr: str, post: Any) -> dict[str, Any]:
    """Replace the schedule factory ``optax.<attr>`` by one whose schedule's
    value passes through ``post(value, step)``."""
    orig = getattr(optax, attr)

    def factory(*args: Any, **kwargs: Any) -> Any:
        schedule = orig(*args, **kwargs)
        return lambda step: post(schedule(step), step)

    return {attr: factory}


def loss_post(optax: Any, attr: str, post: Any) -> dict[str, Any]:
    """``optax.<attr>`` (a loss) whose result passes through ``post(result, first_arg)``;
    the signature is kept (``functools.wraps``)."""
    import functools

    orig = getattr(optax, attr)

    @functools.wraps(orig)
    def f(*args: Any, **kwargs: Any) -> Any:
        first = args[0] if args else next(iter(kwargs.values()))
        return post(orig(*args, **kwargs), first)

    return {attr: f}


def value_perturbed_under_jit(value: Any, probe: Any) -> Any:
    """``value`` (a schedule's value, a loss) scaled by 1.001 when ``probe`` (the step, the first argument) is
    traced."""
    return value * 1.001 if traced(probe) else value


def hyperparams_in(optax: Any, dtype: str, unless_given: bool = True) -> dict[str, Any]:
    """``optax.inject_hyperparams`` with its ``hyperparam_dtype`` set to ``jnp.<dtype>`` (unless one is given
    and ``unless_given``): float32 whatever the params' dtype is what optax 0.2.8 does for a Python float."""
    import jax.numpy as jnp

    orig, cast = optax.inject_hyperparams, getattr(jnp, dtype)
    return {
        "inject_hyperparams": lambda factory, *a, **k: orig(
            factory, *a, **{**k, "hyperparam_dtype": (k.get("hyperparam_dtype") if unless_given else None) or cast}
        )
    }
