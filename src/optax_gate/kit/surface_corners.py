"""Corner grids per API family: the inputs just beside the sweep's one representative call, and each cell's outcome in one short line (``docs/module-notes.md``)."""

from __future__ import annotations

import math
from typing import Any

from optax_gate.kit.surface_table import known_defect

# --------------------------------------------------------------------- trees

#: Corner PyTrees: name -> (leaves as (dtype, shape), why it is a corner).
TREES: dict[str, tuple[tuple[tuple[str, tuple[int, ...]], ...], str]] = {
    "empty_leaf": ((("float32", (2,)), ("float32", (0,))), "a size-0 leaf beside a non-empty one (an unused or pruned parameter)"),
    "only_empty": ((("float32", (0,)),), "every leaf empty: a reduction has no element"),
    "no_leaves": ((), "an empty dict: nothing to reduce"),
    "scalar_leaf": ((("float32", ()),), "one 0-d leaf (a scalar parameter)"),
    "ranks_0_5": (tuple(("float32", (2,) * r) for r in range(6)), "one leaf of each rank 0 to 5"),
    "int32": ((("int32", (3,)), ("int32", ())), "integer leaves (a step counter in a state)"),
    "mixed": ((("float32", (2,)), ("int32", (2,)), ("bfloat16", (2,))), "float32, int32 and bfloat16 leaves together"),
    "bfloat16": ((("bfloat16", (3,)), ("bfloat16", (2, 2))), "bfloat16 leaves (mixed-precision params)"),
}

#: Tree utilities and norms: (path, call form, keyword arguments). Call forms:
#: ``tree`` fn(t); ``two`` fn(t, t2) (t2 the same structure, other values);
#: ``scalar_tree`` fn(0.5, t); ``add_scale`` fn(t, 0.5, t2); ``clip`` fn(t,
#: -1.0, 1.0); ``cast`` fn(t, float16); ``where`` fn(True, t, t2). A keyword
#: value ``"inf"`` means ``math.inf`` (kept as text so the table stays data).
TREE_CALLS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("optax.tree.max", "tree", {}), ("optax.tree.min", "tree", {}), ("optax.tree.sum", "tree", {}),
    ("optax.tree.norm", "tree", {}), ("optax.tree.norm", "tree", {"squared": True}),
    ("optax.tree.norm", "tree", {"ord": 1}), ("optax.tree.norm", "tree", {"ord": "inf"}),
    ("optax.global_norm", "tree", {}), ("optax.tree.size", "tree", {}), ("optax.tree.dtype", "tree", {}),
    ("optax.tree.batch_shape", "tree", {}), ("optax.tree.vdot", "two", {}), ("optax.tree.add", "two", {}),
    ("optax.tree.sub", "two", {}), ("optax.tree.mul", "two", {}), ("optax.tree.div", "two", {}),
    ("optax.tree.scale", "scalar_tree", {}), ("optax.tree.add_scale", "add_scale", {}),
    ("optax.tree.clip", "clip", {}), ("optax.tree.cast", "cast", {}), ("optax.tree.where", "where", {}),
    ("optax.tree.allclose", "two", {}),
)

#: Tree utilities of the sweep with no corner grid, and why.
TREE_LEFT_OUT: dict[str, str] = {
    "optax.tree.get": "looks a key up by name: the corners are about leaves' shapes and dtypes, not keys",
    "optax.tree.get_all_with_path": "looks keys up by name (as optax.tree.get)",
    "optax.tree.set": "replaces leaves by key (as optax.tree.get)",
    "optax.tree.random_like": "needs a PRNG key; its draws on a new shape are values, not a corner outcome",
    "optax.tree.split_key_like": "splits a PRNG key per leaf: a leaf's shape does not enter",
    "optax.tree.unwrap_random_key_data": "takes PRNG keys, not numeric leaves",
    "optax.tree.cast_like": "casts to another tree's dtypes: covered by optax.tree.cast on the mixed corner",
    "optax.tree.zeros_like": "a leaf-wise jnp.zeros_like: no reduction, no dtype rule of its own (time budget)",
    "optax.tree.ones_like": "a leaf-wise jnp.ones_like (as optax.tree.zeros_like)",
    "optax.tree.full_like": "a leaf-wise jnp.full_like (as optax.tree.zeros_like)",
    "optax.tree.real": "a leaf-wise jnp.real: complex leaves are the x64/dtype contracts' (time budget)",
    "optax.tree.conj": "a leaf-wise jnp.conj (as optax.tree.real)",
    "optax.tree_map_params": "maps over an optimizer state, not a params PyTree (the wrappers family carries states)",
    "optax.bias_correction": "a moment's arithmetic (optimizer internals), through the wrappers family",
    "optax.update_moment": "a moment's arithmetic (optimizer internals), through the wrappers family",
    "optax.update_infinity_moment": "a moment's arithmetic (optimizer internals), through the wrappers family",
    "optax.update_moment_per_elem_norm": "a moment's arithmetic (optimizer internals), through the wrappers family",
}


def tree_case_id(path: str, kwargs: dict[str, Any]) -> str:
    """``optax.tree.norm[ord=1]``: a call of :data:`TREE_CALLS` as one contract id."""
    return path + (f"[{','.join(f'{k}={v}' for k, v in kwargs.items())}]" if kwargs else "")


# ------------------------------------------------------------------ wrappers

#: Wrappers around an inner optimizer: name -> (API path, how it is built
#: around ``inner``: a form of :func:`wrap`).
WRAPPERS: dict[str, str] = {
    "optax.MultiSteps": "multi_steps",
    "optax.inject_hyperparams": "inject",
    "optax.masked": "masked",
    "optax.chain": "chain",
    "optax.apply_if_finite": "apply_if_finite",
}
#: Inner optimizers: name -> (factory path, keyword arguments; a dtype as text).
INNERS: dict[str, tuple[str, dict[str, Any]]] = {
    "adam": ("optax.adam", {"learning_rate": 0.1}),
    "adam_mu_bfloat16": ("optax.adam", {"learning_rate": 0.1, "mu_dtype": "bfloat16"}),
    "adam_mu_float32": ("optax.adam", {"learning_rate": 0.1, "mu_dtype": "float32"}),
    "adamw_mu_bfloat16": ("optax.adamw", {"learning_rate": 0.1, "mu_dtype": "bfloat16"}),
    "nadam": ("optax.nadam", {"learning_rate": 0.1}),
}
#: Param dtypes every wrapper x inner pair is carried over.
PARAM_DTYPES = ("float32", "bfloat16", "float16")
#: Steps of the scan (MultiSteps with every_k_schedule=2 applies once, then accumulates).
SCAN_STEPS = 3
#: Wrappers and set-ups without a grid, and why.
WRAPPER_LEFT_OUT: dict[str, str] = {
    "optax.multi_transform": "labels split the PyTree between two inner optimizers: optax.masked covers one inner on part of it",
    "optax.inject_stateful_hyperparams": "the same state layout as optax.inject_hyperparams for a plain float hyperparameter",
    "optax.lookahead": "params must be a LookaheadParams pair, not a plain PyTree",
}


# -------------------------------------------------------------------- losses

#: Loss corners: name -> what changes in the sweep's inputs.
LOSS_CORNERS: dict[str, str] = {
    "neg_inf_logit": "the last entry of the first argument is -inf (a masked class; logits and log-probabilities only)",
    "pos_inf_logit": "the last entry of the first argument is +inf (logits and log-probabilities only)",
    "empty_batch": "every argument's leading (batch) axis sliced to size 0",
    "int_inputs": "the first argument as int32 (the values truncated): a loss of integer predictions",
    "broadcast": "the second argument reduced to its first row, shape (1, ...): broadcastable against the batch",
    "mismatch": "the second argument with one entry fewer on its last axis: shapes that do not broadcast",
    **{f"hyper={form}": f"every floating hyperparameter (a Python float the sweep passes, or a float default) "
                        f"given as {why}" for form, why in (
        ("float32", "a 0-d float32 array"), ("bfloat16", "a 0-d bfloat16 array"),
        ("numpy_float32", "a NumPy float32 scalar"))},
}
#: What is recorded at each loss corner: the value, the reverse-mode gradient
#: of the summed loss, and its forward-mode derivative along ones (``jax.jvp``;
#: ``jax.jacfwd`` is left out: it pushes the one-hot tangents through the same
#: JVP rule, vmapped, and doubled the grid's time, beyond its budget on a
#: 2-core machine).
LOSS_OUTPUTS = ("value", "grad", "jvp")
#: Baseline defects the loss grid shows on a documented input: (path, corner)
#: -> ledger id. The grid's contract is one snapshot per loss, so it is not
#: marked ``known_defect`` (a change at another corner would read ``fixed``):
#: the ledger keeps the defect, this table says where the grid shows it.
LOSS_DEFECTS: dict[tuple[str, str], str] = {
    ("optax.squared_error", "broadcast"): known_defect("squared-error-broadcastable-targets-refused"),
    ("optax.l2_loss", "broadcast"): known_defect("squared-error-broadcastable-targets-refused"),
}
#: Losses the grid leaves out at a corner, with the reason: (path, corner) -> why.
LOSS_LEFT_OUT: dict[tuple[str, str], str] = {
    ("optax.ctc_loss", "broadcast"): "CTC's second argument is a padding mask, not targets",
    ("optax.ctc_loss", "mismatch"): "CTC's second argument is a padding mask, not targets",
    ("optax.ctc_loss_with_forward_probs", "broadcast"): "CTC's second argument is a padding mask, not targets",
    ("optax.ctc_loss_with_forward_probs", "mismatch"): "CTC's second argument is a padding mask, not targets",
}


# ----------------------------------------------------------------- outcomes

def _jnp():
    import jax.numpy as jnp

    return jnp


def _value(x: float) -> str:
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf") if math.isinf(x) else f"{x:.4g}"


def message(exc: BaseException, limit: int = 50) -> str:
    """An exception's message on one line, kept clear of the snapshot drift's
    separators (``": "`` -> ``" - "``, ``"; "`` -> ``", "``, ``"->"`` -> ``"to"``)."""
    text = " ".join(str(exc).split()).replace(": ", " - ").replace("; ", ", ").replace("->", "to")
    return text[:limit]


def describe(thunk: Any, errors: dict[str, str] | None = None, key: str = "") -> str:
    """The outcome of ``thunk()`` in one line (see the module docstring); with
    ``errors``, an exception's message (:func:`message`) is put there under
    ``key`` (a line of its own: the snapshot's lines stay under 80 characters,
    so that YAML never folds one)."""
    import jax
    import numpy as np

    try:
        out = thunk()
    except Exception as exc:  # the outcome is the exception's type
        if errors is not None:
            errors[key] = message(exc)
        return f"raises {type(exc).__name__}"
    if isinstance(out, bool) or out is None:
        return f"ok python {type(out).__name__.lower()} {out}"
    if isinstance(out, (int, float)):
        return f"{'ok' if math.isfinite(out) else 'non-finite'} python {type(out).__name__} {_value(float(out))}"
    if isinstance(out, tuple) and all(isinstance(v, int) for v in out):
        return f"ok shape ({','.join(map(str, out))})"
    if isinstance(out, (np.dtype, type)) or hasattr(out, "dtype") and not hasattr(out, "shape"):
        return f"ok dtype {np.dtype(out).name}"
    jnp = _jnp()
    leaves = jax.tree.leaves(out)
    arrays = [np.asarray(x) for x in leaves]
    inexact = [jnp.issubdtype(a.dtype, jnp.inexact) for a in arrays]  # bfloat16's NumPy kind is 'V', not 'f'
    bad = any(f and not np.all(np.isfinite(a.astype(np.complex64 if np.iscomplexobj(a) else np.float32)))
              for a, f in zip(arrays, inexact))
    if len(arrays) == 1 and arrays[0].ndim == 0 and not isinstance(out, dict):
        a = arrays[0]
        val = _value(float(np.real(a.astype(np.complex64 if np.iscomplexobj(a) else np.float32)))) if inexact[0] else str(a)
        return f"{'non-finite' if bad else 'ok'} {a.dtype.name}[] {val}"
    sig = ",".join(f"{a.dtype.name}[{','.join(map(str, a.shape))}]" for a in arrays) or "no leaves"
    return f"{'non-finite' if bad else 'ok'} {sig}{'' if bad else ' finite'}"


def tree(name: str, seed: int = 0) -> dict[str, Any]:
    """The corner PyTree ``name`` of :data:`TREES`: leaves ``l0``, ``l1``...
    with seeded values in [-2, 2] (integers for int32), a negative first entry."""
    import numpy as np

    jnp = _jnp()
    rng = np.random.default_rng(seed)
    out = {}
    for i, (dtype, shape) in enumerate(TREES[name][0]):
        x = rng.uniform(-2.0, 2.0, size=shape)
        if x.size:
            x.flat[0] = -abs(x.flat[0]) - 0.5
        out[f"l{i}"] = jnp.asarray(np.round(x) if dtype == "int32" else x, dtype=dtype)
    return out


def tree_outcome(path: str, form: str, kwargs: dict[str, Any], corner: str) -> str:
    """The outcome of the tree utility ``path`` called in ``form`` on the corner PyTree ``corner``."""
    from optax_gate.kit import surface_build

    jnp = _jnp()
    fn = surface_build.resolve(path)
    kw = {k: (math.inf if v == "inf" else v) for k, v in kwargs.items()}
    t, t2 = tree(corner), tree(corner, seed=1)
    calls = {
        "tree": lambda: fn(t, **kw), "two": lambda: fn(t, t2, **kw), "scalar_tree": lambda: fn(0.5, t, **kw),
        "add_scale": lambda: fn(t, 0.5, t2, **kw), "clip": lambda: fn(t, -1.0, 1.0, **kw),
        "cast": lambda: fn(t, jnp.float16, **kw), "where": lambda: fn(True, t, t2, **kw),
    }
    return describe(calls[form])


def _dtype(name: Any) -> Any:
    return getattr(_jnp(), name) if isinstance(name, str) and name in ("bfloat16", "float16", "float32") else name


def inner(name: str) -> Any:
    """The inner optimizer ``name`` of :data:`INNERS`, built."""
    from optax_gate.kit import surface_build

    path, kwargs = INNERS[name]
    return surface_build.resolve(path)(**{k: _dtype(v) for k, v in kwargs.items()})


def wrap(wrapper: str, inner_name: str) -> Any:
    """The wrapper ``wrapper`` (a key of :data:`WRAPPERS`) around the inner optimizer ``inner_name``."""
    import optax

    from optax_gate.kit import surface_build

    fn = surface_build.resolve(wrapper)
    form = WRAPPERS[wrapper]
    if form == "multi_steps":
        return fn(inner(inner_name), every_k_schedule=2)
    if form == "inject":  # a dtype is callable: named static, as inject_hyperparams' docstring asks of non-schedule callables
        path, kwargs = INNERS[inner_name]
        static = tuple(k for k in kwargs if k.endswith("_dtype"))
        return fn(surface_build.resolve(path), static_args=static)(**{k: _dtype(v) for k, v in kwargs.items()})
    if form == "masked":
        return fn(inner(inner_name), lambda p: {k: k != "b" for k in p})
    if form == "chain":
        return fn(inner(inner_name), optax.scale(1.0))
    return fn(inner(inner_name), max_consecutive_errors=2)


def wrapper_outcome(wrapper: str, inner_name: str, dtype: str) -> str:
    """:data:`SCAN_STEPS` jitted steps of ``wrap(wrapper, inner_name)`` carried
    through ``jax.lax.scan`` on params ``{"w": [3], "b": [2, 2]}`` of ``dtype``
    (seeded gradients of the same dtype): ``ok params bfloat16 state
    bfloat16,float32,int32`` (the dtypes of the params and of the state's
    leaves after the scan), ``non-finite ...`` or ``raises <type>``."""
    import jax
    import numpy as np

    import optax

    jnp = _jnp()

    def run():
        rng = np.random.default_rng(0)
        params = {"w": jnp.asarray(rng.uniform(-1, 1, 3), dtype), "b": jnp.asarray(rng.uniform(-1, 1, (2, 2)), dtype)}
        grads = jax.tree.map(lambda x: jnp.stack([x * (k + 1) for k in range(SCAN_STEPS)]), params)
        tx = wrap(wrapper, inner_name)

        def step(carry, g):
            p, s = carry
            u, s = tx.update(g, s, p)
            return (optax.apply_updates(p, u), s), None
        return jax.jit(lambda p: jax.lax.scan(step, (p, tx.init(p)), grads)[0])(params)

    try:
        p, state = run()
    except Exception as exc:  # the outcome is the exception's type
        return f"raises {type(exc).__name__}"
    leaves = [np.asarray(x) for x in jax.tree.leaves(p)]
    bad = any(not np.all(np.isfinite(x.astype(np.float32))) for x in leaves)
    pd = ",".join(sorted({x.dtype.name for x in leaves}))
    sd = ",".join(sorted({np.asarray(x).dtype.name for x in jax.tree.leaves(state)}))
    return f"{'non-finite' if bad else 'ok'} params {pd} state {sd}"


def loss_outcomes(path: str, corner: str, args: list, kwargs: dict[str, Any]) -> dict[str, str]:
    """The loss ``path`` at ``corner`` (its inputs ``args``/``kwargs`` already
    changed): one outcome per :data:`LOSS_OUTPUTS` key, ``<corner>/<output>``.
    Derivatives are of the summed floating result with respect to the first
    argument (as float32; the int_inputs corner differentiates the float
    values that were truncated)."""
    import jax

    from optax_gate.kit import surface_build

    jnp = _jnp()
    fn = surface_build.resolve(path)
    first = jnp.asarray(args[0]).astype(jnp.float32)

    def total(x):
        out = fn(x.astype(jnp.asarray(args[0]).dtype) if corner == "int_inputs" else x, *args[1:], **kwargs)
        return sum(jnp.sum(leaf) for leaf in jax.tree.leaves(out) if jnp.issubdtype(jnp.asarray(leaf).dtype, jnp.floating))

    def tangent():
        return jnp.ones_like(first)
    errors: dict[str, str] = {}
    return {
        f"{corner}/value": describe(lambda: fn(*args, **kwargs), errors, f"{corner}/error"),
        f"{corner}/grad": describe(lambda: jax.grad(total)(first)),
        f"{corner}/jvp": describe(lambda: jax.jvp(total, (first,), (tangent(),))[1]),
        **errors,
    }


def sweep_inputs(path: str) -> tuple[tuple, dict]:
    """The positional and keyword arguments the sweep (``surface_calls.CALLS``) calls ``path`` with (a loss, a schedule)."""
    from optax_gate.kit.surface_calls import CALLS

    captured = {}

    def spy(*args, **kwargs):
        captured["args"], captured["kwargs"] = args, kwargs
        return _jnp().zeros(())
    CALLS[path][2](spy)
    return tuple(captured["args"]), dict(captured["kwargs"])


def loss_corners(path: str) -> list[str]:
    """The corners of :data:`LOSS_CORNERS` the loss ``path`` gets: the
    infinite logits for logits/log-probability losses only
    (``surface_calls.LOGITS``), the targets' corners where the second
    argument is an array, none of ``LOSS_LEFT_OUT``."""
    import jax

    from optax_gate.kit.surface_calls import LOGITS

    args, _ = sweep_inputs(path)
    out = []
    for corner in LOSS_CORNERS:
        if (path, corner) in LOSS_LEFT_OUT or ("inf_logit" in corner and path not in LOGITS):
            continue
        if corner in ("broadcast", "mismatch") and (len(args) < 2 or not isinstance(args[1], jax.Array) or not args[1].ndim):
            continue
        if corner.startswith("hyper=") and not float_hypers(path):
            continue
        out.append(corner)
    return out


def loss_inputs(path: str, corner: str) -> tuple[list, dict]:
    """The sweep's arguments of ``path`` changed at ``corner`` (see :data:`LOSS_CORNERS`)."""
    import jax

    jnp = _jnp()
    args, kwargs = sweep_inputs(path)
    args = [jnp.asarray(a) if isinstance(a, jax.Array) else a for a in args]
    first = jnp.asarray(args[0])
    if corner in ("neg_inf_logit", "pos_inf_logit"):
        args[0] = first.astype(jnp.float32).at[(-1,) * first.ndim].set(-jnp.inf if corner == "neg_inf_logit" else jnp.inf)
    elif corner == "empty_batch":
        batch = first.shape[0]
        args = [a[:0] if isinstance(a, jax.Array) and a.ndim and a.shape[0] == batch else a for a in args]
    elif corner == "int_inputs":
        args[0] = jnp.round(first).astype(jnp.int32)
    elif corner == "broadcast":
        args[1] = args[1][:1]
    elif corner == "mismatch":
        args[1] = args[1][..., :-1] if args[1].shape[-1] > 1 else jnp.concatenate([args[1], args[1]], axis=-1)
    elif corner.startswith("hyper="):
        args, kwargs = hyper_inputs(path, args, kwargs, corner.partition("=")[2])
    return args, kwargs


def float_hypers(path: str) -> list[str]:
    """The floating hyperparameters of the loss or schedule ``path`` as the
    sweep calls it: each parameter the call gives a Python float, and each
    parameter it leaves at a Python-float default (``huber_loss``'s
    ``delta``, ``cosine_decay_schedule``'s ``alpha``), in signature order."""
    import inspect

    from optax_gate.kit import surface_build

    sig = inspect.signature(surface_build.resolve(path))
    args, kwargs = sweep_inputs(path)
    given = sig.bind_partial(*args, **kwargs).arguments
    return [name for name, p in sig.parameters.items()
            if type(given.get(name, p.default)) is float
            and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY, p.POSITIONAL_ONLY)]


def hyper_inputs(path: str, args: list, kwargs: dict[str, Any], form: str) -> tuple[list, dict[str, Any]]:
    """``args``/``kwargs`` of a call of ``path`` with every one of
    :func:`float_hypers` given in ``form`` (:data:`HYPER_FORMS`): a
    positional float converted in place, the others as keywords."""
    import inspect

    from optax_gate.kit import surface_build

    sig = inspect.signature(surface_build.resolve(path))
    bound = sig.bind_partial(*args, **kwargs).arguments
    names = float_hypers(path)
    positional = list(sig.parameters)[:len(args)]
    args = [_hyper_form(a, form) if name in names else a for name, a in zip(positional, args)] + list(args[len(positional):])
    kwargs = {**kwargs, **{n: _hyper_form(bound.get(n, sig.parameters[n].default), form)
                          for n in names if n not in positional}}
    return args, kwargs


# ----------------------------------------------------------------- schedules

#: The last step the schedule grid evaluates but one: the sweep's horizon
#: (``surface_calls``' schedules end at 20 steps), where "a boundary at the
#: end" is put.
SCHEDULE_END = 20
#: Steps each schedule configuration is evaluated at: 0, 1 and 2 (around a
#: zero-length or one-step interval), the end and one past it.
SCHEDULE_STEPS = (0, 1, 2, SCHEDULE_END, SCHEDULE_END + 1)
#: How each step is given: a Python int (eager), a 0-d int32 array (eager),
#: and a 0-d int32 array to the schedule under ``jax.jit`` (one compilation
#: per configuration).
SCHEDULE_MODES = ("int", "int32", "jit")
#: Degenerate values per parameter *name*: a schedule whose signature has the
#: parameter gets each value as a corner (one at a time, the sweep's other
#: arguments kept), unless its sweep call already gives that value. name ->
#: ((value, why), ...).
SCHEDULE_PARAMS: dict[str, tuple[tuple[Any, str], ...]] = {
    "transition_steps": ((0, "a zero-length interval (documented: the schedule is then constant)"),
                         (1, "a one-step interval")),
    "decay_steps": ((0, "a zero-length decay"), (1, "a one-step decay")),
    "warmup_steps": ((0, "no warmup: the join's boundary at step 0"), (1, "a one-step warmup")),
    "transition_begin": ((0, "the interval begins at step 0"),),
    "pct_start": ((0.0, "a fraction at 0: no rising phase"), (1.0, "a fraction at 1: no falling phase")),
    "pct_final": ((1.0, "a fraction at 1: the second phase ends at the last step"),),
    "alpha": ((0.0, "a fraction at 0: decays to zero"), (1.0, "a fraction at 1: no decay")),
    "decay_rate": ((0.0, "a rate of 0 (documented: logged, a constant schedule)"), (1.0, "a rate of 1: no decay")),
    "peak_value": ((0.0, "a peak of zero (warmup_cosine_decay divides end_value by it)"),),
    "staircase": ((True, "the integer-division code path"),),
    "interpolate_type": (("linear", "the other interpolation"),),
    "boundaries_and_scales": (({0: 0.5}, "a boundary at step 0"), ({SCHEDULE_END: 0.5}, "a boundary at the end"),
                              ({}, "no boundary")),
    "boundaries": (([0], "a boundary at step 0"), ([SCHEDULE_END], "a boundary at the end")),
}
#: Baseline defects the schedule grid shows on a documented input: (path,
#: corner) -> ledger id. As ``LOSS_DEFECTS``: the grid's contract is one
#: snapshot per schedule, not marked ``known_defect``; this table says where
#: the grid shows the ledger's defect.
SCHEDULE_DEFECTS: dict[tuple[str, str], str] = {
    ("optax.piecewise_interpolate_schedule", "boundaries_and_scales={0}"):
        known_defect("piecewise-interpolate-zero-length-interval-nan"),
    ("optax.linear_onecycle_schedule", "pct_start=0.0"): known_defect("piecewise-interpolate-zero-length-interval-nan"),
    ("optax.linear_onecycle_schedule", "transition_steps=1"): known_defect("piecewise-interpolate-zero-length-interval-nan"),
    ("optax.cosine_onecycle_schedule", "pct_start=0.0"): known_defect("piecewise-interpolate-zero-length-interval-nan"),
    ("optax.cosine_onecycle_schedule", "transition_steps=1"): known_defect("piecewise-interpolate-zero-length-interval-nan"),
}
#: Schedules of the sweep with no corner grid, and why.
SCHEDULE_LEFT_OUT: dict[str, str] = {
    "optax.sgdr_schedule": "its cosine_kwargs are warmup_cosine_decay_schedule's arguments, gridded there",
}


def _text(value: Any) -> str:
    if isinstance(value, dict):  # boundaries_and_scales: the boundaries (the scales are the table's)
        return "{" + ",".join(map(str, value)) + "}"
    if isinstance(value, list):
        return "[" + ",".join(map(str, value)) + "]"
    return str(value)


def schedule_corners(path: str) -> dict[str, dict[str, Any]]:
    """Corner name -> the schedule's keyword arguments: ``base`` (the sweep's
    call) and, for each parameter of the signature in
    :data:`SCHEDULE_PARAMS`, ``<name>=<value>`` with that one value changed
    (a value the sweep's call already has is no corner); and ``hyper=<form>``
    per :data:`HYPER_FORMS`, every floating hyperparameter
    (:func:`float_hypers`) given in that form."""
    import inspect

    from optax_gate.kit import surface_build

    fn = surface_build.resolve(path)
    sig = inspect.signature(fn)
    args, kwargs = sweep_inputs(path)
    base = dict(sig.bind_partial(*args, **kwargs).arguments)
    out = {"base": base}
    for name, param in sig.parameters.items():
        for value, _why in SCHEDULE_PARAMS.get(name, ()):
            current = base.get(name, param.default)
            if type(current) is type(value) and current == value:
                continue
            out[f"{name}={_text(value)}"] = {**base, name: value}
    if float_hypers(path):
        for form in HYPER_FORMS:
            _, kwargs = hyper_inputs(path, [], base, form)
            out[f"hyper={form}"] = kwargs
    return out


def _result(x: Any) -> tuple[str, str, bool]:
    """(dtype text, value text, finite) of one schedule value."""
    import numpy as np

    if isinstance(x, (bool, int, float)):
        f = float(x)
        return f"py {type(x).__name__}", _value(f), math.isfinite(f)
    a = np.asarray(x)
    kind = a.dtype.name + ("" if a.ndim == 0 else f"[{','.join(map(str, a.shape))}]")
    weak = " weak" if getattr(x, "weak_type", False) else ""
    f = float(a.astype(np.float32).ravel()[0]) if a.size else math.nan
    return kind + weak, _value(f), math.isfinite(f)


def schedule_outcomes(path: str, corner: str, kwargs: dict[str, Any]) -> dict[str, str]:
    """The schedule ``path`` built with ``kwargs``, evaluated at
    :data:`SCHEDULE_STEPS` in each of :data:`SCHEDULE_MODES`: one line per
    mode, ``<corner>/<mode>``: ``ok float32 weak 1 0.5 0.25 0.1 0.1`` (the
    dtypes, " weak" for a weakly typed array, ``py float`` for a Python
    number (``py float64`` for NumPy's float64); the values at each step to 4 significant digits), ``non-finite
    ...`` when a value is NaN or infinite, or ``raises <type>`` (the message
    under ``<corner>/<mode>/error``); a schedule that cannot be built is one
    line ``<corner>: build <type>`` (the message under ``<corner>/error``)."""
    import jax

    from optax_gate.kit import surface_build

    jnp = _jnp()
    out: dict[str, str] = {}
    try:
        schedule = surface_build.resolve(path)(**kwargs)
    except Exception as exc:  # the outcome is the exception's type
        out[corner] = f"build {type(exc).__name__}"
        out[f"{corner}/error"] = message(exc)
        return out
    steps32 = [jnp.asarray(s, jnp.int32) for s in SCHEDULE_STEPS]
    calls = {"int": lambda: [schedule(s) for s in SCHEDULE_STEPS],
             "int32": lambda: [schedule(s) for s in steps32],
             "jit": lambda: (lambda f: [f(s) for s in steps32])(jax.jit(schedule))}
    for mode in SCHEDULE_MODES:
        key = f"{corner}/{mode}"
        try:
            results = [_result(x) for x in calls[mode]()]
        except Exception as exc:  # the outcome is the exception's type
            out[key] = f"raises {type(exc).__name__}"
            out[f"{key}/error"] = message(exc)
            continue
        kinds = "/".join(dict.fromkeys(k for k, _, _ in results))
        status = "ok" if all(f for _, _, f in results) else "non-finite"
        out[key] = f"{status} {kinds} {' '.join(v for _, v, _ in results)}"
    return out


def schedule_record(path: str) -> dict[str, str]:
    """Every corner of :func:`schedule_corners` with its outcomes, keys ``corner.<corner>/<mode>``."""
    out: dict[str, str] = {}
    for corner, kwargs in schedule_corners(path).items():
        out.update({f"corner.{k}": v for k, v in schedule_outcomes(path, corner, kwargs).items()})
    return out


# ----------------------------------------------------------- transformations

#: How each floating hyperparameter is given, all at once (those with a
#: Python-float default and the required ones filled by name), over float32
#: params: 0-d float32 arrays, 0-d bfloat16 arrays and NumPy float32 scalars
#: (``np.float32``, what a config read with NumPy gives). Python floats are the
#: sweep's own call (its protocol contracts record that one); a factory with
#: no floating hyperparameter gets no such corner.
HYPER_FORMS = ("float32", "bfloat16", "numpy_float32")
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
#: Leaves of the representative PyTree (``surface_build.params``) the grid's
#: params keep (less the entry's ``skip_leaves``): a vector and a matrix, so
#: that a matrix-only transformation (muon) and a factored one see a matrix.
TRANSFORMATION_LEAVES = ("r1", "r2")
#: Arguments the grid adds to the table entry's, so that an option takes
#: effect: path -> (arguments, why).
CORNER_ARGS: dict[str, tuple[dict[str, Any], str]] = {
    "optax.scale_by_learning_rate": ({"learning_rate": 0.1}, "learning_rate=None is the identity (transform.py: "
                                     "'None means no scaling'), where flip_sign does nothing"),
}
#: Transformations of the table with no corner grid, and why (besides the
#: table's own ``left_out``).
TRANSFORMATION_LEFT_OUT: dict[str, str] = {
    "optax.chain": "takes transformations only: no option, no hyperparameter of its own",
    "optax.named_chain": "takes named transformations only (as optax.chain)",
    "optax.lbfgs": ("an eager zoom line search re-traces its loop on every call: about 2 s per corner on the 2-core "
                    "machine (the grid's budget); its value corners are shift-invariant (the search compares "
                    "differences of value_fn), optax.scale_by_backtracking_linesearch has them"),
    "optax.scale_by_zoom_linesearch": "as optax.lbfgs: 2 s per eager corner, value corners shift-invariant",
    "optax.contrib.scale_by_muon": ("its default weight_dimension_numbers=None raises on a dict of params (ledger "
                                    "scale-by-muon-default-dimension-numbers): every corner raises that one error; "
                                    "optax.contrib.muon, which wraps it, has the grid"),
}


#: Baseline defects the transformation grid shows on a documented input
#: (as :data:`SCHEDULE_DEFECTS`): (path, corner) -> ledger id.
TRANSFORMATION_DEFECTS: dict[tuple[str, str], str] = {
    ("optax.scale_by_novograd", "mu_dtype=float32"): known_defect("novograd-mu-dtype-cond-branches"),
}


def transformation_paths() -> list[str]:
    """The table's transformations that get a grid (not ``left_out``, not in :data:`TRANSFORMATION_LEFT_OUT`)."""
    from optax_gate.kit.surface_table import TRANSFORMATIONS

    return [p for p, e in TRANSFORMATIONS.items() if not e.left_out and p not in TRANSFORMATION_LEFT_OUT]


def transformation_grid() -> list[str]:
    """The paths of :func:`transformation_paths` with at least one corner
    (:func:`transformation_corners`; a path that no longer resolves is kept,
    its contract then fails). The others take no option, no floating
    hyperparameter and no value (``optax.identity``, ``optax.scale_by_sign``...)."""
    out = []
    for path in transformation_paths():
        try:
            if transformation_corners(path):
                out.append(path)
        except Exception:  # a removed or changed API: its contract says how
            out.append(path)
    return out


def _args(entry: Any) -> dict[str, Any]:
    """The table entry's arguments and the grid's own (:data:`CORNER_ARGS`)."""
    return {**entry.args, **CORNER_ARGS.get(entry.path, ({}, ""))[0]}


def _floats(fn: Any, entry: Any) -> dict[str, float]:
    """The floating hyperparameters of ``fn`` (Python-float defaults, and the
    required ones :func:`surface_build.fill` gives a float), with their values."""
    import inspect

    from optax_gate.kit import surface_build

    if entry.builder is not None:
        return {}
    filled = surface_build.fill(fn, _args(entry))
    out = {}
    for name, p in inspect.signature(fn).parameters.items():
        value = filled.get(name, p.default)
        if type(value) is float:
            out[name] = value
    return out


def _hyper_form(value: float, form: str) -> Any:
    """``value`` as a 0-d JAX array of ``form``'s dtype, or as a NumPy scalar
    (``numpy_float32``: ``np.float32(value)``, what a config read with NumPy gives)."""
    import numpy as np

    if form == "numpy_float32":
        return np.float32(value)
    return _jnp().asarray(value, _dtype(form))


def transformation_corners(path: str) -> dict[str, tuple[dict[str, Any], str, Any]]:
    """Corner name -> (option overrides, params dtype, value or None), derived
    from the factory's signature: ``hyper=<form>`` per :data:`HYPER_FORMS`
    (not for a builder entry: its builder fixes the hyperparameters); each
    boolean flipped (``nesterov=True``); each ``*_dtype`` option per
    :data:`DTYPE_OPTION_VALUES` (``mu_dtype=bfloat16``); for a value-driven
    entry, ``value=<v>`` per :data:`VALUE_CORNERS`."""
    import inspect

    from optax_gate.kit import surface_build
    from optax_gate.kit.surface_table import TRANSFORMATIONS

    entry = TRANSFORMATIONS[path]
    fn = surface_build.resolve(path)
    out: dict[str, tuple[dict[str, Any], str, Any]] = {}
    if entry.builder is None and _floats(fn, entry):
        out.update({f"hyper={form}": ({"__hyper__": form}, "float32", None) for form in HYPER_FORMS})
    for name, p in inspect.signature(fn).parameters.items():
        if name in OPTIONS_LEFT_OUT or name in _args(entry):
            continue
        if isinstance(p.default, bool):
            out[f"{name}={not p.default}"] = ({name: not p.default}, "float32", None)
        elif name.endswith("_dtype"):
            for value, pdtype in DTYPE_OPTION_VALUES.items():
                out[f"{name}={value}"] = ({name: value}, pdtype, None)
    if "value" in entry.needs:
        out.update({f"value={v:g}": ({}, "float32", v) for v in VALUE_CORNERS})
    return out


#: Short dtype names of the transformation grid's lines (a line stays under
#: 80 characters, so that YAML never folds it).
SHORT_DTYPES = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "float64": "f64", "int32": "i32",
                "int64": "i64", "bool": "bool", "key<fry>": "key"}


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


def transformation_outcome(path: str, overrides: dict[str, Any], pdtype: str, value: Any,
                           errors: dict[str, str], key: str) -> str:
    """One eager ``init`` + ``update`` of ``path`` at a corner: ``ok u f32 |u|
    0.123 u0 -0.05 s f32x4,i32x1`` (the updates' dtypes, their global norm and
    the first entry of the first non-empty leaf to 3 significant digits, the
    state's leaves counted per dtype; short dtype names, :data:`SHORT_DTYPES`), ``non-finite
    ...`` (a NaN or an infinity in the updates or the state), ``build <type>``
    or ``raises <type>`` (the message in ``errors[key]``). Params: the leaves
    :data:`TRANSFORMATION_LEAVES` of ``surface_build.params`` in ``pdtype``,
    gradients of seed 1 (the model's where the entry needs ``grad``)."""
    import functools

    import jax
    import numpy as np

    from optax_gate.kit import surface_build
    from optax_gate.kit.surface_probe import extra_args, step_grads
    from optax_gate.kit.surface_table import TRANSFORMATIONS

    jnp = _jnp()
    entry = TRANSFORMATIONS[path]
    fn = surface_build.resolve(path)
    opts = {k: v for k, v in overrides.items() if k != "__hyper__"}
    opts = {k: (_dtype(v) if k.endswith("_dtype") else v) for k, v in opts.items()}
    form = overrides.get("__hyper__")
    if form:
        opts.update({k: _hyper_form(v, form) for k, v in _floats(fn, entry).items()})
    try:
        if entry.builder is not None:
            tx = entry.builder(functools.partial(fn, **opts))
        else:
            tx = surface_build.build(path, {**_args(entry), **opts})
    except Exception as exc:  # the outcome is the exception's type
        errors[key] = message(exc)
        return f"build {type(exc).__name__}"
    skip = set(entry.skip_leaves)
    keep = [n for n in TRANSFORMATION_LEAVES if n not in skip] or [n for n in surface_build.SHAPES if n not in skip]
    drop = tuple(n for n in surface_build.SHAPES if n not in keep)
    p = surface_build.params(_dtype(pdtype), skip=drop)
    g = surface_build.params(_dtype(pdtype), seed=1, skip=drop)
    try:
        extra = extra_args(entry, p)
        if value is not None:
            extra["value"] = jnp.asarray(value, jnp.float32)
            if "value_fn" in extra:
                shift = value - float(surface_build.model(p))
                extra["value_fn"] = lambda q: surface_build.model(q) + shift
        u, s = tx.update(step_grads(entry, p, g), tx.init(p), p, **extra)
        leaves = [np.asarray(x) for x in jax.tree.leaves(u)]
        states = [np.asarray(x) for x in jax.tree.leaves(s) if jnp.issubdtype(jnp.result_type(x) if not hasattr(x, "dtype") else x.dtype, jnp.inexact)]
    except Exception as exc:  # the outcome is the exception's type
        errors[key] = message(exc)
        return f"raises {type(exc).__name__}"

    def finite(a):
        return not jnp.issubdtype(a.dtype, jnp.inexact) or bool(np.all(np.isfinite(a.astype(np.float32))))
    bad = not all(finite(a) for a in leaves + states)
    udt = ",".join(dict.fromkeys(_dtype_name(a) for a in leaves)) or "none"
    floats = [a.astype(np.float64) for a in leaves if jnp.issubdtype(a.dtype, jnp.floating)]
    norm = math.sqrt(sum(float(np.sum(np.square(a))) for a in floats))
    first = next((float(a.ravel()[0]) for a in floats if a.size), math.nan)
    return f"{'non-finite' if bad else 'ok'} u {udt} |u| {_value3(norm)} u0 {_value3(first)} s {_state_text(s)}"


def _value3(x: float) -> str:
    return "nan" if math.isnan(x) else "inf" if math.isinf(x) else f"{x:.3g}"


def transformation_record(path: str) -> dict[str, str]:
    """Every corner of :func:`transformation_corners` with its outcome, keys
    ``corner.<corner>`` (and ``corner.<corner>/error`` for a message)."""
    out: dict[str, str] = {}
    for corner, (overrides, pdtype, value) in transformation_corners(path).items():
        errors: dict[str, str] = {}
        out[f"corner.{corner}"] = transformation_outcome(path, overrides, pdtype, value, errors, f"corner.{corner}/error")
        out.update(errors)
    return out
