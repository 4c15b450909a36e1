"""Mutants of the losses' corner grid
(``tests/contracts/test_surface_corners_losses.py``): forward-mode
differentiation refused (a loss behind ``jax.custom_vjp``), a NaN in forward
mode at a ``-inf`` logit only, broadcastable targets refused, integer
inputs refused, and a hyperparameter given as an array or NumPy scalar refused. Each one patches the losses' canonical
paths and returns {}.
"""

from __future__ import annotations

from typing import Any

from optax_gate.mutants.families.surface_loss_edges import wrap_loss
from optax_gate.mutants.registry import family

mutant = family("surface_corners_losses", "tests/contracts/test_surface_corners_losses.py")


@mutant(
    "surface-corners-losses-no-forward-mode",
    "every loss sits behind jax.custom_vjp (its reverse rule kept): jax.jvp/jax.jacfwd raise TypeError",
)
def no_forward_mode(optax: Any) -> Any:
    import jax

    def change(orig: Any, path: Any, args: Any, kwargs: Any) -> Any:
        rest = args[1:]

        @jax.custom_vjp
        def f(x: Any) -> Any:
            return orig(x, *rest, **kwargs)

        def fwd(x: Any) -> Any:
            return jax.vjp(lambda x: orig(x, *rest, **kwargs), x)

        def bwd(vjp: Any, ct: Any) -> Any:
            return vjp(ct)

        f.defvjp(fwd, bwd)
        return f(args[0])

    return wrap_loss(change)


@mutant(
    "surface-corners-losses-neg-inf-jvp-nan",
    "forward-mode derivatives at a -inf entry of the first argument are NaN (reverse mode unchanged)",
)
def neg_inf_jvp_nan(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    def change(orig: Any, path: Any, args: Any, kwargs: Any) -> Any:
        rest = args[1:]
        x0 = jnp.asarray(args[0])
        if not jnp.issubdtype(x0.dtype, jnp.floating):
            return orig(*args, **kwargs)

        @jax.custom_jvp
        def f(x: Any) -> Any:
            return orig(x, *rest, **kwargs)

        @f.defjvp
        def f_jvp(primals: Any, tangents: Any) -> Any:
            (x,), (t,) = primals, tangents
            out, tan = jax.jvp(lambda x: orig(x, *rest, **kwargs), (x,), (t,))
            poison = jnp.where(jnp.any(jnp.isneginf(x)) & jnp.any(t != 0) & jnp.all(t == 1), jnp.nan, 0.0)
            return out, jax.tree.map(lambda v: v + poison, tan)

        return f(x0)

    return wrap_loss(change)


@mutant(
    "surface-corners-losses-broadcast-refused",
    "a loss refuses targets whose shape differs from the first argument's (ValueError), broadcastable or not",
)
def broadcast_refused(optax: Any) -> Any:
    import jax.numpy as jnp

    def change(orig: Any, path: Any, args: Any, kwargs: Any) -> Any:
        if (
            len(args) > 1
            and hasattr(args[1], "shape")
            and jnp.ndim(args[1]) == jnp.ndim(args[0])
            and jnp.shape(args[1]) != jnp.shape(args[0])
        ):
            raise ValueError(f"{path}: shapes {jnp.shape(args[0])} and {jnp.shape(args[1])} differ")
        return orig(*args, **kwargs)

    return wrap_loss(change)


@mutant("surface-corners-losses-int-refused", "a loss refuses an integer first argument (TypeError)")
def int_refused(optax: Any) -> Any:
    import jax.numpy as jnp

    def change(orig: Any, path: Any, args: Any, kwargs: Any) -> Any:
        if jnp.issubdtype(jnp.asarray(args[0]).dtype, jnp.integer):
            raise TypeError(f"{path}: integer input")
        return orig(*args, **kwargs)

    return wrap_loss(change)


@mutant(
    "surface-corners-losses-array-hyper-refused",
    "a loss refuses a hyperparameter given as an array or a NumPy scalar (TypeError: 'expected a Python "
    "float'); arrays of inputs are taken",
)
def array_hyper_refused(optax: Any) -> Any:
    import numpy as np

    def change(orig: Any, path: Any, args: Any, kwargs: Any) -> Any:
        if any(isinstance(v, np.generic) or getattr(v, "shape", None) == () for v in [*args[1:], *kwargs.values()]):
            raise TypeError(f"{path}: expected a Python float hyperparameter")
        return orig(*args, **kwargs)

    return wrap_loss(change)
