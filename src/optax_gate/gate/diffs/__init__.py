"""Stage 7, what the contracts cannot see, diffed between the two sides: ``unseen`` (the API surface, warnings and dependency sections of a report, scoped to the team's code, and their findings), ``dependencies`` (the installed distributions diffed).

May import: ``base``, ``inputs``, ``install``, ``run``, ``judge``, ``surface``, ``team_code``."""
