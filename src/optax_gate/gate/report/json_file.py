"""JSON rendering of a gate report (key-sorted, indented); every key and its meaning is in ``report.schema.json`` beside
this module (checked by tests/meta; the TypedDicts of ``gate/base/model.py`` are generated from it)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


def render(report: Mapping[str, Any]) -> str:
    """The report as indented, key-sorted JSON text ending in a newline."""
    return json.dumps(report, indent=2, sort_keys=True) + "\n"
