"""Mutants of training_recipes (placeholder)."""

from optax_gate.mutants.registry import family

mutant = family("training-recipes", "tests/contracts/test_training_recipes.py")
