"""The reports of real gate runs kept under tests/meta/data, read once."""

from __future__ import annotations

import json
from pathlib import Path

REAL = json.loads((Path(__file__).parents[1] / "data" / "report-optax-0.2.8.json").read_text())


REAL_723 = json.loads((Path(__file__).parents[1] / "data" / "report-optax-0.2.8-2026-12-01.json").read_text())
