"""A pytest run log of contract outcomes, as the plugin writes it."""

from __future__ import annotations

from typing import Any

import pytest

from optax_gate.gate.run import outcomes


def run_log(pytester: pytest.Pytester, source: Any) -> Any:
    pytester.makepyfile(test_sample=source)
    log = pytester.path / "log.jsonl"
    result = pytester.runpytest_subprocess(f"--report-log={log}", "-p", "no:cacheprovider")
    return result, outcomes.parse(log)
