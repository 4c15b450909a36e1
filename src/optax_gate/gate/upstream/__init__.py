"""Stage 11, optax's own shipped tests cross-run between the two sides (``--upstream-tests``).

Its modules: ``docs/architecture.md``. May import: ``base`` to ``speed``."""
