"""Stage 12, the reports: every renderer and the report's JSON schema
(``report.schema.json``).

``markdown`` (report.md, its sections), ``html_page`` (report.html),
``json_file`` (report.json), ``matrix_page`` (the matrix report),
``surface_section``, ``speed_section``, ``team_run_section``,
``upstream_section``, ``generated_section`` and ``bisect_section`` (the
sections beyond the contracts), ``your_code_line`` (a finding's lines of the
team's code), ``schema_model`` (``base/model.py`` generated from the schema).

May import: ``base`` to ``matrix``."""
