"""optax-gate: contract suite and upgrade gate for Optax, JAX, jaxlib and Flax.

Package layout (one purpose per module):

- Used by the contracts (run inside an environment with JAX):
  ``guides`` (the guide registry), ``tolerances`` (the tolerance policy),
  ``references`` (float64 NumPy references), ``strategies`` (hypothesis
  strategies), ``pytest_plugin`` (markers, metadata, version header),
  ``probe`` (version and import check of an environment).
- Used by the gate (pure standard library, no JAX):
  ``requirements`` (candidate requirement sets), ``environments`` (build and
  reuse environments with uv), ``runner`` (probe and run the contracts in one
  environment), ``outcomes`` (fold a pytest report log into contract outcomes),
  ``compare`` (change and verdict logic), ``report_json`` and
  ``report_markdown`` (renderers), ``atomic`` (atomic file writes), ``cli``.
"""
