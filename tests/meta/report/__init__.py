"""Tests of judging and the report: compare, verdict, findings and their words, sections beyond the contracts, the
report files and model."""
