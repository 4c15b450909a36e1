"""Edge hyperparameters meeting non-finite inputs (issue 18 item 2), for the generated transformation contracts
(needs the environment's optax and JAX).

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import functools
import inspect
import re
from typing import Any

import jax
import jax.numpy as jnp

from optax_gate.kit.surface import build as surface_build
from optax_gate.kit.surface.probe import build, extra_args, step_grads
from optax_gate.kit.surface.table import TRANSFORMATIONS, Entry

#: Hyperparameters set to zero one at a time, when the factory takes them.
HYPERPARAMETERS = ("learning_rate", "weight_decay", "momentum", "decay")
#: The non-finite input classes (see the module docstring).
INPUTS = ("nan_inf_grads", "nan_inf_params")


def names(entry: Entry) -> tuple[str, ...]:
    """The edge hyperparameters of ``entry``'s factory, in :data:`HYPERPARAMETERS`
    order; () for a builder entry or a factory without any. A path that no
    longer resolves gets all of them (its contract then fails there).
    """
    if entry.builder is not None or entry.left_out:
        return ()
    try:
        params = inspect.signature(surface_build.resolve(entry.path)).parameters
    except AttributeError:
        return HYPERPARAMETERS
    except (TypeError, ValueError):
        return ()
    return tuple(n for n in HYPERPARAMETERS if n in params)


def _poison(x: jax.Array, value: float) -> jax.Array:
    return x.ravel().at[0].set(value).reshape(x.shape)


def inputs(p: dict[str, jax.Array], g: dict[str, jax.Array]) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Input class -> (params, gradients), see the module docstring."""
    sized = [n for n in p if p[n].size]
    mid = sized[len(sized) // 2]
    bad_g = {**g, sized[0]: _poison(g[sized[0]], jnp.nan), sized[-1]: _poison(g[sized[-1]], jnp.inf)}
    bad_p = {**p, mid: _poison(p[mid], jnp.nan), sized[1]: _poison(p[sized[1]], jnp.inf)}
    return {"nan_inf_grads": (p, bad_g), "nan_inf_params": (bad_p, g)}


def _bad(x: Any) -> bool:
    return x is not None and jnp.issubdtype(jnp.asarray(x).dtype, jnp.inexact) and not bool(jnp.all(jnp.isfinite(x)))


def describe(prefix: str, updates: Any, state: Any) -> dict[str, str]:
    """Which leaves of ``updates`` and ``state`` are non-finite, keyed under
    ``prefix`` (see the module docstring)."""
    ups = [n for n, x in updates.items() if _bad(x)] if isinstance(updates, dict) else ["not-a-dict"]
    out = {f"{prefix}/updates": ",".join(ups) or "none"}
    for key, x in jax.tree_util.tree_flatten_with_path(state)[0]:
        if _bad(x):
            path = jax.tree_util.keystr(key)
            leaf = re.search(r"\['(r\d|empty)'\]$", path)
            slot = re.sub(r"\['([^']*)'\]", r".\1", path[: leaf.start()] if leaf else path)
            entry = f"{prefix}/state/{slot}"
            out[entry] = ",".join(filter(None, [out.get(entry, ""), leaf[1] if leaf else "all"]))
    return out


@functools.cache
def outcomes(path: str) -> dict[str, str]:
    """The records of every edge hyperparameter of the entry and input class
    (see the module docstring).

    Raises:
      AttributeError: the path does not exist (a removed API).
    """
    entry = TRANSFORMATIONS[path]
    surface_build.resolve(path)
    p = surface_build.params(skip=entry.skip_leaves)
    g = surface_build.params(seed=1, skip=entry.skip_leaves)
    out = {}
    for name in names(entry):
        try:
            tx = build(entry, **{name: 0.0})
        except Exception as exc:  # the outcome is the exception's type
            out.update({f"{name}=0/{k}": f"build {type(exc).__name__}" for k in INPUTS})
            continue
        for kind, (params, grads) in inputs(p, g).items():
            try:
                u, state = tx.update(
                    step_grads(entry, params, grads), tx.init(params), params, **extra_args(entry, params)
                )
                out.update(describe(f"{name}=0/{kind}", u, state))
            except Exception as exc:  # the outcome is the exception's type
                out[f"{name}=0/{kind}"] = f"raises {type(exc).__name__}"
    return out
