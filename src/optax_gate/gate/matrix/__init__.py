"""Stage 11, the release matrix: ``discovery`` (newer releases on the package
index) and ``plan`` (which candidate environments to build, and how their runs
combine into one report).

May import: ``base`` to ``upstream``."""
