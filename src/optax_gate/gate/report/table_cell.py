"""One cell of a Markdown table row, written the same way on every page of the report."""

from __future__ import annotations

from collections.abc import Collection

#: What a missing value reads as in a cell.
MISSING = "—"


def cell(text: object, *, missing: Collection[object] = (None,)) -> str:
    """``text`` as one cell of a Markdown table row (or a span of Markdown text): :data:`MISSING` for a value in
    ``missing`` (None by default; the surface's tables count ``""`` missing too), ``str(text)`` otherwise, a ``|``
    escaped and a line break made a space, so the row keeps its columns."""
    return str(MISSING if text in missing else text).replace("|", "\\|").replace("\n", " ")
