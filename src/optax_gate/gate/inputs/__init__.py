"""Stage 1, what the user typed, checked before anything runs.

Its modules: ``docs/architecture.md``. May import: ``base``."""
