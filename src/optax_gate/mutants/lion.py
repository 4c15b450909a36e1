"""Mutants of optax.lion (see tests/contracts/test_lion.py)."""

from optax_gate.mutants.registry import family

mutant = family("lion", "tests/contracts/test_lion.py")
