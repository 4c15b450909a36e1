"""Stage 5, baseline against candidate, contract by contract: changes, findings, causes, the verdict; the ledger entries
a new baseline accepts.

Its modules: ``docs/architecture.md``. May import: ``base`` to ``reuse``."""
