"""Build any public Optax transformation with default or minimal arguments
(needs the environment's optax and JAX).

A required hyperparameter is filled by its *name* (:func:`by_name`): the same
name means the same kind of value across Optax (``learning_rate``, ``max_norm``,
``decay``...). A transformation that needs another transformation (``inner``,
``base_optimizer``...) gets ``optax.sgd(0.1)``; one that needs a function gets a
small one written here. A table entry (``optax_gate.kit.surface.table``) can
override any argument.

The representative input (:func:`params`): a PyTree of float32 leaves of rank
0 to 5 and one empty leaf (shape ``(0,)``), seeded values in [-1, 1] with a
negative component in every non-empty leaf; the model whose value and gradient
feed ``value=``/``grad=``/``value_fn=`` is ``0.5 * sum(p**2)`` (:func:`model`).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

#: Leaf name -> shape of the representative PyTree.
SHAPES = {"r0": (), "r1": (3,), "r2": (2, 3), "r3": (2, 1, 3), "r4": (1, 2, 1, 2), "r5": (1, 1, 2, 1, 2), "empty": (0,)}


def params(dtype: Any = jnp.float32, seed: int = 0, skip: tuple[str, ...] = ()) -> dict[str, jax.Array]:
    """The representative params PyTree (see the module docstring), less the
    leaves named in ``skip`` (an API's documented limit, e.g. no rank 5): new
    arrays at each call (a donated step may delete them)."""
    return {name: jnp.asarray(x, dtype=dtype) for name, x in _values(seed).items() if name not in skip}


@functools.cache
def _values(seed: int) -> dict[str, np.ndarray]:
    """:func:`params`' float64 values for ``seed``, drawn once per process (read-only)."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in SHAPES.items():
        x = rng.uniform(-1.0, 1.0, size=shape)
        if x.size:
            x.flat[0] = -abs(x.flat[0]) - 0.25  # a negative component, away from zero
        x.flags.writeable = False
        out[name] = x
    return out


def grads_per_step(
    steps: int, dtype: Any = jnp.float32, seed: int = 1, skip: tuple[str, ...] = ()
) -> list[dict[str, jax.Array]]:
    """``steps`` gradient PyTrees of the params' structure (seeded, in [-1, 1])."""
    return [params(dtype, seed + k, skip) for k in range(steps)]


def model(p: Any) -> jax.Array:
    """The objective whose value/gradient feed the extra arguments: ``0.5 * sum(p**2)``."""
    return 0.5 * sum(jnp.sum(jnp.real(x) ** 2) for x in jax.tree.leaves(p))


class Fresh:
    """A value built anew for each transformation (an inner optimizer)."""

    def __init__(self, make: Any) -> None:
        self.make = make


def inner_sgd() -> Any:
    """The inner optimizer a wrapper of the sweep wraps: ``optax.sgd(0.1)``."""
    import optax

    return optax.sgd(0.1)


def _mask_all(p: Any) -> Any:
    return jax.tree.map(lambda _: True, p)


def _label(p: Any) -> Any:
    return {k: ("a" if k in ("r0", "r2", "r4") else "b") for k in p}


_INNER = ("inner", "tx", "optimizer", "base_optimizer", "fast_optimizer", "adv_optimizer")


def by_name() -> dict[str, Any]:
    """Argument name -> value given to a required parameter of that name."""
    import optax

    return {
        "learning_rate": 0.1,
        "step_size": 0.1,
        "max_norm": 1.0,
        "clipping": 0.1,
        "eta": 0.01,
        "gamma": 0.55,
        "max_consecutive_errors": 2,
        "max_delta": 1.0,
        "threshold": 1.0,
        "decay": 0.9,
        "max_backtracking_steps": 5,
        "max_linesearch_steps": 5,
        "l2_norm_clip": 1.0,
        "noise_multiplier": 0.1,
        "seed": 0,
        "sync_period": 2,
        "slow_step_size": 0.5,
        "measure_name": "norm",
        "measure": optax.tree.norm,
        "measures": {"norm": optax.tree.norm},
        "f": lambda updates, params=None: updates,
        **{k: Fresh(inner_sgd) for k in _INNER},
        "should_transform_fn": lambda count: count % 2 == 0,
        "mask": _mask_all,
        "freeze_mask": _mask_all,
        "step_size_fn": lambda count: 0.1,
        "transforms": Fresh(lambda: {"a": optax.sgd(0.1), "b": optax.set_to_zero()}),
        "param_labels": _label,
    }


def fill(fn: Any, overrides: dict[str, Any]) -> dict[str, Any]:
    """Keyword arguments for ``fn``: every required parameter by name, then
    ``overrides``; a :class:`Fresh` value is built.

    Raises:
      KeyError: a required parameter whose name :func:`by_name` does not know.
    """
    known = by_name()
    kwargs = {}
    for p in inspect.signature(fn).parameters.values():
        if p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name not in overrides:
            kwargs[p.name] = known[p.name]
    kwargs.update(overrides)
    return {k: (v.make() if isinstance(v, Fresh) else v) for k, v in kwargs.items()}


def resolve(path: str) -> Any:
    """The object at a dotted public path, looked up *now* (a mutant that
    replaced the attribute is seen).

    Raises:
      AttributeError: the path does not exist in this optax.
    """
    import importlib

    module, _, attr = path.rpartition(".")
    return getattr(importlib.import_module(module), attr)


def build(path: str, overrides: dict[str, Any] | None = None, builder: Any = None) -> Any:
    """The transformation at ``path`` built with :func:`fill`'s arguments, or by
    ``builder(fn)`` when the table gives one."""
    fn = resolve(path)
    if builder is not None:
        return builder(fn)
    return fn(**fill(fn, overrides or {}))


@functools.cache
def value_and_grad() -> Any:
    """``jax.value_and_grad(model)``, jitted: one compiled program per PyTree structure for every API (traced
    eagerly, the model's gradient was traced anew at each of the suite's thousands of calls). A PyTree without
    leaves keeps the eager call, whose value is then the Python float ``0.0`` (what the contracts of an empty
    PyTree have always passed as ``value=``: momo's ``value.astype`` raises on it)."""
    jitted, eager = jax.jit(jax.value_and_grad(model)), jax.value_and_grad(model)
    return lambda p: jitted(p) if jax.tree.leaves(p) else eager(p)
