"""Mutants of Optax's step schedules (constant, linear, cosine decay,
warmup-cosine decay, exponential decay, piecewise constant, join): deliberately
broken variants that the contracts of ``tests/contracts/test_schedules.py``
must catch. At least four per API: a wrong constant, an off-by-one boundary, a
dtype change, a difference only under ``jax.jit``, a dropped check or clamp."""

from __future__ import annotations

from typing import Any

from optax_gate.mutants.patches import schedule_post
from optax_gate.mutants.registry import family
from optax_gate.mutants.shapes import jit_differs_value

mutant = family("schedules", "tests/contracts/test_schedules.py")


def _to(dtype_name: Any) -> Any:
    def post(value: Any, step: Any) -> Any:
        import jax.numpy as jnp

        return jnp.asarray(value, dtype_name)

    return post


def _float_step(optax: Any, attr: Any) -> Any:
    """The step is cast to a float of the default float width first: under x64
    an int32 step then gives a float64 value (the ledger defect disappears)."""
    orig = getattr(optax, attr)

    def factory(*args: Any, **kwargs: Any) -> Any:
        import jax.numpy as jnp

        schedule = orig(*args, **kwargs)
        return lambda step: schedule(jnp.asarray(step, jnp.result_type(float)))

    return {attr: factory}


# constant_schedule ------------------------------------------------------------


@mutant("constant-scaled", "returns 1.001 times the value")
def _(optax: Any) -> Any:
    orig = optax.constant_schedule
    return {"constant_schedule": lambda value: orig(value * 1.001)}


@mutant("constant-array", "returns a float32 array instead of the value itself")
def _(optax: Any) -> Any:
    return schedule_post(optax, "constant_schedule", _to("float32"))


jit_differs_value(mutant, "constant-jit-differs")


@mutant("constant-zero-before-start", "returns 0 for negative steps")
def _(optax: Any) -> Any:
    import jax.numpy as jnp

    return schedule_post(
        optax,
        "constant_schedule",
        lambda v, step: v if not isinstance(step, int) or step >= 0 else 0.0 * jnp.float32(v),
    )


# linear_schedule --------------------------------------------------------------


@mutant("linear-late-begin", "starts the transition one step after transition_begin")
def _(optax: Any) -> Any:
    orig = optax.linear_schedule
    return {
        "linear_schedule": lambda init_value, end_value, transition_steps, transition_begin=0: orig(
            init_value, end_value, transition_steps, transition_begin + 1
        )
    }


@mutant("linear-no-end-clamp", "keeps extrapolating past begin + transition_steps")
def _(optax: Any) -> Any:
    import jax.numpy as jnp

    def f(init_value: Any, end_value: Any, transition_steps: Any, transition_begin: Any = 0) -> Any:
        if transition_steps <= 0:
            return lambda count: init_value
        b = max(transition_begin, 0)
        return lambda count: init_value + jnp.maximum(count - b, 0) / transition_steps * (end_value - init_value)

    return {"linear_schedule": f}


@mutant("linear-float-step", "casts the step to a float first (float64 under x64)")
def _(optax: Any) -> Any:
    return _float_step(optax, "linear_schedule")


@mutant("linear-bfloat16", "returns a bfloat16 value")
def _(optax: Any) -> Any:
    return schedule_post(optax, "linear_schedule", _to("bfloat16"))


jit_differs_value(mutant, "linear-jit-differs")


@mutant("linear-negative-begin-kept", "does not reset a negative transition_begin to 0")
def _(optax: Any) -> Any:
    import jax.numpy as jnp

    def f(init_value: Any, end_value: Any, transition_steps: Any, transition_begin: Any = 0) -> Any:
        if transition_steps <= 0:
            return lambda count: init_value
        return lambda count: (
            init_value
            + jnp.clip(count - transition_begin, 0, transition_steps) / transition_steps * (end_value - init_value)
        )

    return {"linear_schedule": f}


# cosine_decay_schedule --------------------------------------------------------


@mutant("cosine-exponent-ignored", "ignores exponent")
def _(optax: Any) -> Any:
    orig = optax.cosine_decay_schedule
    return {
        "cosine_decay_schedule": lambda init_value, decay_steps, alpha=0.0, exponent=1.0: orig(
            init_value, decay_steps, alpha
        )
    }


@mutant("cosine-alpha-absolute", "floors at alpha itself, not alpha * init_value")
def _(optax: Any) -> Any:
    orig = optax.cosine_decay_schedule

    def f(init_value: Any, decay_steps: Any, alpha: Any = 0.0, exponent: Any = 1.0) -> Any:
        s = orig(init_value, decay_steps, 0.0, exponent)
        return lambda count: s(count) * (1 - alpha) + alpha

    return {"cosine_decay_schedule": f}


@mutant("cosine-one-step-longer", "decays over decay_steps + 1 steps")
def _(optax: Any) -> Any:
    orig = optax.cosine_decay_schedule
    return {
        "cosine_decay_schedule": lambda init_value, decay_steps, alpha=0.0, exponent=1.0: orig(
            init_value, decay_steps + 1 if decay_steps > 0 else decay_steps, alpha, exponent
        )
    }


@mutant("cosine-clamps-negative", "clamps negative steps to 0 (init_value)")
def _(optax: Any) -> Any:
    import jax.numpy as jnp

    orig = optax.cosine_decay_schedule

    def f(*args: Any, **kwargs: Any) -> Any:
        s = orig(*args, **kwargs)
        return lambda count: s(jnp.maximum(count, 0))

    return {"cosine_decay_schedule": f}


@mutant("cosine-accepts-zero-steps", "no ValueError for decay_steps <= 0: a constant schedule")
def _(optax: Any) -> Any:
    orig = optax.cosine_decay_schedule

    def f(init_value: Any, decay_steps: Any, alpha: Any = 0.0, exponent: Any = 1.0) -> Any:
        return (lambda count: init_value) if decay_steps <= 0 else orig(init_value, decay_steps, alpha, exponent)

    return {"cosine_decay_schedule": f}


@mutant("cosine-bfloat16", "returns a bfloat16 value")
def _(optax: Any) -> Any:
    return schedule_post(optax, "cosine_decay_schedule", _to("bfloat16"))


jit_differs_value(mutant, "cosine-jit-differs")


# warmup_cosine_decay_schedule -------------------------------------------------


def _warmup_cosine(
    optax: Any, warmup_shift: Any = 0, decay_includes_warmup: Any = True, alpha_is_end: Any = False, check: Any = True
) -> Any:
    """A re-assembly of warmup-cosine from the public pieces, with one detail changed."""

    def f(
        init_value: Any, peak_value: Any, warmup_steps: Any, decay_steps: Any, end_value: Any = 0.0, exponent: Any = 1.0
    ) -> Any:
        alpha = end_value if alpha_is_end else (0.0 if peak_value == 0.0 else end_value / peak_value)
        steps = decay_steps - warmup_steps if decay_includes_warmup else decay_steps
        if not check and steps <= 0:
            steps = 1
        return optax.join_schedules(
            [
                optax.linear_schedule(init_value, peak_value, warmup_steps + warmup_shift),
                optax.cosine_decay_schedule(peak_value, steps, alpha, exponent),
            ],
            [warmup_steps + warmup_shift],
        )

    return {"warmup_cosine_decay_schedule": f}


@mutant("warmup-cosine-late-peak", "reaches the peak one step after warmup_steps")
def _(optax: Any) -> Any:
    return _warmup_cosine(optax, warmup_shift=1)


@mutant(
    "warmup-cosine-decay-excludes-warmup", "cosine lasts decay_steps after the warmup, not decay_steps - warmup_steps"
)
def _(optax: Any) -> Any:
    return _warmup_cosine(optax, decay_includes_warmup=False)


@mutant("warmup-cosine-end-as-alpha", "uses end_value as the fraction alpha, not end_value / peak_value")
def _(optax: Any) -> Any:
    return _warmup_cosine(optax, alpha_is_end=True)


@mutant("warmup-cosine-accepts-empty-decay", "no ValueError when decay_steps == warmup_steps")
def _(optax: Any) -> Any:
    return _warmup_cosine(optax, check=False)


@mutant("warmup-cosine-float-step", "casts the step to a float first (float64 under x64)")
def _(optax: Any) -> Any:
    return _float_step(optax, "warmup_cosine_decay_schedule")


@mutant("warmup-cosine-bfloat16", "returns a bfloat16 value")
def _(optax: Any) -> Any:
    return schedule_post(optax, "warmup_cosine_decay_schedule", _to("bfloat16"))


jit_differs_value(mutant, "warmup-cosine-jit-differs")


# exponential_decay ------------------------------------------------------------


@mutant("exponential-staircase-ignored", "ignores staircase (always continuous)")
def _(optax: Any) -> Any:
    orig = optax.exponential_decay

    def exponential_decay(
        init_value: Any,
        transition_steps: Any,
        decay_rate: Any,
        transition_begin: Any = 0,
        staircase: Any = False,
        end_value: Any = None,
    ) -> Any:
        return orig(init_value, transition_steps, decay_rate, transition_begin, False, end_value)

    return {"exponential_decay": exponential_decay}


@mutant("exponential-begin-ignored", "ignores transition_begin")
def _(optax: Any) -> Any:
    orig = optax.exponential_decay

    def exponential_decay(
        init_value: Any,
        transition_steps: Any,
        decay_rate: Any,
        transition_begin: Any = 0,
        staircase: Any = False,
        end_value: Any = None,
    ) -> Any:
        return orig(init_value, transition_steps, decay_rate, 0, staircase, end_value)

    return {"exponential_decay": exponential_decay}


@mutant("exponential-end-other-side", "treats end_value as the opposite bound (min for rate < 1)")
def _(optax: Any) -> Any:
    import jax.numpy as jnp

    orig = optax.exponential_decay

    def f(
        init_value: Any,
        transition_steps: Any,
        decay_rate: Any,
        transition_begin: Any = 0,
        staircase: Any = False,
        end_value: Any = None,
    ) -> Any:
        s = orig(init_value, transition_steps, decay_rate, transition_begin, staircase)
        if end_value is None:
            return s
        clip = jnp.minimum if decay_rate < 1.0 else jnp.maximum
        return lambda count: clip(s(count), end_value)

    return {"exponential_decay": f}


@mutant("exponential-rate-off", "decays with rate * 1.001")
def _(optax: Any) -> Any:
    orig = optax.exponential_decay
    return {
        "exponential_decay": lambda init_value, transition_steps, decay_rate, *a, **k: orig(
            init_value, transition_steps, decay_rate * 1.001, *a, **k
        )
    }


@mutant("exponential-float-step", "casts the step to a float first (float64 under x64)")
def _(optax: Any) -> Any:
    return _float_step(optax, "exponential_decay")


@mutant("exponential-bfloat16", "returns a bfloat16 value")
def _(optax: Any) -> Any:
    return schedule_post(optax, "exponential_decay", _to("bfloat16"))


jit_differs_value(mutant, "exponential-jit-differs")


# piecewise_constant_schedule --------------------------------------------------


@mutant("piecewise-late-boundary", "switches one step after each boundary (t > b)")
def _(optax: Any) -> Any:
    orig = optax.piecewise_constant_schedule
    return {
        "piecewise_constant_schedule": lambda init_value, boundaries_and_scales=None: orig(
            init_value, None if boundaries_and_scales is None else {b + 1: s for b, s in boundaries_and_scales.items()}
        )
    }


@mutant("piecewise-not-cumulative", "applies only the latest boundary's scale, not the product")
def _(optax: Any) -> Any:
    import jax.numpy as jnp

    def f(init_value: Any, boundaries_and_scales: Any = None) -> Any:
        pairs = sorted((boundaries_and_scales or {}).items())
        if any(s < 0 for _, s in pairs):
            raise ValueError("`piecewise_constant_schedule` expects non-negative scale factors")

        def schedule(count: Any) -> Any:
            v = jnp.asarray(init_value, jnp.result_type(float))
            for b, s in pairs:
                v = jnp.where(count >= b, init_value * s, v)
            return v

        return schedule

    return {"piecewise_constant_schedule": f}


@mutant("piecewise-accepts-negative", "no ValueError for a negative scale")
def _(optax: Any) -> Any:
    orig = optax.piecewise_constant_schedule

    def f(init_value: Any, boundaries_and_scales: Any = None) -> Any:
        if boundaries_and_scales and any(s < 0 for s in boundaries_and_scales.values()):
            return lambda count: init_value
        return orig(init_value, boundaries_and_scales)

    return {"piecewise_constant_schedule": f}


@mutant("piecewise-bfloat16", "returns a bfloat16 value")
def _(optax: Any) -> Any:
    return schedule_post(optax, "piecewise_constant_schedule", _to("bfloat16"))


jit_differs_value(mutant, "piecewise-jit-differs")


# join_schedules ---------------------------------------------------------------


@mutant("join-global-step", "passes the global step to later schedules, not the step since their boundary")
def _(optax: Any) -> Any:
    import jax.numpy as jnp

    def f(schedules: Any, boundaries: Any) -> Any:
        def schedule(step: Any) -> Any:
            out = schedules[0](step)
            for b, s in zip(boundaries, schedules[1:], strict=True):
                out = jnp.where(step < b, out, s(step))
            return out

        return schedule

    return {"join_schedules": f}


@mutant("join-late-switch", "switches one step after each boundary (step <= boundary)")
def _(optax: Any) -> Any:
    import jax.numpy as jnp

    def f(schedules: Any, boundaries: Any) -> Any:
        def schedule(step: Any) -> Any:
            out = schedules[0](step)
            for b, s in zip(boundaries, schedules[1:], strict=True):
                out = jnp.where(step <= b, out, s(step - b))
            return out

        return schedule

    return {"join_schedules": f}


@mutant("join-clamps-negative", "clamps negative steps to 0")
def _(optax: Any) -> Any:
    import jax.numpy as jnp

    orig = optax.join_schedules

    def f(schedules: Any, boundaries: Any) -> Any:
        s = orig(schedules, boundaries)
        return lambda step: s(jnp.maximum(step, 0))

    return {"join_schedules": f}


@mutant("join-float-step", "casts the step to a float first (float64 under x64)")
def _(optax: Any) -> Any:
    return _float_step(optax, "join_schedules")


@mutant("join-bfloat16", "returns a bfloat16 value")
def _(optax: Any) -> Any:
    return schedule_post(optax, "join_schedules", _to("bfloat16"))


jit_differs_value(mutant, "join-jit-differs")


@mutant("join-checks-lengths", "raises ValueError unless len(boundaries) == len(schedules) - 1")
def _(optax: Any) -> Any:
    orig = optax.join_schedules

    def f(schedules: Any, boundaries: Any) -> Any:
        if len(boundaries) != len(schedules) - 1:
            raise ValueError("join_schedules needs one boundary fewer than schedules")
        return orig(schedules, boundaries)

    return {"join_schedules": f}
