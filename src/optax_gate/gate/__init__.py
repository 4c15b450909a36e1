"""The gate tool: everything that runs in the light tool environment.

Modules: ``cli`` (command line), ``requirements`` (candidate requirement
sets), ``environments`` (build and reuse environments with uv), ``runner``
(probe an environment and run the contracts there, in a subprocess),
``outcomes`` (fold a pytest report log into contract outcomes), ``compare``
(change and verdict logic), ``findings`` (group contract changes into
findings, by cause across APIs), ``details`` (failure details in plain words),
``heartbeat`` (progress lines that never go quiet), ``report_json``, ``report_markdown`` and ``report_matrix``
(renderers), ``matrix`` and ``discovery`` (the release matrix), ``atomic``
(atomic file writes).

Import boundary: nothing here imports ``jax``, ``optax`` or ``flax``, directly
or through ``optax_gate.kit``; the gate must work when the candidate cannot
even be imported (``tests/meta/test_layout.py``).
"""
