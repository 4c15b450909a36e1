"""Every transformation of the surface table inside each wrapper (issue 40 item 2; needs the environment's optax
and JAX when called).

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

from typing import Any

from optax_gate.kit import tolerances
from optax_gate.kit.surface import build as surface_build
from optax_gate.kit.surface import table as surface_table

#: Wrapper name -> how it is put around the inner transformation (docstring).
WRAPPERS: dict[str, str] = {
    "optax.chain": "chain(tx): a chain of one transformation is that transformation",
    "optax.MultiSteps": "MultiSteps(tx, every_k_schedule=1): each step applies the mean of one gradient, the gradient",
    "optax.apply_if_finite": "apply_if_finite(tx, 2): finite gradients are passed to tx",
    "optax.masked": "masked(tx, every leaf True): tx on every leaf",
    "optax.multi_transform": "multi_transform({'x': tx}, every leaf 'x'): tx on every leaf",
    "optax.inject_hyperparams": "inject_hyperparams(factory)(**the same hyperparameters): the factory's transformation",
}


#: The leaves of the representative PyTree a record steps on (a vector and a
#: matrix: the ranks every transformation takes; the protocol covers 0-5).
LEAVES = ("r1", "r2")


def left_out(entry: surface_table.Entry, wrapper: str) -> str:
    """Why ``wrapper`` is not put around ``entry``'s transformation, or ''."""
    if wrapper == "optax.inject_hyperparams" and entry.builder is not None:
        return "built by a builder, not by a factory with hyperparameters"
    if entry.path in WRAPPERS:
        return "the wrapper itself"
    return ""


def _wrap(wrapper: str, entry: surface_table.Entry) -> Any:
    import jax

    from optax_gate.kit.surface import probe as surface_probe

    fn = surface_build.resolve(wrapper)
    if wrapper == "optax.inject_hyperparams":
        factory = surface_build.resolve(entry.path)
        return fn(factory)(**surface_build.fill(factory, dict(entry.args)))
    tx = surface_probe.build(entry)
    if wrapper == "optax.MultiSteps":
        return fn(tx, every_k_schedule=1)
    if wrapper == "optax.apply_if_finite":
        return fn(tx, 2)
    if wrapper == "optax.masked":
        return fn(tx, lambda p: jax.tree.map(lambda _: True, p))
    if wrapper == "optax.multi_transform":
        return fn({"x": tx}, lambda p: jax.tree.map(lambda _: "x", p))
    return fn(tx)


def _step(entry: surface_table.Entry, tx: Any, params: Any, grads: Any) -> Any:
    from optax_gate.kit.surface import probe as surface_probe

    return tx.update(
        surface_probe.step_grads(entry, params, grads),
        tx.init(params),
        params,
        **surface_probe.extra_args(entry, params),
    )[0]


def compare(bare: Any, wrapped: Any) -> str:
    """``same`` or how the wrapped update differs from the bare one (see the module docstring)."""
    import jax
    import numpy as np

    if jax.tree.structure(bare) != jax.tree.structure(wrapped):
        return "other structure"
    pairs = list(zip(jax.tree.leaves(bare), jax.tree.leaves(wrapped), strict=False))
    dtypes = sorted({f"{w.dtype} for {b.dtype}" for b, w in pairs if w.dtype != b.dtype})
    if dtypes:
        return "other dtypes " + ", ".join(dtypes)
    if any(
        not np.all(np.isfinite(np.asarray(w, np.float64))) and np.all(np.isfinite(np.asarray(b, np.float64)))
        for b, w in pairs
    ):
        return "non-finite"
    bound = tolerances.SURFACE_STEP * tolerances.eps("float32")
    for b, w in pairs:
        b64, w64 = np.asarray(b, np.float64), np.asarray(w, np.float64)
        finite = np.isfinite(b64)
        if not np.array_equal(np.isfinite(w64), finite) or np.any(np.abs(w64[finite] - b64[finite]) > bound):
            return "other values"
    return "same"


def _outcome(fn: Any) -> tuple[Any, str]:
    try:
        return fn(), ""
    except Exception as exc:  # the outcome is the exception's type
        return None, f"raises {type(exc).__name__}"


def record(path: str) -> dict[str, str]:
    """``{"corner.wrapped=<wrapper>": outcome, ..., "corner.empty_pytree": outcome}``
    (and ``"corner.bare"`` when the bare step raises) for the table entry
    ``path`` (see the module docstring; keys as the corner grids write them,
    so a drift reads as a corner finding); never raises for the library's errors."""
    entry = surface_table.TRANSFORMATIONS[path]
    skip = tuple(n for n in surface_build.SHAPES if n not in LEAVES)
    params, grads = surface_build.params(skip=skip), surface_build.grads_per_step(1, skip=skip)[0]
    out: dict[str, str] = {}
    from optax_gate.kit.surface import probe as surface_probe

    bare, error = _outcome(lambda: _step(entry, surface_probe.build(entry), params, grads))
    if error:
        out["corner.bare"] = error
    for wrapper in WRAPPERS:
        if left_out(entry, wrapper):
            continue
        wrapped, werror = _outcome(lambda wrapper=wrapper: _step(entry, _wrap(wrapper, entry), params, grads))
        out[f"corner.wrapped={wrapper}"] = werror or ("ok" if error else compare(bare, wrapped))
    _, empty = _outcome(lambda: _step(entry, surface_probe.build(entry), {}, {}))
    out["corner.empty_pytree"] = empty or "ok"
    return out


def paths() -> list[str]:
    """The table entries the wrapped corners are recorded for: every contracted one."""
    return [p for p, e in surface_table.TRANSFORMATIONS.items() if not e.left_out]
