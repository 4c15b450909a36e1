"""Mutants of the skip functions and of MultiSteps' use of them (``tests/contracts/test_skip_functions.py``):
inf not counted as non-finite, the norm compared unsquared, an empty tree counted in int32, complex updates
squared by their modulus (the baseline's defect fixed), a count one too high, a squared norm 25% too large, a NaN
norm not skipped, every update skipped, and MultiSteps applying a step its function skips."""

from __future__ import annotations

import functools
from typing import Any

from optax_gate.mutants.registry import family

mutant = family("skip_functions", "tests/contracts/test_skip_functions.py")


def _after(optax: Any, name: str, change: Any) -> Any:
    """``{name: optax.<name> whose (skip, info) goes through change(skip, info, updates)}``."""
    orig = getattr(optax, name)

    @functools.wraps(orig)
    def fn(updates: Any, gradient_step: Any, params: Any, *args: Any, **kwargs: Any) -> Any:
        skip, info = orig(updates, gradient_step, params, *args, **kwargs)
        return change(skip, info, updates)

    return {name: fn}


@mutant("skip-functions-inf-finite", "skip_not_finite counts NaN only: an inf update is not skipped")
def inf_finite(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    def skip_not_finite(updates: Any, gradient_step: Any, params: Any) -> Any:
        n = sum((jnp.sum(jnp.isnan(x)) for x in jax.tree.leaves(updates)), jnp.int32(0))
        return n > 0, {"should_skip": n > 0, "num_not_finite": n}

    return {"skip_not_finite": skip_not_finite}


@mutant(
    "skip-functions-norm-unsquared",
    "skip_large_updates compares the global norm, not its square, with max_squared_norm",
)
def norm_unsquared(optax: Any) -> Any:
    import jax.numpy as jnp

    orig = optax.skip_large_updates

    @functools.wraps(orig)
    def skip_large_updates(updates: Any, gradient_step: Any, params: Any, max_squared_norm: Any) -> Any:
        _, info = orig(updates, gradient_step, params, max_squared_norm)
        skip = jnp.logical_not(jnp.sqrt(jnp.real(info["norm_squared"])) < max_squared_norm)
        return skip, {**info, "should_skip": skip}

    return {"skip_large_updates": skip_large_updates}


@mutant(
    "skip-functions-empty-int",
    "skip_not_finite counts an empty tree's non-finite elements as an int32 0 (the baseline: float32)",
)
def empty_int(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    return _after(
        optax,
        "skip_not_finite",
        lambda skip, info, u: (skip, info if jax.tree.leaves(u) else {**info, "num_not_finite": jnp.int32(0)}),
    )


@mutant(
    "skip-functions-complex-modulus",
    "skip_large_updates squares complex updates by their modulus (sum |u|**2), a real number",
)
def complex_modulus(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    def skip_large_updates(updates: Any, gradient_step: Any, params: Any, max_squared_norm: Any) -> Any:
        norm = sum(
            (jnp.sum(jnp.abs(x) ** 2) if jnp.iscomplexobj(x) else jnp.sum(x**2) for x in jax.tree.leaves(updates)),
            jnp.float32(0),
        )
        skip = jnp.logical_not(norm < max_squared_norm)
        return skip, {"should_skip": skip, "norm_squared": norm}

    return {"skip_large_updates": skip_large_updates}


@mutant("skip-functions-multisteps-ignores", "MultiSteps applies the update its should_skip_update_fn says to skip")
def multisteps_ignores(optax: Any) -> Any:
    import jax.numpy as jnp

    orig = optax.MultiSteps

    class MultiSteps(orig):  # type: ignore[valid-type, misc]  # optax's class, read as Any
        def __init__(
            self,
            opt: Any,
            every_k_schedule: Any,
            use_grad_mean: Any = True,
            should_skip_update_fn: Any = None,
            **kwargs: Any,
        ) -> None:
            def never(updates: Any, gradient_step: Any, params: Any) -> Any:
                _, info = should_skip_update_fn(updates, gradient_step, params)
                return jnp.zeros((), bool), {**info, "should_skip": jnp.zeros((), bool)}

            super().__init__(
                opt,
                every_k_schedule,
                use_grad_mean,
                should_skip_update_fn=never if should_skip_update_fn else None,
                **kwargs,
            )

    return {"MultiSteps": MultiSteps}


@mutant(
    "skip-functions-count-plus-one",
    "skip_not_finite counts one non-finite element more than there are (a finite update is skipped)",
)
def count_plus_one(optax: Any) -> Any:
    def change(skip: Any, info: Any, updates: Any) -> Any:
        n = info["num_not_finite"] + 1
        return n > 0, {"should_skip": n > 0, "num_not_finite": n}

    return _after(optax, "skip_not_finite", change)


@mutant(
    "skip-functions-norm-scaled", "skip_large_updates reports a squared norm 25% too large (its decision unchanged)"
)
def norm_scaled(optax: Any) -> Any:
    return _after(
        optax, "skip_large_updates", lambda skip, info, u: (skip, {**info, "norm_squared": info["norm_squared"] * 1.25})
    )


@mutant("skip-functions-nan-kept", "skip_large_updates does not skip a NaN squared norm")
def nan_kept(optax: Any) -> Any:
    import jax.numpy as jnp

    def change(skip: Any, info: Any, updates: Any) -> Any:
        skip = jnp.logical_and(skip, jnp.logical_not(jnp.isnan(jnp.real(info["norm_squared"]))))
        return skip, {**info, "should_skip": skip}

    return _after(optax, "skip_large_updates", change)


@mutant("skip-functions-large-always", "skip_large_updates skips every update, whatever its norm")
def large_always(optax: Any) -> Any:
    import jax.numpy as jnp

    return _after(
        optax,
        "skip_large_updates",
        lambda skip, info, u: (jnp.ones((), bool), {**info, "should_skip": jnp.ones((), bool)}),
    )
