"""Stage 2, what each side installs.

``environments`` (compile a side's lock, build and reuse its environment
with uv), ``compilation_cache``
(JAX's persistent compilation cache of an environment), ``extras``
(a SPEC's extra its package does not define is refused), ``source_specs`` and ``source_build``
(optax/flax built from a git commit), ``missing_requirements`` (packages a
built commit, or optax's own tests, need that the environment lacks,
installed beside it).

May import: ``base``, ``inputs``."""
