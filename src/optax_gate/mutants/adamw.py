"""Mutants of optax.adamw (see tests/contracts/test_adamw.py)."""

from optax_gate.mutants.registry import family

mutant = family("adamw", "tests/contracts/test_adamw.py")
