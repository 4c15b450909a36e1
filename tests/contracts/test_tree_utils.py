"""Contracts of the tree utilities' values (``optax.tree.*``, ``optax.global_norm``) against float64 NumPy references.

Guide: each utility's docstring (optax 0.2.6 ``optax/tree_utils/_tree_math.py``;
``global_norm`` in ``optax/_src/linear_algebra.py``), written out as float64
(complex128) NumPy in ``optax_gate.kit.references.tree_math``. Source read:
the same files; a reduction (``sum``, ``norm``, ``vdot``) promotes the leaves'
dtypes pairwise, ``max``/``min`` reduce each leaf with ``jnp.max``/``jnp.min``
(a size-0 leaf raises), ``norm`` squares a complex element's modulus, ``vdot``
conjugates its first argument.

- ``test_value_on_corner_tree[<call>-<corner>]`` (acceptance): the value on
  each corner PyTree of ``kit.corners.trees.TREES`` (a size-0 leaf, only
  empty leaves, no leaves, a 0-d leaf, ranks 0 to 5, int32, mixed
  float32/int32/bfloat16, bfloat16) where the utility defines one; the
  outcomes elsewhere (an exception, the result's dtype) are the corner grid's
  snapshots (``test_surface_corners_trees.py``).
- ``test_value_matches_reference[<call>]`` (property): the value on generated
  PyTrees of 1 to 6 leaves of mixed dtypes (float32, bfloat16, int32,
  complex64 where the utility takes complex), ranks 0 to 5, size-0 leaves.

Tolerances (``kit.tolerances``): an integer result is exact; ``max``, ``min``,
``norm(ord=inf)``, ``clip`` and ``where`` return input elements: exact when
every leaf has the result's dtype, else within ``ELEMENTWISE`` ULPs of the
coarsest float dtype among the leaves (mixed leaves promote pairwise from a
weakly typed initial value, so an int32 element beside a bfloat16 leaf is
rounded to bfloat16 on the way: ``tree.min`` of {-257 int32, 0 bfloat16,
0 float32} is float32 -256 at 0.2.6; a complex element's modulus is
computed); a
leaf-wise result is within ``ELEMENTWISE`` ULPs of its leaf's dtype relative
to the terms that produced it (a product's ``|x| * |y|``: a complex product's
real part subtracts two products and may cancel); a sum, norm or inner product over ``n`` elements within
``reduction(n)`` ULPs of the coarsest float dtype among the leaves and the
result, relative to the sum of the terms' magnitudes (a norm's terms are
positive: relative to the norm).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from optax_gate.kit import strategies
from optax_gate.kit.corners.trees import TREES, tree, tree_case_id
from optax_gate.kit.references import tree_math as ref
from optax_gate.kit.surface import build as surface_build
from optax_gate.kit.tolerances import ELEMENTWISE, EXACT, assert_close, reduction

GUIDE = (
    "docs: optax 0.2.6 tree utilities' docstrings (optax/tree_utils/_tree_math.py; optax.global_norm in "
    "optax/_src/linear_algebra.py)"
)
#: The scalar of ``scale``/``add_scale`` and the bounds of ``clip``, as the corner grid calls them.
SCALAR, LOW, HIGH = 0.5, -1.0, 1.0


@dataclasses.dataclass(frozen=True)
class Case:
    """One call of a tree utility.

    ``form``: ``one`` fn(t); ``two`` fn(t, t2); ``scale`` fn(0.5, t);
    ``add_scale`` fn(t, 0.5, t2); ``clip`` fn(t, -1.0, 1.0); ``where``
    fn(True, t, t2). ``budget``: ``sum`` (reduction, relative to the terms'
    magnitudes), ``norm`` (reduction, relative to the result), ``exact`` (an
    input element or a count), ``leafwise`` (``ELEMENTWISE`` per leaf),
    ``leafwise_exact`` (input elements per leaf).
    ``elements``: defined only when every leaf has an element (``jnp.max`` of
    a size-0 leaf raises). ``complex``: takes complex leaves.
    """

    path: str
    form: str
    reference: Callable[..., Any]
    budget: str
    kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)
    elements: bool = False
    complex: bool = True

    @property
    def id(self) -> str:
        return tree_case_id(self.path, self.kwargs)


CASES = (
    Case("optax.tree.sum", "one", ref.tree_sum, "sum"),
    Case("optax.tree.max", "one", ref.tree_max, "exact", elements=True, complex=False),
    Case("optax.tree.min", "one", ref.tree_min, "exact", elements=True, complex=False),
    Case("optax.tree.norm", "one", ref.tree_norm, "norm"),
    Case("optax.tree.norm", "one", ref.tree_norm, "norm", {"squared": True}),
    Case("optax.tree.norm", "one", ref.tree_norm, "norm", {"ord": 1}),
    Case("optax.tree.norm", "one", ref.tree_norm, "exact", {"ord": "inf"}, elements=True),
    Case("optax.global_norm", "one", ref.global_norm, "norm"),
    Case("optax.tree.vdot", "two", ref.tree_vdot, "sum"),
    Case("optax.tree.size", "one", ref.tree_size, "exact"),
    Case("optax.tree.add", "two", ref.tree_add, "leafwise"),
    Case("optax.tree.sub", "two", ref.tree_sub, "leafwise"),
    Case("optax.tree.mul", "two", ref.tree_mul, "leafwise"),
    Case("optax.tree.div", "two", ref.tree_div, "leafwise"),
    Case("optax.tree.scale", "scale", ref.tree_scale, "leafwise"),
    Case("optax.tree.add_scale", "add_scale", ref.tree_add_scale, "leafwise"),
    Case("optax.tree.clip", "clip", ref.tree_clip, "leafwise_exact", complex=False),
    Case("optax.tree.where", "where", ref.tree_where, "leafwise_exact"),
)


def _kwargs(case: Case) -> dict[str, Any]:
    return {k: (math.inf if v == "inf" else v) for k, v in case.kwargs.items()}


def _call(case: Case, t: Any, t2: Any) -> Any:
    fn = surface_build.resolve(case.path)  # looked up at call time: a mutant's patch applies
    kw = _kwargs(case)
    calls = {
        "one": lambda: fn(t, **kw),
        "two": lambda: fn(t, t2, **kw),
        "scale": lambda: fn(SCALAR, t, **kw),
        "add_scale": lambda: fn(t, SCALAR, t2, **kw),
        "clip": lambda: fn(t, LOW, HIGH, **kw),
        "where": lambda: fn(True, t, t2, **kw),
    }
    return calls[case.form]()


def _exact64(leaves: list[Any]) -> list[np.ndarray]:
    """Each leaf's values as float64, or complex128 for a complex leaf (exact for every dtype here)."""
    return [np.asarray(x, dtype=np.complex128 if jnp.iscomplexobj(x) else np.float64) for x in leaves]


def _reference(case: Case, xs: list[np.ndarray], ys: list[np.ndarray]) -> Any:
    kw = _kwargs(case)
    if case.form == "one":
        return case.reference(xs, **kw)
    if case.form == "two":
        return case.reference(xs, ys)
    if case.form == "scale":
        return case.reference(SCALAR, xs)
    if case.form == "add_scale":
        return case.reference(xs, SCALAR, ys)
    if case.form == "clip":
        return case.reference(xs, LOW, HIGH)
    return case.reference(True, xs, ys)


def _float_part(dtype: Any) -> np.dtype:
    """The real dtype whose epsilon bounds ``dtype``'s rounding (complex64 -> float32)."""
    d = jnp.dtype(dtype)
    return jnp.finfo(d).dtype if jnp.issubdtype(d, jnp.inexact) else d


def _coarsest(dtypes: list[Any]) -> Any:
    """The float dtype of largest epsilon among ``dtypes`` (integers left out); None if none is a float."""
    floats = [_float_part(d) for d in dtypes if jnp.issubdtype(jnp.dtype(d), jnp.inexact)]
    return max(floats, key=lambda d: jnp.finfo(d).eps) if floats else None


def _compare(got: Any, want: Any, dtype: Any, ulps: int, scale: float | None, what: str) -> None:
    """``got`` against ``want``: exactly when ``dtype`` is None (an integer result), else within ``ulps``;
    a complex value part by part."""
    g, w = np.asarray(got), np.asarray(want)
    with np.errstate(invalid="ignore"):  # inf - inf where both are inf (a division by zero): not an error
        _compare_arrays(g, w, dtype, ulps, scale, what)


def _compare_arrays(g: np.ndarray, w: np.ndarray, dtype: Any, ulps: int, scale: float | None, what: str) -> None:
    if dtype is None:
        np.testing.assert_array_equal(g, w, err_msg=what)
        return
    if np.iscomplexobj(w) or np.iscomplexobj(g):
        assert_close(np.real(g), np.real(w), dtype=dtype, ulps=ulps, scale=scale, what=f"{what} (real part)")
        assert_close(np.imag(g), np.imag(w), dtype=dtype, ulps=ulps, scale=scale, what=f"{what} (imaginary part)")
        return
    assert_close(g, w, dtype=dtype, ulps=ulps, scale=scale, what=what)


def check(case: Case, t: Any, t2: Any) -> None:
    """Call ``case`` on the PyTrees ``t`` (and ``t2``, same structure) and compare with its reference.

    Raises:
      AssertionError: the value is outside the budget (see the module docstring), or its structure differs.
    """
    got = _call(case, t, t2)
    xs, ys = _exact64(jax.tree.leaves(t)), _exact64(jax.tree.leaves(t2))
    want = _reference(case, xs, ys)
    in_dtypes = [x.dtype for x in jax.tree.leaves(t)]
    if case.budget.startswith("leafwise"):
        ulps = EXACT if case.budget == "leafwise_exact" else ELEMENTWISE
        got_leaves = jax.tree.leaves(got)
        assert jax.tree.structure(got) == jax.tree.structure(t), f"{case.id}: structure {jax.tree.structure(got)}"
        for i, (g, w) in enumerate(zip(got_leaves, want, strict=True)):
            scale = _leaf_scale(case, xs[i], ys[i])
            _compare(g, w, _coarsest([jnp.result_type(g)]), ulps, scale, f"{case.id} leaf {i}")
        return
    if case.budget == "exact":
        result = jnp.result_type(got)
        if len({*in_dtypes, result}) == 1 or not jnp.issubdtype(result, jnp.inexact):  # one dtype, or a count: exact
            _compare(got, np.asarray(want).astype(result), None, EXACT, None, case.id)
        else:
            # mixed leaves promote pairwise: an element passes through the coarsest float dtype (a complex one's
            # modulus is computed)
            _compare(got, want, _coarsest([*in_dtypes, result]), ELEMENTWISE, None, case.id)
        return
    n = sum(x.size for x in xs)
    dtype = _coarsest([*in_dtypes, jnp.result_type(got)])
    if dtype is None:  # integers only: the value is exact
        _compare(got, want, None, EXACT, None, case.id)
        return
    terms = sum(
        float(np.sum(abs(x) * (abs(y) if case.form == "two" else 1)))
        for x, y in zip(xs, ys if case.form == "two" else xs, strict=True)
    )
    scale = (terms or None) if case.budget == "sum" else None
    _compare(got, want, dtype, reduction(n), scale, case.id)


def _leaf_scale(case: Case, x: np.ndarray, y: np.ndarray) -> float | None:
    """The magnitude of the terms that produced a leaf-wise result (``tolerances.bound``'s ``scale``), its
    largest over the leaf: a product's or quotient's is ``|x| * |y|`` or ``|x| / |y|`` (a complex one adds
    two such terms and may cancel), a sum's the larger operand; None for an empty leaf."""
    if not x.size:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        if case.path == "optax.tree.mul":
            terms = [abs(x) * abs(y)]
        elif case.path == "optax.tree.div":
            terms = [np.where(y != 0, abs(x) / np.where(y != 0, abs(y), 1), 0.0)]
        else:
            terms = [abs(x), abs(y) * (SCALAR if case.form == "add_scale" else 1)]
    return float(max(np.max(t) for t in terms)) or None


def _defined(case: Case, t: Any) -> bool:
    """Whether ``case`` defines a value on ``t`` (see ``Case.elements`` and ``Case.complex``)."""
    leaves = jax.tree.leaves(t)
    if case.elements and (not leaves or any(np.size(x) == 0 for x in leaves)):
        return False
    return case.complex or not any(jnp.iscomplexobj(x) for x in leaves)


def _marks(case: Case, kind: Any) -> list[Any]:
    return [pytest.mark.contract(api=case.path, guide=GUIDE), kind]


@pytest.mark.parametrize(
    ("case", "corner"),
    [
        pytest.param(c, name, id=f"{c.id}-{name}", marks=_marks(c, pytest.mark.acceptance))
        for c in CASES
        for name in TREES
        if _defined(c, tree(name))
    ],
)
def test_value_on_corner_tree(case: Any, corner: Any) -> None:
    """The utility's value on the corner PyTree equals its float64 reference within the module's budget."""
    check(case, tree(corner), tree(corner, seed=1))


@functools.cache
def _trees(complex_leaves: bool, elements: bool) -> st.SearchStrategy[tuple[Any, Any]]:
    """Pairs of generated PyTrees of one structure and dtypes (one strategy object each: hypothesis validates it
    once)."""
    dtypes = (
        strategies.TYPED_DTYPES if complex_leaves else tuple(d for d in strategies.TYPED_DTYPES if d != "complex64")
    )
    return strategies.typed_pytrees(dtypes, empty_leaves=not elements).flatmap(
        lambda t: st.tuples(st.just(t), strategies.typed_like(t))
    )


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=_marks(c, pytest.mark.property)) for c in CASES])
@given(data=st.data())
def test_value_matches_reference(case: Any, data: Any) -> None:
    """On generated PyTrees (mixed dtypes, ranks 0 to 5, size-0 leaves where defined) the value equals the reference."""
    t, t2 = data.draw(_trees(case.complex, case.elements))
    check(case, jax.tree.map(jnp.asarray, t), jax.tree.map(jnp.asarray, t2))
