"""The corner grids' shared helpers: an outcome in one short line, dtypes by name, a hyperparameter in each of the
forms."""

from __future__ import annotations

import math
from typing import Any

#: How each floating hyperparameter is given, all at once (those with a
#: Python-float default and the required ones filled by name), over float32
#: params: 0-d float32, bfloat16 and float16 arrays (strongly typed), a weakly
#: typed 0-d array (``weak``: ``jnp.asarray(0.1)``, what a value computed from
#: Python floats under JAX is) and NumPy float32 scalars (``np.float32``, what
#: a config read with NumPy gives). Python floats are the sweep's own call (its
#: protocol contracts record that one); a factory with no floating
#: hyperparameter gets no such corner.
HYPER_FORMS = ("float32", "bfloat16", "float16", "weak", "numpy_float32")


def jnp_module() -> Any:
    """``jax.numpy``, imported when a grid runs (never at import: the judge reads this package's tables)."""
    import jax.numpy as jnp

    return jnp


def optax_module() -> Any:
    """``optax``, imported when a grid runs (as :func:`jnp_module`)."""
    import optax

    return optax


def value_text(x: float) -> str:
    """A float to 4 significant digits, ``nan``, ``inf`` or ``-inf``."""
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf") if math.isinf(x) else f"{x:.4g}"


def message(exc: BaseException, limit: int = 50) -> str:
    """An exception's message on one line, kept clear of the snapshot drift's
    separators (``": "`` -> ``" - "``, ``"; "`` -> ``", "``, ``"->"`` -> ``"to"``)."""
    text = " ".join(str(exc).split()).replace(": ", " - ").replace("; ", ", ").replace("->", "to")
    return text[:limit]


def describe(thunk: Any, errors: dict[str, str] | None = None, key: str = "") -> str:
    """The outcome of ``thunk()`` in one line (see ``docs/module-notes.md``); with
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
        return f"{'ok' if math.isfinite(out) else 'non-finite'} python {type(out).__name__} {value_text(float(out))}"
    if isinstance(out, tuple) and all(isinstance(v, int) for v in out):
        return f"ok shape ({','.join(map(str, out))})"
    if isinstance(out, (np.dtype, type)) or (hasattr(out, "dtype") and not hasattr(out, "shape")):
        return f"ok dtype {np.dtype(out).name}"
    jnp = jnp_module()
    leaves = jax.tree.leaves(out)
    arrays = [np.asarray(x) for x in leaves]
    inexact = [jnp.issubdtype(a.dtype, jnp.inexact) for a in arrays]  # bfloat16's NumPy kind is 'V', not 'f'
    bad = any(
        f and not np.all(np.isfinite(a.astype(np.complex64 if np.iscomplexobj(a) else np.float32)))
        for a, f in zip(arrays, inexact, strict=True)
    )
    if len(arrays) == 1 and arrays[0].ndim == 0 and not isinstance(out, dict):
        a = arrays[0]
        val = (
            value_text(float(np.real(a.astype(np.complex64 if np.iscomplexobj(a) else np.float32))))
            if inexact[0]
            else str(a)
        )
        return f"{'non-finite' if bad else 'ok'} {a.dtype.name}[] {val}"
    sig = ",".join(f"{a.dtype.name}[{','.join(map(str, a.shape))}]" for a in arrays) or "no leaves"
    return f"{'non-finite' if bad else 'ok'} {sig}{'' if bad else ' finite'}"


def as_dtype(name: Any) -> Any:
    """A dtype named as text (``bfloat16``, ``float16``, ``float32``) as the JAX dtype; anything else as given."""
    return getattr(jnp_module(), name) if isinstance(name, str) and name in ("bfloat16", "float16", "float32") else name


def hyper_form(value: float, form: str) -> Any:
    """``value`` as a 0-d JAX array of ``form``'s dtype, weakly typed (``weak``: ``jnp.asarray(value)``), or as
    a NumPy scalar (``numpy_float32``: ``np.float32(value)``, what a config read with NumPy gives)."""
    import numpy as np

    if form == "numpy_float32":
        return np.float32(value)
    if form == "weak":
        return jnp_module().asarray(value)
    return jnp_module().asarray(value, as_dtype(form))
