"""Stage 6, one environment's public API, read without importing it.

Its modules: ``docs/architecture.md``. May import: ``base`` to ``judge``."""
