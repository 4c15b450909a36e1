"""The microbatching contracts accept a correct implementation on the pinned
0.2.6, which has no ``optax.microbatching`` (there the contracts skip, and
the mutants run them against a faulty stand-in): with the stand-in carrying
no fault put in its place, every contract of
``tests/contracts/test_microbatching.py`` passes (the real one of optax 0.2.8
passes them too: the closing note of issue 40 says so)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[3]
RUN = """
import sys, optax, pytest
from optax_gate.mutants.families import microbatching
for name, value in microbatching.stand_in("").items():
    setattr(optax, name, value)
sys.exit(pytest.main(["-q", "-p", "no:randomly", "-p", "no:cacheprovider", "-rs", "tests/contracts/test_microbatching.py"]))
"""  # noqa: E501 (a script or page written out as it runs)


def test_thestand_in_without_a_fault_passes_every_contract() -> None:
    proc = subprocess.run([sys.executable, "-c", RUN], cwd=ROOT, capture_output=True, text=True, timeout=600)
    tail = proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, tail
    assert " passed" in proc.stdout and "skipped" not in proc.stdout and "failed" not in proc.stdout, tail
