"""Stage 13, every renderer, and the report's JSON schema (``report.schema.json``).

Its modules: ``docs/architecture.md``. May import: ``base`` to ``matrix``."""
