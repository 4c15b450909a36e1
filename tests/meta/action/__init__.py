"""Tests of the GitHub Action and its pull-request comment."""
