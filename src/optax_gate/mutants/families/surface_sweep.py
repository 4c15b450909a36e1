"""Mutants of the generated sweep contracts
(``tests/contracts/test_surface_sweep.py``): public names removed or aliases
split, every call failing, results drifting, schedules that differ under
``jax.jit``, losses whose reverse-mode gradient is wrong, and the pinned
baseline defects repaired. Each one patches the modules itself and returns {}.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

from optax_gate.mutants.patches import traced
from optax_gate.mutants.registry import family

mutant = family("surface_sweep", "tests/contracts/test_surface_sweep.py")


def _split(path: str) -> tuple[Any, str]:
    module, _, attr = path.rpartition(".")
    return importlib.import_module(module), attr


def replace_paths(paths: Any, make: Any) -> dict[str, Any]:
    """Set each path to ``make(original, path)`` (aliases untouched unless named)."""
    for path in paths:
        module, attr = _split(path)
        setattr(module, attr, make(getattr(module, attr), path))
    return {}


def replace_updates(optax: Any, paths: Any, around: Any) -> dict[str, Any]:
    """Each factory at ``paths`` returns its transformation with ``update`` replaced by ``around(tx)`` (its
    ``init`` kept; a ``GradientTransformationExtraArgs``, so that extra arguments still reach it)."""

    def make(orig: Any, path: Any) -> Any:
        @functools.wraps(orig)
        def factory(*args: Any, **kwargs: Any) -> Any:
            tx = orig(*args, **kwargs)
            return optax.GradientTransformationExtraArgs(tx.init, around(tx))

        return factory

    return replace_paths(paths, make)


def _canonical() -> list[str]:
    from optax_gate.kit.surface.calls import CALLS, LEFT_OUT
    from optax_gate.kit.surface.table import TRANSFORMATIONS

    return [*TRANSFORMATIONS, *CALLS, *LEFT_OUT]


@mutant("surface-sweep-removed", "every canonical public callable replaced by a non-callable (a removed API)")
def removed(optax: Any) -> Any:
    return replace_paths(_canonical(), lambda orig, path: None)


@mutant("surface-sweep-alias-split", "every alias becomes a distinct wrapper of its canonical function")
def alias_split(optax: Any) -> Any:
    from optax_gate.kit.surface.calls import CALLS
    from optax_gate.kit.surface.table import TRANSFORMATIONS

    aliases = [a for e in TRANSFORMATIONS.values() for a in e.aliases]
    aliases += [a for _, names, _ in CALLS.values() for a in names]
    return replace_paths(aliases, lambda orig, path: functools.wraps(orig)(lambda *a, **k: orig(*a, **k)))


def callables(kind: Any = None) -> list[str]:
    from optax_gate.kit.surface.calls import CALLS, EXPECT

    return [p for p, (k, _, _) in CALLS.items() if (kind is None or k == kind) and p not in EXPECT]


@mutant("surface-sweep-call-fails", "every swept callable raises TypeError when called")
def call_fails(optax: Any) -> Any:
    def make(orig: Any, path: Any) -> Any:
        @functools.wraps(orig)
        def f(*a: Any, **k: Any) -> None:
            raise TypeError(f"{path} refuses its arguments")

        return f

    return replace_paths(callables(), make)


def map_floats(result: Any, fn: Any) -> Any:
    import jax
    import jax.numpy as jnp

    def leaf(x: Any) -> Any:
        if isinstance(x, (jax.Array, float)) and jnp.issubdtype(jnp.asarray(x).dtype, jnp.floating):
            return fn(x)
        return x

    return jax.tree.map(leaf, result)


@mutant("surface-sweep-values-drift", "every float result of a swept call (and of a schedule) shifted by 1e-2")
def values_drift(optax: Any) -> Any:
    def shifted(result: Any) -> Any:
        if callable(result) and not hasattr(result, "shape"):  # a schedule or a loss factory
            return functools.wraps(result)(lambda *a, **k: shifted(result(*a, **k)))
        return map_floats(result, lambda x: x + 1e-2)

    return replace_paths(callables(), lambda orig, path: functools.wraps(orig)(lambda *a, **k: shifted(orig(*a, **k))))


@mutant("surface-sweep-schedule-jit-differs", "schedules shifted by 1e-3 only under jax.jit")
def schedule_jit(optax: Any) -> Any:
    def make(orig: Any, path: Any) -> Any:
        @functools.wraps(orig)
        def factory(*a: Any, **k: Any) -> Any:
            schedule = orig(*a, **k)
            return lambda count: schedule(count) + 1e-3 if traced(count) else schedule(count)

        return factory

    return replace_paths(callables("schedule"), make)


@mutant("surface-sweep-loss-grad-wrong", "losses get a custom reverse-mode rule (twice the gradient, no forward mode)")
def loss_grad(optax: Any) -> Any:
    import jax

    def make(orig: Any, path: Any) -> Any:
        @functools.wraps(orig)
        def loss(x: Any, *rest: Any, **k: Any) -> Any:
            @jax.custom_vjp
            def f(y: Any) -> Any:
                return orig(y, *rest, **k)

            def fwd(y: Any) -> Any:
                out, vjp = jax.vjp(lambda z: orig(z, *rest, **k), y)
                return out, vjp

            def bwd(vjp: Any, ct: Any) -> Any:
                (g,) = vjp(ct)
                return (2 * g,)

            f.defvjp(fwd, bwd)
            return f(x)

        return loss

    return replace_paths([p for p in callables("loss") if "make_" not in p], make)


@mutant("surface-sweep-repaired", "projection_box broadcasts scalar bounds (the pinned baseline defect repaired)")
def repaired(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    def box(tree: Any, lower: Any, upper: Any) -> Any:
        lo = lower if jax.tree.structure(lower) == jax.tree.structure(tree) else jax.tree.map(lambda _: lower, tree)
        hi = upper if jax.tree.structure(upper) == jax.tree.structure(tree) else jax.tree.map(lambda _: upper, tree)
        return jax.tree.map(jnp.clip, tree, lo, hi)

    def hypercube(tree: Any, scale: Any = 1) -> Any:
        return box(tree, 0, scale)

    module, _ = _split("optax.projections.projection_box")
    module.projection_box, module.projection_hypercube = box, hypercube
    return {}
