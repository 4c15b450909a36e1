"""What the gate asks an environment under test, run there as ``python -m``: ``probe`` (its versions and the import
check the gate runs first) and ``speed`` (the timed training steps of the speed readings)."""
