"""Compiled memory of each transformation's jitted ``update`` (``optax_gate.kit.surface.memory``; issue 56,
item 6).

``test_compiled_memory[api]`` (each transformation of the surface table that is not left out nor slow,
``memory_paths``): ``jax.jit(tx.update)`` lowered and compiled for a PyTree of a 256x128 dense kernel, a
3x3x8x16 convolution kernel and a bias (float32, ``MEMORY_SHAPES``), and the compiled program's argument,
output and temporary bytes read from ``memory_analysis()``. A labelled snapshot of optax 0.2.6 on CPU
(written by ``data_regression``, recorded by ``./noxw -s update-snapshots -- -k memory``), compared within
``MEMORY_RTOL`` and ``MEMORY_ATOL`` (``kit/tolerances.py``): a figure beyond both fails with its bytes
before and after and their ratio. Another platform's compiler assigns buffers otherwise: off CPU the
contract is skipped, with the reason.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from optax_gate.kit.surface import generated as surface_generated
from optax_gate.kit.surface.memory import backend, memory_paths, memory_record
from optax_gate.kit.tolerances import MEMORY_ATOL, MEMORY_RTOL

GUIDE = (
    "docs: JAX's ahead-of-time lowering (jax.stages.Compiled.memory_analysis: argument, output and temporary "
    "bytes of the compiled program); optax 0.2.6 transformations as the surface table builds them"
)


def _changes(expected: dict[str, int | str], obtained: dict[str, int | str]) -> list[str]:
    """Each figure beyond the tolerance, in bytes and as a ratio, and which way it moved (``temp bytes 852,032 ->
    262,232 (0.308 times as many: the update needs less memory)``),
    or the error the compilation raises now or no longer (``raises ValueError -> argument_bytes 413,716``)."""
    if "raises" in expected or "raises" in obtained:
        text = {
            k: ", ".join(f"{n} {v:,}" if isinstance(v, int) else f"raises {v}" for n, v in r.items())
            for k, r in (("e", expected), ("o", obtained))
        }
        return [] if expected == obtained else [f"{text['e']} -> {text['o']}"]
    out = []
    for name, e in expected.items():
        o = obtained.get(name)
        assert isinstance(e, int) and (o is None or isinstance(o, int))
        if o is None or abs(o - e) > max(MEMORY_ATOL, MEMORY_RTOL * abs(e)):
            ratio = (
                "gone"
                if o is None
                else (f"{o / e:.3g} times as many" if e else "from none")
                + (": the update needs more memory" if o > e else ": the update needs less memory")
            )
            out.append(f"{name.replace('_', ' ')} {e:,} -> {'none' if o is None else format(o, ',')} ({ratio})")
    return out


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(
            p, id=p, marks=[pytest.mark.contract(api=p, guide=surface_generated.guide(p, GUIDE)), pytest.mark.snapshot]
        )
        for p in memory_paths()
    ],
)
def test_compiled_memory(
    path: Any, data_regression: Any, original_datadir: Any, request: pytest.FixtureRequest
) -> None:
    """Argument, output and temporary bytes of the jitted update, within MEMORY_RTOL and MEMORY_ATOL of the baseline's
    (snapshot)."""
    if backend() != "cpu":
        pytest.skip(
            f"the compiled-memory snapshot is of CPU; this is {backend()}, whose compiler assigns buffers otherwise"
        )
    try:
        record: dict[str, int | str] = dict(memory_record(path))
    except Exception as exc:  # the baseline's outcome: scale_by_muon's default raises (ledger)
        record = {"raises": type(exc).__name__}
    snapshot = original_datadir / (re.sub(r"\W", "_", request.node.name) + ".yml")  # pytest-regressions' own name
    if not snapshot.exists() or request.config.getoption("force_regen") or request.config.getoption("regen_all"):
        data_regression.check(record)  # records it, explicitly asked (or fails: no snapshot)
        return
    changes = _changes(yaml.safe_load(snapshot.read_text()), record)
    assert not changes, (
        f"compiled memory changed (by more than {MEMORY_RTOL:.0%} and more than {MEMORY_ATOL:,} bytes): "
        + "; ".join(changes)
    )
