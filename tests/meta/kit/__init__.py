"""Tests of the contracts' kit: references, helpers, the surface tables and corners, ledgers, snapshots,
tolerances, mutants."""
