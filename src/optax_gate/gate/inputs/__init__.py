"""Stage 1, the inputs: what the user typed, checked before anything runs.

``options`` (the command line's options, typed and frozen: each stage
receives the part it uses), ``validate`` (SPECs, locks and the output folder checked; the refusal
every input check raises; paths shown as typed),
``typed_path`` (paths read from where the user stands), ``user_paths``
(``--usage`` paths, SPECs that are paths), ``requirements`` (the
candidate's requirement set: the baseline's direct requirements with the named
packages replaced), ``team_contracts`` (``--contracts DIR``), ``usage_files``
(which files of the team's folders are read), ``declared`` (the packages the team's project declares).

May import: ``base``."""
