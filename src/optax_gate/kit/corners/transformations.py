"""The transformations' corner grid: corners from each factory's signature, and one step's outcome at each."""

from __future__ import annotations

import functools
import math
from typing import Any

from optax_gate.kit.corners.outcome import HYPER_FORMS, as_dtype, hyper_form, jnp_module, message, optax_module
from optax_gate.kit.surface.table import known_defect

#: A ``*_dtype`` option is set to bfloat16 over float32 params, and to float32
#: over bfloat16 params: option value -> the params' dtype.
DTYPE_OPTION_VALUES = {"bfloat16": "float32", "float32": "bfloat16"}
#: Boolean options are flipped from their default, one at a time, except:
OPTIONS_LEFT_OUT: dict[str, str] = {
    "verbose": "prints the line search's progress (jax.debug.print): an output, not another code path of the values",
    "forward_extra_args": "whether update's extra arguments reach the inner transformation: the grid passes none",
    "mask_compatible_extra_args": "whether extra arguments are masked along with the updates: the grid passes none",
}
#: Values given to ``update(..., value=...)`` by the value-driven
#: transformations (those whose table entry needs ``value``): positive, zero,
#: negative; a ``value_fn`` is shifted to agree (``model(q) - model(p) + v``).
VALUE_CORNERS = (1.0, 0.0, -1.0)
#: Updates per value corner, the value held (a plateau of the loss): enough for
#: reduce_on_plateau's default patience (10) to run out and its scale to show.
VALUE_STEPS = 12
#: Leaves of the representative PyTree (``surface_build.params``) the grid's
#: params keep (less the entry's ``skip_leaves``): a vector and a matrix, so
#: that a matrix-only transformation (muon) and a factored one see a matrix.
TRANSFORMATION_LEAVES = ("r1", "r2")
#: The ``conv_kernels`` corner's PyTree: convolution kernels of rank 3, 4 and
#: 5 (1-D, 2-D and 3-D convolutions, spatial dims first, then input and
#: output features), float32: where a transformation's default axis arguments
#: (factored moments, unitwise norms, block norms, per-dimension
#: accumulators) meet a real kernel rather than the representative PyTree's
#: size-1 and size-2 dimensions. Its leaves are never left out (an entry's
#: ``skip_leaves`` does not apply: a rank it refuses is its outcome).
CONV_KERNELS = {"conv1d": (3, 4, 8), "conv2d": (3, 3, 4, 8), "conv3d": (3, 3, 3, 4, 8)}
#: Arguments the grid adds to the table entry's, so that an option takes
#: effect: path -> (arguments, why).
CORNER_ARGS: dict[str, tuple[dict[str, Any], str]] = {
    "optax.scale_by_learning_rate": (
        {"learning_rate": 0.1},
        "learning_rate=None is the identity (transform.py: 'None means no scaling'), where flip_sign does nothing",
    ),
}
#: Transformations of the table with no corner grid, and why (besides the
#: table's own ``left_out``).
TRANSFORMATION_LEFT_OUT: dict[str, str] = {
    "optax.chain": "takes transformations only: no option, no hyperparameter of its own",
    "optax.named_chain": "takes named transformations only (as optax.chain)",
    "optax.lbfgs": (
        "an eager zoom line search re-traces its loop on every call: about 2 s per corner on the 2-core "
        "machine (the grid's budget); its value corners are shift-invariant (the search compares "
        "differences of value_fn), optax.scale_by_backtracking_linesearch has them"
    ),
    "optax.scale_by_zoom_linesearch": "as optax.lbfgs: 2 s per eager corner, value corners shift-invariant",
    "optax.contrib.scale_by_muon": (
        "its default weight_dimension_numbers=None raises on a dict of params (ledger "
        "scale-by-muon-default-dimension-numbers): every corner raises that one error; "
        "optax.contrib.muon, which wraps it, has the grid"
    ),
}


#: Baseline defects the transformation grid shows on a documented input
#: (as :data:`SCHEDULE_DEFECTS`): (path, corner) -> ledger id.
TRANSFORMATION_DEFECTS: dict[tuple[str, str], str] = {
    ("optax.scale_by_novograd", "mu_dtype=float32"): known_defect("novograd-mu-dtype-cond-branches"),
}


def transformation_paths() -> list[str]:
    """The table's transformations that get a grid (not ``left_out``, not in :data:`TRANSFORMATION_LEFT_OUT`)."""
    from optax_gate.kit.surface.table import TRANSFORMATIONS

    return [p for p, e in TRANSFORMATIONS.items() if not e.left_out and p not in TRANSFORMATION_LEFT_OUT]


def transformation_grid() -> list[str]:
    """The paths of :func:`transformation_paths` with at least one corner
    (:func:`transformation_corners`; a path that no longer resolves is kept,
    its contract then fails): every one since each has ``conv_kernels``."""
    out = []
    for path in transformation_paths():
        try:
            if transformation_corners(path):
                out.append(path)
        except Exception:  # a removed or changed API: its contract says how
            out.append(path)
    return out


def corner_args(entry: Any) -> dict[str, Any]:
    """The table entry's arguments and the grid's own (:data:`CORNER_ARGS`)."""
    return {**entry.args, **CORNER_ARGS.get(entry.path, ({}, ""))[0]}


def filled_parameters(fn: Any, entry: Any) -> list[tuple[str, Any, Any]]:
    """``(name, value, inspect.Parameter)`` for each parameter of ``fn``, its value the one a corner builds it
    with (:func:`surface_build.fill` over :func:`corner_args`, else its default); none for an entry built by a
    builder (its builder fixes the hyperparameters)."""
    import inspect

    from optax_gate.kit.surface import build as surface_build

    if entry.builder is not None:
        return []
    filled = surface_build.fill(fn, corner_args(entry))
    return [(name, filled.get(name, p.default), p) for name, p in inspect.signature(fn).parameters.items()]


def float_hyperparameters(fn: Any, entry: Any) -> dict[str, float]:
    """The floating hyperparameters of ``fn`` (Python-float defaults, and the
    required ones :func:`surface_build.fill` gives a float), with their values."""
    return {name: value for name, value, _ in filled_parameters(fn, entry) if type(value) is float}


def transformation_corners(path: str) -> dict[str, tuple[dict[str, Any], str, Any]]:
    """Corner name -> (option overrides, params dtype, value or None), derived
    from the factory's signature: ``hyper=<form>`` per :data:`HYPER_FORMS`
    (not for a builder entry: its builder fixes the hyperparameters); each
    boolean flipped (``nesterov=True``); each ``*_dtype`` option per
    :data:`DTYPE_OPTION_VALUES` (``mu_dtype=bfloat16``); for a value-driven
    entry, ``value=<v>`` per :data:`VALUE_CORNERS`; and ``conv_kernels`` (the
    params :data:`CONV_KERNELS`) for every entry."""
    import inspect

    from optax_gate.kit.surface import build as surface_build
    from optax_gate.kit.surface.table import TRANSFORMATIONS

    entry = TRANSFORMATIONS[path]
    fn = surface_build.resolve(path)
    out: dict[str, tuple[dict[str, Any], str, Any]] = {}
    if entry.builder is None and float_hyperparameters(fn, entry):
        out.update({f"hyper={form}": ({"__hyper__": form}, "float32", None) for form in HYPER_FORMS})
    for name, p in inspect.signature(fn).parameters.items():
        if name in OPTIONS_LEFT_OUT or name in corner_args(entry):
            continue
        if isinstance(p.default, bool):
            out[f"{name}={not p.default}"] = ({name: not p.default}, "float32", None)
        elif name.endswith("_dtype"):
            for value, pdtype in DTYPE_OPTION_VALUES.items():
                out[f"{name}={value}"] = ({name: value}, pdtype, None)
    if "value" in entry.needs:
        out.update({f"value={v:g}": ({}, "float32", v) for v in VALUE_CORNERS})
    out["conv_kernels"] = ({"__tree__": "conv_kernels"}, "float32", None)
    return out


#: Short dtype names of the transformation grid's lines (a line stays under
#: 80 characters, so that YAML never folds it).
SHORT_DTYPES = {
    "float32": "f32",
    "bfloat16": "bf16",
    "float16": "f16",
    "float64": "f64",
    "int32": "i32",
    "int64": "i64",
    "bool": "bool",
    "key<fry>": "key",
}


def _dtype_name(x: Any) -> str:
    """A leaf's short dtype name (:data:`SHORT_DTYPES`; ``key`` for a typed PRNG key, which NumPy cannot hold)."""
    import numpy as np

    dtype = getattr(x, "dtype", None)
    name = str(dtype) if dtype is not None else np.asarray(x).dtype.name
    return SHORT_DTYPES.get(name, name)


def _state_text(state: Any) -> str:
    import collections

    import jax

    counts = collections.Counter(_dtype_name(x) for x in jax.tree.leaves(state))
    return ",".join(f"{k}x{n}" for k, n in sorted(counts.items())) or "none"


def transformation_outcome(
    path: str,
    overrides: dict[str, Any],
    pdtype: str,
    value: Any,
    errors: dict[str, str],
    key: str,
    steps: int = 1,
    build_with: Any = None,
    jit: bool = False,
    hyperparams: bool = False,
) -> str:
    """``steps`` eager updates (jitted with ``jit``) of ``path`` at a corner after one ``init``
    (each applied to the params; gradients of seed ``1 + step``), the
    last one's outcome: ``ok u f32 |u|
    0.123 u0 -0.05 s f32x4,i32x1`` (the updates' dtypes, their global norm and
    the first entry of the first non-empty leaf to 3 significant digits, the
    state's leaves counted per dtype; short dtype names, :data:`SHORT_DTYPES`), ``non-finite
    ...`` (a NaN or an infinity in the updates or the state), ``build <type>``
    or ``raises <type>`` (the message in ``errors[key]``). Params: the leaves
    :data:`TRANSFORMATION_LEAVES` of ``surface_build.params`` in ``pdtype``
    (:data:`CONV_KERNELS` at the ``conv_kernels`` corner),
    gradients of seed 1 (the model's where the entry needs ``grad``). ``build_with()``, when given, builds
    the transformation instead (the injected grid's ``inject_hyperparams``). With ``hyperparams``, the
    state's ``hyperparams`` (``InjectHyperparamsState``) add `` h <their leaves counted per dtype>``."""
    import functools

    import jax
    import numpy as np

    from optax_gate.kit.surface import build as surface_build
    from optax_gate.kit.surface.probe import extra_args, step_grads
    from optax_gate.kit.surface.table import TRANSFORMATIONS

    jnp = jnp_module()
    entry = TRANSFORMATIONS[path]
    fn = surface_build.resolve(path)
    opts = {k: v for k, v in overrides.items() if k not in ("__hyper__", "__tree__")}
    opts = {k: (as_dtype(v) if k.endswith("_dtype") else v) for k, v in opts.items()}
    form = overrides.get("__hyper__")
    if form:
        opts.update({k: hyper_form(v, form) for k, v in float_hyperparameters(fn, entry).items()})
    try:
        if build_with is not None:
            tx = build_with()
        elif entry.builder is not None:
            tx = entry.builder(functools.partial(fn, **opts))
        else:
            tx = surface_build.build(path, {**corner_args(entry), **opts})
    except Exception as exc:  # the outcome is the exception's type
        errors[key] = message(exc)
        return f"build {type(exc).__name__}"
    skip = set(entry.skip_leaves)
    keep = [n for n in TRANSFORMATION_LEAVES if n not in skip] or [n for n in surface_build.SHAPES if n not in skip]
    drop = tuple(n for n in surface_build.SHAPES if n not in keep)
    kernels = overrides.get("__tree__") == "conv_kernels"

    def tree(seed: int) -> Any:
        return dict(_corner_tree(pdtype, seed, drop, kernels))  # a new dict: the arrays are shared, never the mapping

    p, g = tree(0), tree(1)
    try:
        shift = None if value is None else value - float(surface_build.model(p))
        s = tx.init(p)
        update = jax.jit(tx.update) if jit else tx.update
        u = None
        for step in range(steps):
            if u is not None:
                p = optax_module().apply_updates(p, u)
            extra = extra_args(entry, p)
            if value is not None:
                # a value corner's loss stays at value (a plateau), unless a
                # value_fn must agree with it (then it follows value_fn).
                extra["value"] = jnp.asarray(value, jnp.float32)
                if "value_fn" in extra:
                    extra["value_fn"] = lambda q: surface_build.model(q) + shift
                    if step:
                        extra["value"] = extra["value_fn"](p)
            if step:  # gradients of another seed each step: a momentum, a sign or a max sees them move
                g = tree(1 + step)
            u, s = update(step_grads(entry, p, g), s, p, **extra)
        leaves = [np.asarray(x) for x in jax.tree.leaves(u)]
        states = [
            np.asarray(x)
            for x in jax.tree.leaves(s)
            if jnp.issubdtype(jnp.result_type(x) if not hasattr(x, "dtype") else x.dtype, jnp.inexact)
        ]
    except Exception as exc:  # the outcome is the exception's type
        errors[key] = message(exc)
        return f"raises {type(exc).__name__}"

    def finite(a: Any) -> Any:
        return not jnp.issubdtype(a.dtype, jnp.inexact) or bool(np.all(np.isfinite(a.astype(np.float32))))

    bad = not all(finite(a) for a in leaves + states)
    udt = ",".join(dict.fromkeys(_dtype_name(a) for a in leaves)) or "none"
    floats = [a.astype(np.float64) for a in leaves if jnp.issubdtype(a.dtype, jnp.floating)]
    norm = math.sqrt(sum(float(np.sum(np.square(a))) for a in floats))
    first = next((float(a.ravel()[0]) for a in floats if a.size), math.nan)
    hyper = f" h {_state_text(s.hyperparams)}" if hyperparams and hasattr(s, "hyperparams") else ""
    return f"{'non-finite' if bad else 'ok'} u {udt} |u| {_value3(norm)} u0 {_value3(first)} s {_state_text(s)}{hyper}"


@functools.cache
def _corner_tree(pdtype: str, seed: int, drop: tuple[str, ...], kernels: bool) -> Any:
    """The params (seed 0) or gradients (seed 1 + step) of a corner: :data:`CONV_KERNELS` or the representative
    PyTree less ``drop``, in ``pdtype``; made once per process (JAX arrays are immutable, and no grid donates them)."""
    import numpy as np

    from optax_gate.kit.surface import build as surface_build

    if kernels:
        rng = np.random.default_rng(seed)
        return {
            n: jnp_module().asarray(rng.standard_normal(shape), as_dtype(pdtype)) for n, shape in CONV_KERNELS.items()
        }
    return surface_build.params(as_dtype(pdtype), seed=seed, skip=drop)


def _value3(x: float) -> str:
    return "nan" if math.isnan(x) else "inf" if math.isinf(x) else f"{x:.3g}"


def transformation_record(path: str) -> dict[str, str]:
    """Every corner of :func:`transformation_corners` with its outcome, keys
    ``corner.<corner>`` (and ``corner.<corner>/error`` for a message): one
    update, :data:`VALUE_STEPS` at a value corner."""
    out: dict[str, str] = {}
    for corner, (overrides, pdtype, value) in transformation_corners(path).items():
        errors: dict[str, str] = {}
        steps = 1 if value is None else VALUE_STEPS
        out[f"corner.{corner}"] = transformation_outcome(
            path, overrides, pdtype, value, errors, f"corner.{corner}/error", steps=steps
        )
        out.update(errors)
    return out
