"""Tests of the team's code read statically: --usage, call sites, attribution, scope."""
