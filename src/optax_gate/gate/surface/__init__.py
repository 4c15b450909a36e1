"""Stage 5, one environment's public API read without importing it: ``public_api`` (each public path's kind, signature and target), ``default_values`` (the literal values of its defaults) and ``deprecations`` (what it says is deprecated).

May import: ``base``, ``inputs``, ``install``, ``run``, ``judge``."""
