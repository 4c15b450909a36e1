"""The contract kit: helpers the contracts import, run inside each environment
under test (they need JAX, Optax and, for ``models`` and ``resume``, Flax).

Modules: ``guides`` (guide registry and kinds of contract), ``tolerances``
(the tolerance policy), ``references`` (float64 NumPy references),
``strategies`` (hypothesis strategies), ``trees``, ``dtypes``,
``trajectories``, ``recompilation`` (PyTree, dtype, multi-step and compile
count helpers), ``pinned`` (error message fragments of the baseline),
``models`` (the NNX model), ``resume`` (checkpoints across versions), ``probe``
(versions and import check of an environment; also run by the gate as
``python -m optax_gate.kit.probe``).
"""
