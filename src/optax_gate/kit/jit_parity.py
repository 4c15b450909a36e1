"""One check for "``jax.jit`` gives the eager result, and a second call with the same shapes compiles nothing",
shared by the contract modules.

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from optax_gate.kit import recompilation
from optax_gate.kit.tolerances import assert_close

Call = tuple[Any, ...] | Callable[[Any], tuple[Any, ...]]


def _arguments(call: Call, previous: Any) -> tuple[Any, ...]:
    return call(previous) if callable(call) else call


def run(
    fn: Callable[..., Any],
    calls: Sequence[Call],
    *,
    static_argnums: int | Sequence[int] = (),
    compiled_first: bool = False,
) -> tuple[list[Any], list[Any]]:
    """Run ``fn`` jitted, then eagerly, over ``calls``; return ``(jitted, eager)``
    results, one per call.

    Args:
      fn: the function under test (an ``update``, a loss, a whole step).
      calls: at least two calls; each a tuple of positional arguments or a
        callable ``previous_result -> tuple`` (``previous_result`` is None for
        the first call).
      static_argnums: passed to ``jax.jit``.
      compiled_first: the first jitted call must compile at least one program
        (a check that the counter sees compilations at all; off by default,
        since a function jitted by an earlier contract of the same process is
        served from JAX's in-memory cache and compiles nothing).

    Raises:
      AssertionError: a jitted call after the first compiled anything, or the
        first compiled nothing while ``compiled_first``.
    """
    if len(calls) < 2:
        raise ValueError("the check needs at least two calls (the second must not compile)")
    jitted_fn = jax.jit(fn, static_argnums=static_argnums)
    jitted: list[Any] = []
    with recompilation.counting() as compiled:
        for k, call in enumerate(calls):
            jitted.append(jitted_fn(*_arguments(call, jitted[-1] if jitted else None)))
            if k == 0:
                first = compiled.count
    if compiled_first:
        assert first > 0, "the first jitted call compiled nothing: the check would not see a recompilation"
    assert compiled.count == first, (
        f"a jitted call after the first, same shapes, recompiled ({compiled.count - first} compilation(s) "
        "after the first call)"
    )
    eager: list[Any] = []
    for call in calls:
        eager.append(fn(*_arguments(call, eager[-1] if eager else None)))
    return jitted, eager


def assert_same_leaves(
    jitted: Any,
    eager: Any,
    *,
    ulps: int,
    dtype: Any = jnp.float32,
    scale: float | None = None,
    what: str = "jit vs eager",
) -> None:
    """Every leaf of ``jitted`` equals the same leaf of ``eager``: floating
    leaves within ``ulps`` of ``dtype`` (:func:`~optax_gate.kit.tolerances.assert_close`),
    integer and boolean leaves exactly; both PyTrees have the same structure.

    Raises:
      AssertionError: a structure, shape or value mismatch.
    """
    jt, et = jax.tree.structure(jitted), jax.tree.structure(eager)
    assert jt == et, f"{what}: structure {jt} != eager {et}"
    for j, e in zip(jax.tree.leaves(jitted), jax.tree.leaves(eager), strict=True):
        e = np.asarray(e)
        if np.issubdtype(e.dtype, np.integer) or e.dtype == np.bool_:
            np.testing.assert_array_equal(np.asarray(j), e, err_msg=what)
        else:
            assert_close(j, e.astype(np.float64), dtype=dtype, ulps=ulps, scale=scale, what=what)


def assert_jit_matches_eager(
    fn: Callable[..., Any],
    calls: Sequence[Call],
    *,
    ulps: int,
    dtype: Any = jnp.float32,
    scale: float | None = None,
    static_argnums: int | Sequence[int] = (),
    compiled_first: bool = False,
    compare: Callable[[Any], Any] = lambda result: result,
) -> None:
    """:func:`run` the calls, then :func:`assert_same_leaves` on ``compare(result)``
    of each call (e.g. ``lambda r: r[0]`` to compare the updates only).

    Raises:
      AssertionError: a recompilation, or a jitted result that differs from
        the eager one beyond ``ulps``.
    """
    jitted, eager = run(fn, calls, static_argnums=static_argnums, compiled_first=compiled_first)
    for k, (j, e) in enumerate(zip(jitted, eager, strict=True), 1):
        assert_same_leaves(compare(j), compare(e), ulps=ulps, dtype=dtype, scale=scale, what=f"jit vs eager, call {k}")


def updates_only(result: tuple[Any, Any]) -> Any:
    """``compare=`` for an ``update`` call: its updates, not its new state."""
    return result[0]
