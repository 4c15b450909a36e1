"""The injected-hyperparameter grid: every transformation of the corner grid built through
``optax.inject_hyperparams``, its hyperparameters in each form, over params of each floating dtype, eagerly
and under ``jax.jit``; the state's hyperparameter dtypes read after a few updates.

Where :mod:`optax_gate.kit.corners.transformations` gives the factory its hyperparameters in other forms
directly, this grid passes them the way a team that schedules or tunes a hyperparameter does
(``optax.inject_hyperparams(optax.adamw)(learning_rate=0.1, ...)``). There every numeric hyperparameter
(ints included: ``ns_steps``, ``patience``) becomes a 0-d array of the optimizer state, cast to the params'
dtype (or to ``hyperparam_dtype``) at ``init`` and to the updates' dtype at each ``update``, and the inner
factory is built anew from those arrays at each update (optax/schedules/_inject.py, 0.2.6). A factory that
compares a hyperparameter in Python, or a bfloat16 ``b2=0.999`` that rounds to 1, shows here.
"""

from __future__ import annotations

from typing import Any

from optax_gate.kit.corners.outcome import HYPER_FORMS, as_dtype, hyper_form

#: Corners: name -> (hyperparameter form, params dtype, ``hyperparam_dtype``, jitted). ``python`` keeps the
#: Python floats and ints the factory's signature defaults to (what most teams pass); the other forms are
#: :data:`~optax_gate.kit.corners.outcome.HYPER_FORMS` (a NumPy scalar is neither a Python float nor an
#: array to ``inject_hyperparams``: it stays a static argument). bfloat16 and float16 params cast the
#: float hyperparameters to their dtype; ``hyperparam_dtype=float32`` keeps them float32 over bfloat16
#: params; ``jit`` runs the update jitted, the hyperparameters traced.
INJECT_CORNERS: dict[str, tuple[str, str, str | None, bool]] = {
    "inject=python": ("python", "float32", None, False),
    **{f"inject={form}": (form, "float32", None, False) for form in HYPER_FORMS},
    "inject=python,params=bf16": ("python", "bfloat16", None, False),
    "inject=python,params=f16": ("python", "float16", None, False),
    "inject=python,params=bf16,hyperparam_dtype=f32": ("python", "bfloat16", "float32", False),
    "inject=python,jit": ("python", "float32", None, True),
}
#: Updates per corner; the last one's outcome is recorded (a bias correction
#: over a rounded ``b2`` shows at the second, which reads the state the first wrote). One for the range grid's
#: ``ONE_STEP`` entries (``muon``: its eager Newton-Schulz iterations).
INJECT_STEPS = 2
#: Transformations of the corner grid left out, and why (besides those built by a builder and those with no
#: numeric hyperparameter: nothing to inject).
INJECT_LEFT_OUT: dict[str, str] = {
    "optax.scale_by_backtracking_linesearch": "re-traces its line search on every eager update (the "
    "table's slow entry): 0.2 s an update, 9 "
    "corners",
    "optax.contrib.sophia": "an eager update estimates the Hessian op by op (the table's slow entry)",
}


def inject_grid() -> list[str]:
    """The transformations of the corner grid that take a numeric hyperparameter (``ranges.hyperparameters``,
    so none built by a builder), less :data:`INJECT_LEFT_OUT`; a path that no longer resolves is left to the
    corner grid's contract."""
    from optax_gate.kit.corners.ranges import hyperparameters
    from optax_gate.kit.corners.transformations import transformation_paths

    out = []
    for path in transformation_paths():
        if path in INJECT_LEFT_OUT:
            continue
        try:
            if hyperparameters(path):
                out.append(path)
        except Exception:  # a removed or changed API: the corner grid's contract says how
            continue
    return out


def injected_arguments(path: str) -> tuple[Any, dict[str, Any], tuple[str, ...]]:
    """(factory, keyword arguments, ``static_args``) of ``path`` for ``inject_hyperparams``: the corner grid's
    arguments with every numeric hyperparameter (``ranges.hyperparameters``) as the signature's default;
    callables and dtypes, given or defaulted, named in ``static_args`` (``inject_hyperparams`` would call
    them as schedules). Filled once per transformation, shared by its corners."""
    from optax_gate.kit.corners.ranges import hyperparameters
    from optax_gate.kit.corners.transformations import corner_args, filled_parameters
    from optax_gate.kit.surface import build as surface_build
    from optax_gate.kit.surface.table import TRANSFORMATIONS

    fn = surface_build.resolve(path)
    kwargs = {**hyperparameters(path), **surface_build.fill(fn, corner_args(TRANSFORMATIONS[path]))}
    # a callable given or defaulted (a dtype, adafactor's decay_rate_fn, adopt's clip_value_fn) is static, as
    # inject_hyperparams' docstring asks of a "non-schedule callable"
    filled = {name: value for name, value, _ in filled_parameters(fn, TRANSFORMATIONS[path])}
    static = tuple(k for k, v in {**filled, **kwargs}.items() if callable(v) and not hasattr(v, "shape"))
    return fn, kwargs, static


def injected(
    path: str,
    form: str,
    hyperparam_dtype: str | None,
    arguments: tuple[Any, dict[str, Any], tuple[str, ...]] | None = None,
) -> Any:
    """``optax.inject_hyperparams(<path's factory>)`` called with :func:`injected_arguments` (or ``arguments``,
    made by it), every float hyperparameter in ``form`` (``python``: as the signature's default; else a
    :data:`HYPER_FORMS` form; an int kept)."""
    import optax

    fn, kwargs, static = arguments or injected_arguments(path)
    if form != "python":
        kwargs = {k: hyper_form(v, form) if type(v) is float else v for k, v in kwargs.items()}
    return optax.inject_hyperparams(fn, static_args=static, hyperparam_dtype=as_dtype(hyperparam_dtype))(**kwargs)


def inject_record(path: str) -> dict[str, str]:
    """``corner.<corner>`` -> the outcome of :data:`INJECT_STEPS` updates at each corner of
    :data:`INJECT_CORNERS` (``transformation_outcome``'s line, with ``h`` the state's hyperparameters
    counted per dtype; or the exception's type, its message under ``.../error``)."""
    from optax_gate.kit.corners.ranges import ONE_STEP
    from optax_gate.kit.corners.transformations import transformation_outcome

    out: dict[str, str] = {}
    steps = 1 if path in ONE_STEP else INJECT_STEPS
    try:
        arguments = injected_arguments(path)
    except Exception:  # each corner then records how building fails
        arguments = None
    for corner, (form, pdtype, hdtype, jit) in INJECT_CORNERS.items():
        key = f"corner.{corner}"
        errors: dict[str, str] = {}

        def build(form: str = form, hdtype: str | None = hdtype) -> Any:
            return injected(path, form, hdtype, arguments)

        out[key] = transformation_outcome(
            path, {}, pdtype, None, errors, f"{key}/error", steps=steps, build_with=build, jit=jit, hyperparams=True
        )
        out.update(errors)
    return out
