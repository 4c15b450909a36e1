"""Stage 14, bisection: the commit that changed a finding.

Its modules: ``docs/architecture.md``. May import: ``base`` to ``report``."""
