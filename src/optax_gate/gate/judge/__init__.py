"""Stage 4, judging: baseline against candidate, contract by contract.

``compare`` (the change of each contract), ``findings`` (contract changes
grouped into findings, one per failure pattern), ``causes`` (findings joined,
one per upstream cause), ``verdict`` (the report's verdict and
its reasons: the one module that sets them).

May import: ``base``, ``inputs``, ``install``, ``run``."""
