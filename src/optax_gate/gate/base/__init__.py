"""Stage 0, shared by every stage: atomic file writes (``atomic``), a
contract failure detail in plain words (``details``) and its numbers read
(``drift``: ULP figures, snapshot drift, non-finite leaves), the plain text
helpers they share (``plain_text``) and the report's data shapes (``model``,
generated from the schema).

May import: nothing else of the gate."""
