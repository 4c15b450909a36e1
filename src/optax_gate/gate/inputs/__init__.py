"""Stage 1, the inputs: what the user typed, checked before anything runs.

``validate`` (the refusal every input check raises, shown paths),
``typed_path`` (paths read from where the user stands), ``user_paths``
(``--usage`` paths, SPECs that are paths), ``requirements`` (requirement
SPECs and locks), ``team_contracts`` (``--contracts DIR``), ``usage_files``
(which files of the team's folders are read).

May import: ``base``."""
