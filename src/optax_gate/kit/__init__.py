"""The contract kit, run inside each environment under test: at its top the helpers a contract imports (a team's own
contracts too, ``docs/own-contracts.md``); in subpackages the references, the generated surface, the corner grids, the
training set-ups and what the gate asks an environment."""
