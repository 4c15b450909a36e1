"""Mutants of the hyperparameter range grid (``tests/contracts/test_surface_corners_ranges.py``): adafactor's
step offset clamped at step 0 (an open upstream pull request: offsets above 0 no longer give NaN), a rate of
exactly 1 read as 0.999, a zero or a large hyperparameter read as its default, a negative one read as its magnitude, and
integer hyperparameters rounded to even. Each one replaces the factories of the grid and returns {}.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

from optax_gate.mutants.families.surface_sweep import replace_paths
from optax_gate.mutants.patches import with_update
from optax_gate.mutants.registry import family

mutant = family("surface_corners_ranges", "tests/contracts/test_surface_corners_ranges.py")


def _paths() -> list[str]:
    from optax_gate.kit.corners.ranges import range_grid

    return list(dict.fromkeys(path for path, _ in range_grid()))


def _changing(change: Any) -> Any:
    """Every grid factory called with each numeric keyword argument ``v`` of name ``k`` and default ``d`` as
    ``change(k, v, d)``."""

    def make(orig: Any, path: Any) -> Any:
        defaults = {n: p.default for n, p in inspect.signature(orig).parameters.items()}

        @functools.wraps(orig)
        def factory(*args: Any, **kwargs: Any) -> Any:
            return orig(
                *args, **{k: change(k, v, defaults.get(k)) if type(v) in (int, float) else v for k, v in kwargs.items()}
            )

        return factory

    return replace_paths(_paths(), make)


@mutant(
    "surface-corners-ranges-offset-clamped",
    "adafactor and scale_by_factored_rms clamp the local step (step - offset) at 0 (open upstream pull "
    "request 1791): a decay offset above 0 no longer gives NaN",
)
def offset_clamped(optax: Any) -> Any:
    import jax.numpy as jnp
    from optax._src import factorized

    pow_ = factorized._decay_rate_pow

    def clamped(i: Any, exponent: Any = 0.8) -> Any:
        return pow_(jnp.maximum(i, 0), exponent)

    orig = factorized.scale_by_factored_rms

    @functools.wraps(orig)
    def scale_by_factored_rms(*args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("decay_rate_fn", clamped)
        return orig(*args, **kwargs)

    factorized.scale_by_factored_rms = scale_by_factored_rms
    optax.scale_by_factored_rms = scale_by_factored_rms
    return {}


@mutant("surface-corners-ranges-rate-edge", "a rate or decay of exactly 1 (b2=1, decay=1, momentum=1) is read as 0.999")
def rate_edge(optax: Any) -> Any:
    from optax_gate.kit.corners.ranges import RATE_NAME

    return _changing(lambda k, v, d: 0.999 if RATE_NAME.match(k) and v == 1.0 else v)


@mutant(
    "surface-corners-ranges-zero-default",
    "a hyperparameter given as 0 takes its default instead (a falsy value dropped: `x or default`)",
)
def zero_default(optax: Any) -> Any:
    return _changing(lambda k, v, d: d if v == 0 and type(d) in (int, float) else v)


@mutant(
    "surface-corners-ranges-large-default",
    "a float hyperparameter of 1000 or more is read as its default (an upper clamp)",
)
def large_default(optax: Any) -> Any:
    return _changing(lambda k, v, d: d if isinstance(v, float) and v >= 1e3 and type(d) in (int, float) else v)


@mutant("surface-corners-ranges-negative-magnitude", "a negative float hyperparameter is read as its magnitude")
def negative_magnitude(optax: Any) -> Any:
    return _changing(lambda k, v, d: abs(v) if isinstance(v, float) and v < 0 else v)


@mutant(
    "surface-corners-ranges-int-even",
    "an integer hyperparameter is rounded down to an even number (patience, offsets, steps)",
)
def int_even(optax: Any) -> Any:
    return _changing(lambda k, v, d: v - v % 2 if isinstance(v, int) and not isinstance(v, bool) else v)


@mutant(
    "surface-corners-ranges-starts-to-matter",
    "a hyperparameter off its default starts to take effect where it had none (radam's eps before rectification, "
    "lion's b1 on gradients of one sign): the update moves by 1%, a NaN update becomes 0",
)
def starts_to_matter(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    def make(orig: Any, path: Any) -> Any:
        defaults = {n: p.default for n, p in inspect.signature(orig).parameters.items()}

        @functools.wraps(orig)
        def factory(*args: Any, **kwargs: Any) -> Any:
            tx = orig(*args, **kwargs)
            if not any(type(v) in (int, float) and k in defaults and v != defaults[k] for k, v in kwargs.items()):
                return tx
            return with_update(
                optax,
                tx,
                lambda u, extra: jax.tree.map(lambda x: jnp.where(jnp.isfinite(x), x * 1.01, 0).astype(x.dtype), u),
            )

        return factory

    return replace_paths(_paths(), make)
