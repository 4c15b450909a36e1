"""Stage 3, the runs: the contracts run in an environment, and what they gave.

``runner`` (probe an environment and run the contracts in subprocesses),
``session_args`` (the arguments of ``./noxw -s tests``) and ``pytest_plugins``
(the plugins each pytest process loads),
``devices`` (simulated devices), ``outcomes`` (a pytest report log folded
into contract outcomes), ``warnings_diff`` (the warnings a run raised),
``results_cache`` (results kept per contract module), ``moved_ledger``
(ledger entries of moved behaviour written by ``rebaseline``), ``same_code`` (a
candidate that runs the baseline's code takes its outcomes), ``baseline_snapshots``
(snapshots of the team's own baseline lock), ``evidence`` (run folders),
``progress`` and ``heartbeat`` (console lines).

May import: ``base``, ``inputs``, ``install``."""
