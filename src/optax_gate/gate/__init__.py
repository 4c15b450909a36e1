"""The gate tool: everything that runs in the light tool environment.

Laid out by stage, in the order a gate runs (``docs/architecture.md`` lists
every module):

- ``base/``: what every stage shares (atomic writes, a failure detail in
  plain words);
- ``inputs/``: what the user typed, checked before anything runs;
- ``install/``: what each side installs (extras, builds from source,
  environments and their locks, JAX's compilation cache);
- ``run/``: running the contracts in an environment and keeping what they
  gave (runner, outcomes, the warnings raised, results cache, evidence
  folders, progress); not to be confused with ``--run``, the team's own run,
  which ``team_run/`` compares;
- ``judge/``: baseline against candidate, contract by contract (compare,
  findings, causes) and the verdict (verdict);
- ``surface/``: one environment's public API, read without importing it;
- ``team_code/``: the team's code read without running it (``--usage``),
  and which findings reach it;
- ``diffs/``: what the contracts cannot see, diffed (API surface, warnings,
  dependencies), scoped to the team's code;
- ``team_run/``: the team's own run on both sides (``--run``);
- ``speed/``: the speed of a training step on both sides;
- ``upstream/``: optax's own shipped tests cross-run;
- ``matrix/``: the release matrix (discovery of the releases, the plan of
  environments and how their runs combine);
- ``report/``: every renderer and the report's JSON schema;
- ``bisect/``: the commit that changed a finding;
- on top, the flows: ``cli``, ``cli_parser`` and ``cli_help`` (command line, its grammar, its help),
  ``gate_flow``, ``compare_flow``, ``sides`` (one side of a comparison),
  ``assemble`` (where the analyses' sections enter the report),
  ``late`` (the phases after the contracts), ``matrix_flow``,
  ``rebaseline_flow``.

Import rule: a module imports only from its own stage and the stages listed
before it, and never from the flows on top (``tests/meta/test_stages.py``).

Import boundary: nothing here imports ``jax``, ``optax`` or ``flax``, directly
or through ``optax_gate.kit``; the gate must work when the candidate cannot
even be imported (``tests/meta/test_layout.py``).
"""
