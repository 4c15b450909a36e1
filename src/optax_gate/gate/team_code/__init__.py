"""Stage 6, the team's code read without running it (``--usage``): ``usage`` and ``arguments`` (the scan, each argument in its literal form), ``binding`` (each call site bound to both signatures, judged against the surface diff), ``call_sites`` (a finding's lines of the team's code), ``composition``, ``configuration`` and ``attribution`` (which findings reach those calls, from what their contract cases used), ``scope`` (the findings that reach the team's code set the verdict).

May import: ``base``, ``inputs``, ``install``, ``run``, ``judge``, ``surface``."""
