"""Mutants of optax.adafactor (see tests/contracts/test_adafactor.py)."""

from optax_gate.mutants.registry import family

mutant = family("adafactor", "tests/contracts/test_adafactor.py")
