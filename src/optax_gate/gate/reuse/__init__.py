"""Stage 4, what a side takes instead of running: cached results, the baseline's outcomes where its code is the same or
a module reaches no changed function, a team baseline's snapshots.

Its modules: ``docs/architecture.md``. May import: ``base`` to ``run``."""
