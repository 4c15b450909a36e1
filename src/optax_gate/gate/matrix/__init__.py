"""Stage 12, the release matrix: newer releases found on the index, the environments planned, their runs combined.

Its modules: ``docs/architecture.md``. May import: ``base`` to ``upstream``."""
