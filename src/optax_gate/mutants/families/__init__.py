"""The built-in mutant families, one module per contract module (``sgd.py`` for ``tests/contracts/test_sgd.py``), listed
in ``optax_gate.mutants.FAMILIES``."""
