"""Run one public transformation through the protocol and record what it does
(needs the environment's optax and JAX).

:func:`protocol` answers, for one table entry, each protocol property with an
*outcome* string: ``"ok"`` when the property holds, else the exception's type
name (``"TypeError"``) or a short reason (``"nonfinite: r2"``,
``"dtype: r1 float32 -> float64"``). The contracts compare each outcome with
the one the table pins for the baseline. Everything is computed once per API
and process (:func:`protocol` is cached) so that one test per property costs
one run.

Inputs: ``surface_build.params()`` (float32, ranks 0-5 and an empty leaf),
seeded gradients; ``value``/``grad``/``value_fn`` (and ``obj_fn``) from
``surface_build.model`` where the entry ``needs`` them.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from optax_gate.kit import recompilation, tolerances
from optax_gate.kit.surface import build as surface_build
from optax_gate.kit.surface.table import TRANSFORMATIONS, Entry
from optax_gate.kit.trees import signature

STEPS = 3
#: The protocol properties, in report order (each one contract per API).
PROPERTIES = (
    "init_update",
    "scan_carry",
    "trajectory_finite",
    "jit_eager",
    "no_recompile",
    "none_leaf",
    "zero_grads_finite",
    "unknown_kwarg",
    "value_float",
    "value_array",
)
#: The properties of the extra-arguments protocol.
EXTRA_ARGS_PROPERTIES = ("unknown_kwarg", "value_float", "value_array")


def extra_args_outcome(path: str) -> str:
    """What the extra-arguments properties give for ``path``'s transformation by
    its type (optax/_src/base.py): ``"ok"`` for a
    ``GradientTransformationExtraArgs`` (its ``update`` takes ``**extra_args``),
    ``"TypeError"`` for a plain ``GradientTransformation``; ``"ok"`` when it
    cannot be built (the protocol's other properties then fail on that)."""
    import optax

    try:
        tx = build(TRANSFORMATIONS[path])
    except Exception:
        return "ok"
    return "ok" if isinstance(tx, optax.GradientTransformationExtraArgs) else "TypeError"


def extra_args(entry: Entry, p: Any) -> dict[str, Any]:
    """The extra keyword arguments of ``update`` the entry ``needs``
    (``value``, ``grad``, ``value_fn``, ``obj_fn``), from the model at ``p``."""
    kwargs: dict[str, Any] = {}
    if entry.needs:
        value, grad = surface_build.value_and_grad()(p)
        for name in entry.needs:
            kwargs[name] = {
                "value": value,
                "grad": grad,
                "value_fn": surface_build.model,
                "obj_fn": surface_build.model,
            }[name]
    return kwargs


def step_grads(entry: Entry, p: Any, g: Any) -> Any:
    """The gradient a step uses: the model's own where the entry needs
    ``grad=`` (a line search checks that they agree), else the seeded one."""
    return surface_build.value_and_grad()(p)[1] if "grad" in entry.needs else g


def _outcome(fn: Any) -> str:
    try:
        return fn() or "ok"
    except Exception as exc:  # the outcome *is* the exception type
        return type(exc).__name__


def _check_like(updates: Any, p: Any) -> str | None:
    if jax.tree.structure(updates) != jax.tree.structure(p):
        return f"structure: {jax.tree.structure(updates)}"
    for name in p:
        if p[name] is None:
            continue
        u, q = jnp.asarray(updates[name]), p[name]
        if u.shape != q.shape or u.dtype != q.dtype:
            return f"leaf {name}: {u.dtype}{list(u.shape)} for {q.dtype}{list(q.shape)}"
    return None


def _nonfinite(tree: Any) -> list[str]:
    return sorted(
        jax.tree_util.keystr(k)
        for k, x in jax.tree_util.tree_flatten_with_path(tree)[0]
        if x is not None and not bool(jnp.all(jnp.isfinite(x)))
    )


def build(entry: Entry, **overrides: Any) -> Any:
    """The entry's transformation (its overrides, then ``overrides``)."""
    return surface_build.build(entry.path, {**entry.args, **overrides}, entry.builder)


@functools.cache
def protocol(path: str) -> dict[str, Any]:
    """``{property: outcome}`` for :data:`PROPERTIES`, plus ``"trajectory"``
    (params after each of :data:`STEPS` jitted scan steps, ``{"s1/r2": array}``)
    and ``"nonfinite"`` (which leaves come out non-finite, per input class).

    Raises:
      AttributeError: the path does not exist (a removed API); building or
        running errors are outcomes, not raised.
    """
    entry = TRANSFORMATIONS[path]
    surface_build.resolve(path)
    full, p, gs = (
        surface_build.params(),
        surface_build.params(skip=entry.skip_leaves),
        surface_build.grads_per_step(STEPS, skip=entry.skip_leaves),
    )
    out: dict[str, Any] = {}
    try:
        tx = build(entry)
    except Exception as exc:
        return {prop: f"build: {type(exc).__name__}" for prop in PROPERTIES} | {"trajectory": {}, "nonfinite": {}}

    def step(params: Any, state: Any, g: Any) -> Any:
        u, state = tx.update(step_grads(entry, params, g), state, params, **extra_args(entry, params))
        return jax.tree.map(lambda a, b: a + b, params, u), state, u

    eager: dict[str, Any] = {}

    def eager_step() -> None:
        eager["update"], eager["state"] = tx.update(step_grads(entry, p, gs[0]), tx.init(p), p, **extra_args(entry, p))
        eager["params"] = jax.tree.map(lambda a, b: a + b, p, eager["update"])

    eager_error = _outcome(eager_step)

    def init_update() -> Any:
        if entry.skip_leaves:  # the probe's PyTree lacks leaves: the whole one here
            g = surface_build.params(seed=1)
            u, _ = tx.update(step_grads(entry, full, g), tx.init(full), full, **extra_args(entry, full))
        elif "update" in eager:  # the same inputs as the eager step's (grads_per_step starts at seed 1)
            u = eager["update"]
        else:
            return eager_error
        return _check_like(u, full) or (f"nonfinite: {' '.join(_nonfinite(u))}" if _nonfinite(u) else None)

    out["init_update"] = _outcome(init_update)

    traj: dict[str, np.ndarray] = {}
    scan: dict[str, Any] = {}

    def scan_carry() -> None:
        def body(carry: Any, g: Any) -> Any:
            params, state = carry
            params, state, _ = step(params, state, g)
            return (params, state), params

        stacked = jax.tree.map(lambda *xs: jnp.stack(xs), *gs)
        scan["fn"] = jax.jit(lambda q, s: jax.lax.scan(body, (q, s), stacked))
        scan["carry"], seen = scan["fn"](p, tx.init(p))
        for k in range(STEPS):
            for name in p:
                traj[f"s{k + 1}/{name}"] = np.asarray(seen[name][k])

    out["scan_carry"] = _outcome(scan_carry)
    out["trajectory"] = traj
    bad = sorted({key.split("/")[1] for key, x in traj.items() if not np.all(np.isfinite(x))})
    out["trajectory_finite"] = (
        f"scan: {out['scan_carry']}" if not traj else f"nonfinite: {' '.join(bad)}" if bad else "ok"
    )
    # jit and recompilation are read off the scan's program (its first step; a second call with the
    # carry it returned), one compiled program per API; a jitted single step only where the scan fails.
    jitted = jax.jit(step)

    def jit_eager() -> Any:
        if "params" not in eager:
            return f"eager step: {eager_error}"
        params = {name: traj[f"s1/{name}"] for name in p} if traj else jitted(p, tx.init(p), gs[0])[0]
        for name in p:
            tolerances.assert_close(
                params[name],
                np.asarray(eager["params"][name], np.float64),
                dtype="float32",
                ulps=tolerances.SURFACE_STEP,
                scale=1.0,
                what=f"params[{name!r}] jit vs eager",
            )

    out["jit_eager"] = _outcome(jit_eager)

    def no_recompile() -> Any:
        if "carry" in scan:
            with recompilation.counting() as seen:
                scan["fn"](*scan["carry"])
        else:
            params, state, _ = jitted(p, tx.init(p), gs[0])
            with recompilation.counting() as seen:
                jitted(params, state, gs[1])
        return f"recompiled {seen.count} time(s)" if seen.count else None

    out["no_recompile"] = _outcome(no_recompile)

    def none_leaf() -> Any:  # optax's convention: None in the params and the gradients alike
        q, g = {**p, "r1": None}, {**gs[0], "r1": None}
        u, _state = tx.update(step_grads(entry, q, g), tx.init(q), q, **extra_args(entry, q))
        return _check_like(u, q) or None

    out["none_leaf"] = _outcome(none_leaf)

    def zero_grads_finite() -> Any:
        zeros = jax.tree.map(jnp.zeros_like, p)
        u, _ = tx.update(zeros, tx.init(p), p, **extra_args(entry, p))
        bad = _nonfinite(u)
        return f"nonfinite: {' '.join(bad)}" if bad else None

    out["zero_grads_finite"] = _outcome(zero_grads_finite)

    def call_with(**kwargs: Any) -> Any:
        return lambda: (
            tx.update(step_grads(entry, p, gs[0]), tx.init(p), p, **{**extra_args(entry, p), **kwargs}),
            None,
        )[1]

    out["unknown_kwarg"] = _outcome(call_with(not_an_argument=1.0))
    out["value_float"] = _outcome(call_with(value=1.0))
    out["value_array"] = _outcome(call_with(value=jnp.asarray(1.0, jnp.float32)))
    out["nonfinite"] = nonfinite(entry, tx, p, gs[0])
    out["state"] = signature(eager["state"]) if "state" in eager else f"eager step: {eager_error}"
    return out


def state_signature(path: str) -> Any:
    """``trees.signature`` of the state after one eager step (or why there is none)."""
    return protocol(path)["state"]


def nonfinite(entry: Entry, tx: Any, p: Any, g: Any) -> dict[str, str]:
    """Which update leaves come out non-finite, per input class: NaN in the
    first non-empty gradient leaf and inf in the last; NaN in a middle param leaf; the same NaN/inf
    gradients with every edge hyperparameter the factory has (learning rate,
    weight decay, momentum, decay) at zero. Each value is the leaf paths, or
    the exception's type name."""

    def poison(x: Any, v: Any) -> Any:
        return x.ravel().at[0].set(v).reshape(x.shape)

    sized = [n for n in p if p[n].size]
    bad_g = {**g, sized[0]: poison(g[sized[0]], jnp.nan), sized[-1]: poison(g[sized[-1]], jnp.inf)}
    bad_p = {**p, sized[len(sized) // 2]: poison(p[sized[len(sized) // 2]], jnp.nan)}

    def leaves(t: Any, params: Any, grads: Any) -> Any:
        def run() -> Any:
            u, _ = t.update(step_grads(entry, params, grads), t.init(params), params, **extra_args(entry, params))
            return " ".join(_nonfinite(u)) or "none"

        return _outcome(run)

    out = {"nan_inf_grads": leaves(tx, p, bad_g), "nan_param": leaves(tx, bad_p, g)}
    import inspect

    fn = surface_build.resolve(entry.path)
    try:
        names = set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        names = set()
    edge = {n: 0.0 for n in ("learning_rate", "weight_decay", "momentum", "decay") if n in names}
    if edge and entry.builder is None:
        try:
            zero = build(entry, **edge)
        except Exception as exc:
            out["zero_hyperparams"] = f"build: {type(exc).__name__}"
        else:
            out["zero_hyperparams"] = leaves(zero, p, bad_g)
    return out


#: The dtype variants of ``init_update`` (``tests/contracts/test_surface_dtypes.py``):
#: the half-precision floats mixed-precision training keeps params in (bfloat16,
#: float16), float64 (under ``jax.enable_x64``, scientific code) and complex64.
VARIANT_DTYPES = ("bfloat16", "float16", "float64", "complex64")


def variant_tree(dtype: str, seed: int) -> dict[str, jax.Array]:
    """The representative PyTree (ranks 0-5 and an empty leaf) in ``dtype``:
    bfloat16 rounds the float32 values; complex64 takes a second seeded tree
    (``seed + 100``) as the imaginary part, so no imaginary part is zero."""
    if dtype == "complex64":
        re, im = surface_build.params(seed=seed), surface_build.params(seed=seed + 100)
        return jax.tree.map(lambda a, b: (a + 1j * b).astype(jnp.complex64), re, im)
    return surface_build.params(jnp.dtype(dtype), seed)


@functools.cache
def init_update_variant(path: str, dtype: str) -> str:
    """``init_update``'s outcome for params and gradients of ``dtype``
    (:func:`variant_tree`): ``"ok"`` (structure, shapes and dtypes as the
    params', finite), ``"leaf r1: float32[3] for bfloat16[3]"``,
    ``"nonfinite: ['r2']"``, ``"build: <type>"`` or the exception's type."""
    entry = TRANSFORMATIONS[path]
    surface_build.resolve(path)
    # float64 exists only with x64 on: the params, the hyperparameters and the step all under it
    with jax.enable_x64(True) if dtype == "float64" else contextlib.nullcontext():
        p, g = variant_tree(dtype, 0), variant_tree(dtype, 1)
        try:
            tx = build(entry)
        except Exception as exc:
            return f"build: {type(exc).__name__}"

        def run() -> Any:
            u, _ = tx.update(step_grads(entry, p, g), tx.init(p), p, **extra_args(entry, p))
            return _check_like(u, p) or (f"nonfinite: {' '.join(_nonfinite(u))}" if _nonfinite(u) else None)

        return _outcome(run)
