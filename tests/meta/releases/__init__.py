"""Tests of across releases and commits: the matrix, bisection, upstream tests cross-run, speed drift."""
