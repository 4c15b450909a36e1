"""The entry script of the GitHub Action (``action.yml`` at the repository
root): ``python -m optax_gate.action keys|gate|comment``.

It runs on the runner's plain Python 3.12 (``actions/setup-python``), before
any environment is built, so it uses the standard library only: it imports
nothing from ``optax_gate.gate`` (whose modules need the tools lock's
packages) and never JAX, Optax or Flax. The gate itself runs through
``noxw`` as everywhere else (``OPTAX_GATE_ACTION_GATE`` replaces that command,
a JSON list, for the meta tests).

- ``keys``: the cache keys of the action's ``actions/cache`` steps.
- ``gate``: the inputs (``INPUT_*`` environment variables, as ``action.yml``
  passes them) turned into one ``gate`` command run from the team's
  workspace; the outputs ``verdict``, ``exit-status`` and ``report`` written
  to ``$GITHUB_OUTPUT``; the findings and the report to
  ``$GITHUB_STEP_SUMMARY``. Exits with the action's status.
- ``comment``: the findings as one comment on the pull request, created or
  updated in place (``optax_gate.action.comment``).
"""
