"""Stage 4, judging: baseline against candidate, contract by contract.

``compare`` (the change of each contract and the verdict), ``findings``
(contract changes grouped into findings, one per cause).

May import: ``base``, ``inputs``, ``install``, ``run``."""
