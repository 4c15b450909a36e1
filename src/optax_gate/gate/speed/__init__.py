"""Stage 9, the speed of a training step on both sides: ``readings`` (readings taken interleaved, compared with the budget).

May import: ``base``, ``inputs``, ``install``, ``run``, ``judge``, ``surface``, ``team_code``, ``diffs``, ``team_run``."""
