"""Stage 13, bisection: the commit that changed a finding.

``command`` (``python -m optax_gate bisect`` and ``gate --bisect``), ``flow`` (one bisection per
package, its report), ``history`` (the commits between two releases),
``search`` (the search over them), ``probe`` (one commit built and its
contracts run).

May import: ``base`` to ``report``."""
