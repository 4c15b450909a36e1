"""Stage 8, what the contracts cannot see, diffed between the two sides (API surface, warnings, dependencies).

Its modules: ``docs/architecture.md``. May import: ``base`` to ``team_code``."""
