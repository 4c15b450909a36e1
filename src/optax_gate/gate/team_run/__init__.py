"""Stage 8, the team's own run on both sides (``--run``): ``team_run`` (the run recorded, its outcome), ``reused`` (a recorded run read back for ``compare``), ``judging`` (the findings that explain it, their scope, the verdict about it), ``divergence`` (its first divergence and where the difference is born), ``witness`` (the run's own outputs compared without the recorder), ``team_files`` (the team's folder kept and put back around each run).

May import: ``base``, ``inputs``, ``install``, ``run``, ``judge``, ``surface``, ``team_code``, ``diffs``."""
