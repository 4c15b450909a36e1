"""Stage 10, the speed of a training step on both sides.

Its modules: ``docs/architecture.md``. May import: ``base`` to ``team_run``."""
