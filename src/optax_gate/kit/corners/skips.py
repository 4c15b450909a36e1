"""The skip functions' corner grid: ``optax.skip_not_finite`` and ``optax.skip_large_updates`` on each updates corner
(an empty tree, an empty leaf, complex values, NaN and inf, bfloat16), alone and as
``MultiSteps(should_skip_update_fn=...)``."""

from __future__ import annotations

from typing import Any

from optax_gate.kit.corners.outcome import jnp_module, value_text

#: The skip functions: name -> (API path, keyword arguments it is bound with).
FUNCTIONS: dict[str, tuple[str, dict[str, Any]]] = {
    "skip_not_finite": ("optax.skip_not_finite", {}),
    "skip_large_updates": ("optax.skip_large_updates", {"max_squared_norm": 10.0}),
}
#: The updates corners: name -> leaves as ``(values, dtype)`` under keys ``a``, ``b``, ... (NaN and inf as text).
CORNERS: dict[str, list[tuple[list[Any], str]]] = {
    "finite": [([1.0, -2.0], "float32"), ([[0.5]], "float32")],
    "nan_inf": [([1.0, "nan"], "float32"), ([["inf"]], "float32")],
    "large": [([3.0, 2.0], "float32")],
    "empty_tree": [],
    "empty_leaf": [([], "float32"), ([3.0], "float32")],
    "complex": [([1 + 2j, -1j], "complex64")],
    "complex_nan": [([complex(1.0, float("nan"))], "complex64")],
    "bfloat16": [([300.0, 1.0], "bfloat16")],
}
#: How a skip function is called: alone (``fn(updates, step, params)``) or through MultiSteps (one update, k=1).
FORMS = ("alone", "multisteps")


def updates(corner: str) -> dict[str, Any]:
    """The updates PyTree of ``corner`` (:data:`CORNERS`), as JAX arrays."""
    import numpy as np

    jnp = jnp_module()
    # through NumPy in double precision first: it reads "nan" and "inf" as text, then JAX rounds once to the dtype
    return {
        key: jnp.asarray(np.asarray(values, np.complex128 if "complex" in dtype else np.float64), dtype)
        for key, (values, dtype) in zip("abcdefgh", CORNERS[corner], strict=False)
    }


def function(name: str) -> Any:
    """The skip function ``name`` with its bound keyword arguments, as ``should_skip_update_fn`` takes it."""
    import functools

    from optax_gate.kit.surface import build as surface_build

    path, kwargs = FUNCTIONS[name]
    return functools.partial(surface_build.resolve(path), **kwargs)


def _said(x: Any) -> str:
    """One value in a few characters: its dtype and value (a complex value as its real and imaginary parts)."""
    import numpy as np

    a = np.asarray(x)
    if a.dtype == bool:
        return f"bool {bool(a)}" if a.ndim == 0 else f"bool[{a.size}]"
    if a.ndim:
        return f"{a.dtype.name}[{','.join(map(str, a.shape))}]"
    if np.iscomplexobj(a):
        return (
            f"{a.dtype.name} "
            f"{value_text(float(a.real))}{'+' if not a.imag < 0 else '-'}{value_text(abs(float(a.imag)))}j"
        )
    return f"{a.dtype.name} {value_text(float(a.astype(np.float64)))}"


def skip_outcome(name: str, corner: str, form: str) -> str:
    """The outcome of skip function ``name`` on ``corner`` in ``form``: alone, ``skip <bool> <info key> <dtype>
    <value> ...``; through ``MultiSteps(optax.sgd(1.0), every_k_schedule=1, should_skip_update_fn=...)``,
    ``|u| <sum of |update|> skip_state ...`` after one update of params equal to the updates; or ``raises
    <type>``."""
    import jax
    import numpy as np
    import optax

    fn = function(name)
    u = updates(corner)
    try:
        if form == "alone":
            skip, info = fn(u, jnp_module().int32(0), None)
            return f"skip {_said(skip).removeprefix('bool ')} " + " ".join(
                f"{k} {_said(v)}" for k, v in sorted(info.items()) if k != "should_skip"
            )
        tx = optax.MultiSteps(optax.sgd(1.0), every_k_schedule=1, should_skip_update_fn=fn)
        new, state = tx.update(u, tx.init(u), u)
        size = sum(float(np.abs(np.asarray(x).astype(np.complex128)).sum()) for x in jax.tree.leaves(new))
        info = state.skip_state
        return f"|u| {value_text(size)} " + " ".join(f"{k} {_said(v)}" for k, v in sorted(info.items()))
    except Exception as exc:  # the outcome is the exception's type
        return f"raises {type(exc).__name__}"
