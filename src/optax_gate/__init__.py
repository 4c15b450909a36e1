"""optax-gate: contract suite and upgrade gate for Optax, JAX, jaxlib and Flax.

How it does its job and why: ``docs/module-notes.md``."""
