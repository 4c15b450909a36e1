"""The tolerance policy (``optax_gate.kit.tolerances``) bites where it should."""

import math
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from optax_gate.kit import tolerances
from optax_gate.kit.tolerances import ELEMENTWISE, EXACT, assert_close


def ulps_off(x: Any, n: Any, dtype: Any = np.float32) -> Any:
    """``x`` moved ``n`` ULPs (at x's magnitude) up, in ``dtype``."""
    x = np.asarray(x, dtype)
    for _ in range(n):
        x = np.nextafter(x, np.asarray(np.inf, dtype))
    return x


def test_within_budget_passes_and_beyond_fails() -> None:
    assert_close(ulps_off(1.0, 2), 1.0, dtype=np.float32, ulps=ELEMENTWISE)
    with pytest.raises(AssertionError, match="ULP"):
        assert_close(ulps_off(1.0, 6), 1.0, dtype=np.float32, ulps=ELEMENTWISE)


def test_exact_rejects_one_ulp() -> None:
    assert_close(np.float32(0.5), 0.5, dtype=np.float32, ulps=EXACT)
    with pytest.raises(AssertionError):
        assert_close(ulps_off(0.5, 1), 0.5, dtype=np.float32, ulps=EXACT)


def test_bfloat16_budget_is_wider_than_float32() -> None:
    assert_close(1.0 + 2 * 2.0**-7, 1.0, dtype="bfloat16", ulps=ELEMENTWISE)
    with pytest.raises(AssertionError):
        assert_close(1.0 + 2 * 2.0**-7, 1.0, dtype=np.float32, ulps=ELEMENTWISE)


def test_scale_is_the_operand_magnitude() -> None:
    # 1 - 0.9999999 cancels: the error is judged against the operands (1.0).
    assert_close(1.2e-7, 0.0, dtype=np.float32, ulps=ELEMENTWISE, scale=1.0)
    with pytest.raises(AssertionError):
        assert_close(1.2e-7, 0.0, dtype=np.float32, ulps=ELEMENTWISE)


@pytest.mark.parametrize(("actual", "message"), [(np.ones(3), "shape"), (np.array([np.nan, 1.0]), "non-finite")])
def test_shape_and_non_finite_are_failures(actual: Any, message: Any) -> None:
    with pytest.raises(AssertionError, match=message):
        assert_close(actual, np.ones(2), dtype=np.float32, ulps=ELEMENTWISE)


def test_reduction_budget_grows_with_terms_and_rejects_negatives() -> None:
    assert tolerances.reduction(0) == ELEMENTWISE and tolerances.reduction(10) == ELEMENTWISE + 20
    with pytest.raises(ValueError):
        tolerances.reduction(-1)


def test_no_bound_is_below_the_smallest_normal_number() -> None:
    """XLA on CPU flushes subnormals to zero: an expected -1.4e-46 (below
    float32's smallest normal) may come out as -0.0 and passes, while an error
    of twice the smallest normal still fails."""
    tiny = float(np.finfo(np.float32).tiny)
    assert tolerances.bound(np.array([-1.4e-46]), np.float32, 6).min() == tiny
    tolerances.assert_close(np.array([-0.0]), np.array([-1.4e-46]), dtype=np.float32, ulps=6)
    with pytest.raises(AssertionError):
        tolerances.assert_close(np.array([2 * tiny]), np.array([0.0]), dtype=np.float32, ulps=6)
    for name in ("float64", "float32", "bfloat16"):  # flushed to zero below their smallest normal
        assert tolerances.TINY[name] == float(ml_dtypes.finfo(name).tiny)
    assert tolerances.TINY["float16"] == float(ml_dtypes.finfo("float16").smallest_subnormal)


def test_the_policy_page_states_each_budget_as_the_constants_set_it() -> None:
    """docs/tolerances.md is the one place the budgets are explained: each constant's value there is the
    kit's, and so are the machine epsilons and the ensemble factor."""
    import re

    page = (Path(__file__).resolve().parents[3] / "docs" / "tolerances.md").read_text(encoding="utf-8")
    rows = {m[1]: m[2] for m in re.finditer(r"^``(\w+)``,?\s+(\S+)", page, re.M)}
    assert rows["EXACT"] == str(tolerances.EXACT) and rows["ELEMENTWISE"] == str(tolerances.ELEMENTWISE)
    assert rows["ENSEMBLE_FACTOR"] == str(tolerances.ENSEMBLE_FACTOR)
    assert rows["MEMORY_RTOL"] == f"{round(tolerances.MEMORY_RTOL * 100)}"
    assert f"{tolerances.MEMORY_ATOL} bytes" in page
    assert f"{int(tolerances.reduction(0))} + 2 * n_terms" in page
    for name, eps in (("float64", 2.0**-52), ("float32", 2.0**-23), ("float16", 2.0**-10), ("bfloat16", 2.0**-7)):
        exponent = round(math.log2(eps))
        assert re.search(rf"^{name}\s+2\*\*{exponent}\b", page, re.M), name
        assert tolerances.EPS[name] == eps, name
