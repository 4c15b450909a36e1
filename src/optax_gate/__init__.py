"""optax-gate: contract suite and upgrade gate for Optax, JAX, jaxlib and Flax.

Two halves, one subpackage each, plus the proof that the contracts can fail:

- ``optax_gate.gate``: the gate tool. Runs in the light tool environment
  (``requirements-tools.txt``), builds the environments under test, runs the
  contracts there in a subprocess, compares the runs and writes the reports.
  It never imports JAX, Optax or Flax (``tests/meta/test_layout.py`` checks).
- ``optax_gate.kit``: the contract kit. Runs *inside* each environment under
  test: the helpers the contracts in ``tests/contracts/`` import (tolerance
  policy, float64 references, hypothesis strategies, PyTree and dtype helpers,
  the guide registry, the resume checkpoints, the environment probe).
- ``optax_gate.mutants``: deliberately broken variants of each contracted API,
  one module per API family (mirroring ``tests/contracts/``), and the check
  that every contract fails under one of them.
- ``optax_gate.pytest_plugin``: markers, contract metadata and the version
  header (in-environment, registered through the ``pytest11`` entry point).
"""
