"""Mutants of ``optax.microbatching`` over a sharded batch
(``tests/contracts/multidevice/test_microbatching_sharded.py``):
the stand-in of :mod:`optax_gate.mutants.families.microbatching` (runnable at the pinned 0.2.6, which has no
``optax.microbatching``) with SUM leaving out a microbatch, and with CONCAT joining the outputs out of the batch's
order."""

from __future__ import annotations

from optax_gate.mutants.families.microbatching import stand_in
from optax_gate.mutants.registry import family

mutant = family("microbatching_sharded", "tests/contracts/multidevice/test_microbatching_sharded.py")

for _fault, _what in (
    ("sum-last-dropped", "SUM over a sharded batch leaves out the last microbatch's output"),
    ("concat-order", "CONCAT over a sharded batch joins the microbatch outputs out of the batch's row order"),
):
    mutant(f"microbatching-sharded-{_fault}", _what)(lambda optax, fault=_fault: stand_in(fault))  # type: ignore[misc]
