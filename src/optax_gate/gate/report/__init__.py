"""Stage 12, the reports: every renderer and the report's JSON schema
(``report.schema.json``).

``markdown`` (report.md, its sections), ``html_page`` (report.html),
``json_file`` (report.json), ``matrix_page`` (the matrix report),
``surface_section``, ``speed_section``, ``team_run_section`` and
``bisect_section`` (the sections beyond the contracts).

May import: ``base`` to ``matrix``."""
