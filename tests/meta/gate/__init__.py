"""Tests of the gate's run: command line and flow, inputs, environments, pytest runs, caches, selection, the API
surface diff."""
