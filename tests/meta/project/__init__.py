"""Tests of the repository as a whole: its layout and stages, docs, lock, launcher and contract catalogue."""
