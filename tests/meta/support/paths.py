"""The project's root and baseline lock, as the meta tests find them."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


LOCK = ROOT / "requirements-lock.txt"
