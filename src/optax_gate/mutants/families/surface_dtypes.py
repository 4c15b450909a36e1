"""Mutants of the generated dtype variants of ``init_update``
(``tests/contracts/test_surface_dtypes.py``): every table factory (wrapped as
in ``surface_transformations``) returning float32 updates for bfloat16 ones,
float32 updates for float64 ones (a cast left in that x64 code meets), NaN
for float16 ones (an overflow of the half range), dropping the imaginary part
of complex updates, or refusing a PyTree that is not float32 at ``init``.
"""

from __future__ import annotations

from typing import Any

from optax_gate.mutants.families.surface_transformations import every_transformation, make_transformation, post_every
from optax_gate.mutants.registry import family

mutant = family("surface_dtypes", "tests/contracts/test_surface_dtypes.py")


def _map_updates(change: Any) -> Any:
    """Every transformation's updates passed leaf by leaf through ``change``."""
    import jax

    return post_every(lambda u, g, params: jax.tree.map(change, u))


@mutant("surface-dtypes-bf16-to-f32", "bfloat16 updates come out as float32 (an upcast left in)")
def bf16_to_f32(optax: Any) -> Any:
    import jax.numpy as jnp

    return _map_updates(lambda x: x.astype(jnp.float32) if jnp.asarray(x).dtype == jnp.bfloat16 else x)


@mutant("surface-dtypes-f64-to-f32", "float64 updates come out as float32 (under x64: a cast to float32 left in)")
def f64_to_f32(optax: Any) -> Any:
    import jax.numpy as jnp

    return _map_updates(lambda x: x.astype(jnp.float32) if jnp.asarray(x).dtype == jnp.float64 else x)


@mutant("surface-dtypes-f16-overflow", "float16 updates overflow to NaN (a float16 intermediate past its range)")
def f16_overflow(optax: Any) -> Any:
    import jax.numpy as jnp

    return _map_updates(lambda x: x * jnp.float16(jnp.nan) if jnp.asarray(x).dtype == jnp.float16 else x)


@mutant("surface-dtypes-complex-real", "complex updates lose their imaginary part (real float32 updates)")
def complex_real(optax: Any) -> Any:
    import jax.numpy as jnp

    return _map_updates(lambda x: jnp.real(x) if jnp.iscomplexobj(x) else x)


@mutant("surface-dtypes-refuse", "init refuses params that are not float32 (NotImplementedError)")
def refuse(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    def make(tx: Any) -> Any:
        def init(params: Any) -> Any:
            if any(jnp.asarray(x).dtype != jnp.float32 for x in jax.tree.leaves(params)):
                raise NotImplementedError("only float32 params")
            return tx.init(params)

        return make_transformation(init, tx.update)

    return every_transformation(make)
