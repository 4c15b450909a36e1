"""Mutants of clip (placeholder)."""

from optax_gate.mutants.registry import family

mutant = family("clip-elementwise", "tests/contracts/test_clip.py")
