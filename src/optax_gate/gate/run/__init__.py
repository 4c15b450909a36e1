"""Stage 3, the contracts run in an environment in pytest subprocesses, and what they gave: outcomes, warnings, evidence
folders.

Its modules: ``docs/architecture.md``. May import: ``base`` to ``install``."""
