"""Mutants of optax.rmsprop (see tests/contracts/test_rmsprop.py)."""

from optax_gate.mutants.registry import family

mutant = family("rmsprop", "tests/contracts/test_rmsprop.py")
