"""The threshold corners: each API that compares a measured quantity with a threshold, called with the quantity exactly
at it.

At ``at`` the quantity equals the threshold exactly (both float32-exact:
``||[3, 4]|| = 5``); at ``below`` and ``above`` the threshold is the next
float32 below or above it. Which branch a ``<`` or ``<=`` takes at equality
is seen only there: in a gradient (``safe_norm``'s is 0 on its floor), a
decision (``skip_large_updates``' ``should_skip``) or a count
(``per_example_global_norm_clip``'s clipped examples). APIs whose two
branches give the same outcome at equality (``clip_by_global_norm`` scales
by ``max_norm / g_norm = 1``, ``projection_l2_ball`` by ``scale / norm = 1``)
are left out: nothing there tells the branches apart.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: The three points: the threshold one float32 ULP below the quantity, equal to it, one ULP above.
POINTS = ("below", "at", "above")
#: Each point in words, as a report glosses its corner name.
POINT_WORDS = {
    "below": "the threshold one float32 ULP below the quantity",
    "at": "the quantity exactly at its threshold",
    "above": "the threshold one float32 ULP above the quantity",
}


def threshold(value: float, point: str) -> Any:
    """``value`` (float32-exact) at ``point``: the next float32 below it, itself, or the next above."""
    import numpy as np

    v = np.float32(value)
    return {"below": np.nextafter(v, np.float32(-np.inf)), "at": v, "above": np.nextafter(v, np.float32(np.inf))}[point]


def words(x: Any) -> str:
    """An array's elements in float32's shortest round-trip form (``5``, ``4.9999995``), comma-separated; a bool as
    ``True``."""
    import numpy as np

    a = np.asarray(x)
    if a.dtype == bool:
        return ",".join(str(bool(v)) for v in a.ravel())
    if np.issubdtype(a.dtype, np.integer):
        return ",".join(str(int(v)) for v in a.ravel())
    return ",".join(np.format_float_positional(np.float32(v), unique=True, trim="-") for v in a.ravel())


def _value_and_grad(fn: Callable[[Any], Any], x: Any) -> str:
    import jax

    value, grad = jax.value_and_grad(fn)(x)
    return f"value {words(value)} grad {words(grad)}"


def _safe_norm(optax: Any, point: str) -> str:
    import jax.numpy as jnp

    t = threshold(5.0, point)
    return _value_and_grad(lambda x: optax.safe_norm(x, t), jnp.array([3.0, 4.0]))


def _safe_rms(optax: Any, point: str) -> str:
    import jax.numpy as jnp

    t = threshold(2.0, point)
    return _value_and_grad(lambda x: optax.safe_root_mean_squares(x, t), jnp.array([2.0, 2.0]))


def _skip_large(optax: Any, point: str) -> str:
    import jax.numpy as jnp

    skip, aux = optax.skip_large_updates({"w": jnp.array([3.0, 4.0])}, jnp.array(0), None, threshold(25.0, point))
    return f"skip {words(skip)} norm_squared {words(aux['norm_squared'])}"


def _per_example_clip(optax: Any, point: str) -> str:
    import jax.numpy as jnp

    total, clipped = optax.per_example_global_norm_clip([jnp.array([[3.0, 4.0]])], threshold(5.0, point))
    return f"sum {words(total[0])} clipped {words(clipped)}"


def _hinge(optax: Any, point: str) -> str:
    import jax.numpy as jnp

    return _value_and_grad(lambda s: optax.losses.hinge_loss(s, jnp.float32(1.0)), jnp.float32(threshold(1.0, point)))


def _clip(optax: Any, point: str) -> str:
    import jax.numpy as jnp

    tx = optax.clip(threshold(1.0, point))
    return _value_and_grad(lambda u: jnp.sum(tx.update(u, tx.init(u))[0]), jnp.array([1.0, -1.0]))


#: Path -> (what is at the threshold, the call at a point). Each outcome is one line (``words``).
THRESHOLDS: dict[str, tuple[str, Callable[[Any, str], str]]] = {
    "optax.safe_norm": ("||[3, 4]|| = 5 against min_norm; value and gradient", _safe_norm),
    "optax.safe_root_mean_squares": ("rms([2, 2]) = 2 against min_rms; value and gradient", _safe_rms),
    "optax.skip_large_updates": ("||[3, 4]||^2 = 25 against max_squared_norm; should_skip", _skip_large),
    "optax.per_example_global_norm_clip": (
        "one example of norm 5 against l2_norm_clip; the sum and the clipped count",
        _per_example_clip,
    ),
    "optax.losses.hinge_loss": ("the margin s * t = 1 (target 1): value and gradient at the kink", _hinge),
    "optax.clip": ("updates [1, -1] against max_delta = 1; value and gradient of their sum", _clip),
}


def outcome(path: str, point: str) -> str:
    """``ok <the call's line>`` at ``point``, or ``raises <type>``; never raises for the library's errors."""
    import optax

    try:
        return "ok " + THRESHOLDS[path][1](optax, point)
    except Exception as exc:  # the outcome is the exception's type
        return f"raises {type(exc).__name__}"
