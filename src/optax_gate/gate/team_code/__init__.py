"""Stage 7, the team's code read without running it (``--usage``), and which findings reach it.

Its modules: ``docs/architecture.md``. May import: ``base`` to ``surface``."""
