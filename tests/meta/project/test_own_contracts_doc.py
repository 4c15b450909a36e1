"""docs/own-contracts.md: its Adam-family example runs and passes at the
baseline with the bias-correction budget, and fails without it (the first
AdamW contract a team writes failed at the baseline because the page did not
say so). Runs in the tests environment (the baseline's optax and jax)."""

import re
from typing import Any

import pytest

from tests.meta.support.paths import ROOT

PAGE = ROOT / "docs" / "own-contracts.md"


def example() -> str:
    """The page's Python block that uses ``tolerances.bias_correction``, unindented."""
    for block in re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S):
        if "bias_correction" in block:
            lines = block.splitlines()
            indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
            return "\n".join(line[indent:] for line in lines)
    raise AssertionError("docs/own-contracts.md has no example that uses tolerances.bias_correction")


def test_the_adam_family_example_passes_with_the_bias_correction_budget_and_fails_without() -> None:
    namespace: dict[str, Any] = {}
    exec(compile(example(), str(PAGE), "exec"), namespace)
    test = next(v for k, v in namespace.items() if k.startswith("test_"))
    test()  # passes at the baseline with the page's budget
    tolerances = namespace["tolerances"]
    namespace["budget"] = lambda dtype, step, **kw: (
        4 * namespace["ELEMENTWISE"]
    )  # the budget without the bias correction
    with pytest.raises(AssertionError, match="ULP"):
        test()
    assert tolerances.bias_correction(0.999, 1, "float32") > 100
