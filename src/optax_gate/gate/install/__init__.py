"""Stage 2, what each side installs: its environment and lock, builds from source, JAX's compilation cache.

Its modules: ``docs/architecture.md``. May import: ``base`` to ``inputs``."""
