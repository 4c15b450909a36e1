"""Stage 0, shared by every stage: atomic file writes (``atomic``) and a
contract failure detail in plain words (``details``: the parsers behind the
outcome cells, the findings and every report) and the plain text helpers
they share (``plain_text``).

May import: nothing else of the gate."""
