"""Generated contracts of the whole public surface beyond the transformations:
every public name is known to the tables, and every public callable is called
once (``optax_gate.kit.surface.calls``).

- ``test_known[path]``: each public callable of the environment's optax (and
  each path the tables name) is in the tables, and an alias is still the same
  object as its canonical path. A name the hand-written tables do not know
  fails at the pinned baseline (optax ``surface_table.BASELINE_OPTAX``: the
  tables must not fall behind); elsewhere it has generated entries
  (``surface_generated``: every contract below and of the other surface
  modules, from its signature and docstring) and passes, or, where none could
  be generated, is skipped with ``new, not contracted`` and the reason.
- ``test_called[path]``: one call at default or minimal arguments returns
  (acceptance); warnings raised only when called (a deprecation in the body)
  are recorded like every contract's. A call that fails in the baseline is
  pinned (``EXPECT``) as a known defect.
- ``test_values[path]``: the call's numeric result (a schedule's values at
  ``SCHEDULE_STEPS``), baseline snapshot within ``tolerances.SURFACE_STEP``
  float32 ULPs.
- ``test_schedule_eager_jit[path]``: a schedule at Python-int steps, int32
  steps and under ``jax.jit`` gives the same values (``ELEMENTWISE`` ULPs per
  stage, two stages, relative to 1).
- ``test_loss_grad[path]``: reverse- and forward-mode derivatives of the summed
  loss with respect to its first argument agree along a fixed direction, and
  are finite.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from optax_gate.kit import tolerances
from optax_gate.kit.surface import build as surface_build
from optax_gate.kit.surface import enumeration as surface_enum
from optax_gate.kit.surface import generated as surface_generated
from optax_gate.kit.surface.calls import CALLS, EXPECT, LEFT_OUT, SCHEDULE_STEPS
from optax_gate.kit.surface.table import BASELINE_OPTAX, TRANSFORMATIONS

GUIDE = "docs: optax 0.2.6 public API (optax/__init__.py and each public sub-module's __init__.py)"
CANONICAL = {**{p: p for p in TRANSFORMATIONS}, **{p: p for p in CALLS}, **{p: p for p in LEFT_OUT}}
CANONICAL.update({a: e.path for e in TRANSFORMATIONS.values() for a in e.aliases})
CANONICAL.update({a: p for p, (_, aliases, _) in CALLS.items() for a in aliases})
CANONICAL.update(surface_generated.GENERATED.aliases)


def _public() -> dict[str, Any]:
    try:
        return surface_enum.public_callables()
    except ImportError:  # a candidate whose sub-module does not import: each known path then fails on its own
        return {}


PUBLIC = _public()


def _mark(path: Any, kind: Any = pytest.mark.acceptance, defect: Any = None) -> Any:
    api = CANONICAL.get(path, path)
    marks = [pytest.mark.contract(api=api, guide=surface_generated.guide(api, GUIDE)), kind]
    if defect:
        marks.append(pytest.mark.known_defect(defect))
    return marks


@pytest.mark.parametrize("path", [pytest.param(p, marks=_mark(p), id=p) for p in sorted(set(CANONICAL) | set(PUBLIC))])
def test_known(path: Any) -> None:
    """The public name is in the tables (and resolves to its canonical object)."""
    import optax

    canonical = CANONICAL.get(path, path)
    generated = surface_generated.GENERATED
    if path not in CANONICAL or canonical in generated.kinds or path in generated.aliases:
        kind = generated.kinds.get(canonical) or surface_enum.classify(path, PUBLIC.get(path))
        if optax.__version__ == BASELINE_OPTAX:
            pytest.fail(
                f"{path} ({kind}) is public in the baseline but in no surface table: add it to "
                "optax_gate.kit.surface.table or surface_calls"
            )
        if canonical in generated.by_hand:  # contracted by hand, beside the tables
            assert callable(surface_build.resolve(path)), f"{path} is no longer callable"
            return
        if canonical in generated.left_out:
            pytest.skip(
                f"new, not contracted: {path} ({kind}) is public in optax {optax.__version__}; no contract "
                f"could be generated: {generated.left_out[canonical]}"
            )
    obj = surface_build.resolve(path)
    assert callable(obj), f"{path} is no longer callable"
    if canonical != path:
        assert obj is surface_build.resolve(canonical), f"{path} is no longer the same object as {canonical}"


def _called(path: Any) -> Any:
    _kind, _, _call = CALLS[path]
    expected, defect = EXPECT.get(path, ("ok", None))
    marks = _mark(path, pytest.mark.acceptance if expected == "ok" else pytest.mark.snapshot, defect)
    return pytest.param(path, expected, marks=marks, id=path)


def _call(path: Any) -> Any:
    kind, _, call = CALLS[path]
    result = call(surface_build.resolve(path))
    if kind == "schedule":
        result = [result(step) for step in SCHEDULE_STEPS]
    return result


@pytest.mark.parametrize(("path", "expected"), [_called(p) for p in CALLS])
def test_called(path: Any, expected: Any) -> None:
    """One call at default or minimal arguments returns (or fails as pinned)."""
    try:
        _call(path)
    except Exception as exc:  # the outcome is the exception's type
        assert type(exc).__name__ == expected, f"{path} raised {type(exc).__name__}: {exc}"
    else:
        assert expected == "ok", f"{path} returned where the baseline raised {expected}"


def _numeric(tree: Any) -> dict[str, np.ndarray]:
    out = {}
    for k, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
        if isinstance(leaf, jax.Array) and jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
            continue
        try:
            arr = np.asarray(leaf)
        except (TypeError, ValueError):
            continue
        if arr.dtype.kind in "biuf":
            out[jax.tree_util.keystr(k) or "result"] = arr.astype(np.float64) if arr.dtype.kind == "b" else arr
    return out


@pytest.mark.parametrize(
    "path", [pytest.param(p, marks=_mark(p, pytest.mark.snapshot), id=p) for p in CALLS if p not in EXPECT]
)
def test_values(path: Any, ndarrays_regression: Any) -> None:
    """The call's numeric result (baseline snapshot)."""
    values = _numeric(_call(path))
    tol = tolerances.SURFACE_STEP * tolerances.eps("float32")
    ndarrays_regression.check(values or {"no numeric leaf": np.zeros(0)}, default_tolerance={"atol": tol, "rtol": tol})


SCHEDULES = [p for p, (kind, _, _) in CALLS.items() if kind == "schedule"]
#: Losses called directly (``make_fenchel_young_loss`` builds a loss: called by ``test_called`` only).
LOSSES = [p for p, (kind, _, _) in CALLS.items() if kind == "loss" and p not in EXPECT and "make_" not in p]


@pytest.mark.parametrize("path", [pytest.param(p, marks=_mark(p), id=p) for p in SCHEDULES])
def test_schedule_eager_jit(path: Any) -> None:
    """Python-int steps, int32 steps and ``jax.jit`` agree."""
    schedule = CALLS[path][2](surface_build.resolve(path))
    as_int = np.array([schedule(s) for s in SCHEDULE_STEPS], np.float64)
    as_int32 = np.array([schedule(jnp.asarray(s, jnp.int32)) for s in SCHEDULE_STEPS], np.float64)
    jitted = jax.jit(schedule)
    under_jit = np.array([jitted(jnp.asarray(s, jnp.int32)) for s in SCHEDULE_STEPS], np.float64)
    assert np.all(np.isfinite(as_int)), f"non-finite at Python-int steps: {as_int}"
    for name, got in (("int32", as_int32), ("jit", under_jit)):
        tolerances.assert_close(
            got,
            as_int,
            dtype="float32",
            ulps=2 * tolerances.ELEMENTWISE,
            scale=1.0,
            what=f"{path} at {name} steps {SCHEDULE_STEPS}",
        )


@pytest.mark.parametrize("path", [pytest.param(p, marks=_mark(p), id=p) for p in LOSSES])
def test_loss_grad(path: Any) -> None:
    """Reverse mode equals forward mode along a fixed direction, both finite."""
    captured: dict[str, Any] = {}

    def spy(*args: Any, **kwargs: Any) -> Any:
        captured["args"], captured["kwargs"] = args, kwargs
        return jnp.zeros(())

    CALLS[path][2](spy)
    args, kwargs = captured["args"], captured["kwargs"]
    fn = surface_build.resolve(path)
    first = jnp.asarray(args[0], jnp.float32)

    def total(x: Any) -> Any:
        out = fn(x, *args[1:], **kwargs)
        return sum(
            jnp.sum(leaf) for leaf in jax.tree.leaves(out) if jnp.issubdtype(jnp.asarray(leaf).dtype, jnp.floating)
        )

    direction = jnp.linspace(-1.0, 1.0, first.size, dtype=jnp.float32).reshape(first.shape)
    grad = jax.grad(total)(first)
    _, tangent = jax.jvp(total, (first,), (direction,))
    assert bool(jnp.all(jnp.isfinite(grad))), f"non-finite gradient {grad}"
    tolerances.assert_close(
        tangent,
        np.sum(np.asarray(grad, np.float64) * np.asarray(direction, np.float64)),
        dtype="float32",
        ulps=tolerances.reduction(first.size) + tolerances.SURFACE_STEP,
        scale=max(1.0, float(np.sum(np.abs(np.asarray(grad))))),
        what=f"{path} jvp vs grad",
    )
