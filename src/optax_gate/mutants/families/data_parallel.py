"""Mutants of the data-parallel step: deliberately broken variants that the
contracts of ``tests/contracts/multidevice/test_data_parallel.py`` must catch.
They patch ``jax.lax`` collectives and ``jax.shard_map`` themselves (the
contracts pin JAX's behaviour as much as Optax's) or ``optax.MultiSteps``."""

from __future__ import annotations

from typing import Any

from optax_gate.mutants.registry import family

mutant = family("dataparallel", "tests/contracts/multidevice/test_data_parallel.py")


@mutant("dp-pmean-as-psum", "jax.lax.pmean sums over the axis instead of averaging")
def _(optax: Any) -> Any:
    import jax

    jax.lax.pmean = jax.lax.psum
    return {}


@mutant("dp-drop-device-shard", "psum and pmean leave out device 0's contribution")
def _(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    def dropping(orig: Any) -> Any:
        def f(x: Any, axis_name: Any, **kw: Any) -> Any:
            keep = jax.lax.axis_index(axis_name) != 0
            return orig(jax.tree.map(lambda a: jnp.where(keep, a, jnp.zeros_like(a)), x), axis_name, **kw)

        return f

    jax.lax.psum, jax.lax.pmean = dropping(jax.lax.psum), dropping(jax.lax.pmean)
    return {}


@mutant("dp-lenient-axes", "an axis name the mesh lacks falls back to its first axis (in_specs, pmean)")
def _(optax: Any) -> Any:
    import jax
    from jax.sharding import PartitionSpec

    orig_pmean, orig_shard_map = jax.lax.pmean, jax.shard_map

    def pmean(x: Any, axis_name: Any, **kw: Any) -> Any:
        try:
            return orig_pmean(x, axis_name, **kw)
        except (AssertionError, NameError):
            return orig_pmean(x, "data", **kw)

    def shard_map(f: Any, *, mesh: Any, in_specs: Any, out_specs: Any, **kw: Any) -> Any:
        fix = lambda s: PartitionSpec(*(a if a is None or a in mesh.axis_names else mesh.axis_names[0] for a in s))  # noqa: E731
        in_specs = jax.tree.map(fix, in_specs, is_leaf=lambda s: isinstance(s, PartitionSpec))
        return orig_shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, **kw)

    jax.lax.pmean, jax.shard_map = pmean, shard_map
    return {}


@mutant(
    "dp-multisteps-reduces-every-call",
    "MultiSteps averages each micro-batch over 'data' before accumulating (k reductions, not one)",
)
def _(optax: Any) -> Any:
    import jax

    orig = optax.MultiSteps

    class Reducing(orig):  # type: ignore[valid-type, misc]  # optax's class, read as Any
        def update(self, updates: Any, state: Any, params: Any = None, **extra: Any) -> Any:
            return super().update(jax.lax.pmean(updates, "data"), state, params, **extra)

    return {"MultiSteps": Reducing}
