"""Stage 5, what the contracts cannot see, and whose code it reaches.

``surface``, ``surface_values``, ``deprecations`` (the API surface diff),
``dependencies`` (the dependency diff), ``unseen`` (these sections attached to
a report), ``usage``, ``call_sites``, ``composition``, ``attribution`` and
``scope`` (the team's code and which findings reach it), ``team_run`` and
``divergence`` (``--run``: the team's own run on both sides), ``speed``
(speed readings), ``upstream_tests`` (optax's shipped tests cross-run).

May import: ``base``, ``inputs``, ``install``, ``run``, ``judge``."""
