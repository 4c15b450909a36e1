"""The entry script of the GitHub Action (``action.yml`` at the repository root): ``python -m optax_gate.action
keys|gate|comment``.

How it does its job and why: ``docs/module-notes.md``."""
