"""Mutants of multi_transform (placeholder)."""

from optax_gate.mutants.registry import family

mutant = family("multi-transform", "tests/contracts/test_multi_transform.py")
