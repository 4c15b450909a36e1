"""Stage 10, optax's own shipped tests cross-run between the two sides (``--upstream-tests``): ``upstream_tests`` (the cross-run), ``failures`` (its failing tests read, classified, made findings).

May import: ``base``, ``inputs``, ``install``, ``run``, ``judge``, ``surface``, ``team_code``, ``diffs``, ``team_run``, ``speed``."""
