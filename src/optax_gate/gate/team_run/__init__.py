"""Stage 9, the team's own run on both sides (``--run``).

Its modules: ``docs/architecture.md``. May import: ``base`` to ``diffs``."""
