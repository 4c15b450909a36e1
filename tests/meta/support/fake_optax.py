"""A source tree that builds as an optax wheel, and whether uv is here to build it."""

from __future__ import annotations

import pytest

from tests.meta.support.gate_cli import uv_env
from tests.meta.support.source_repos import PYPROJECT as TINY_PYPROJECT

needs_uv = pytest.mark.skipif(uv_env() is None, reason="needs uv: run ./noxw once (it installs uv into .noxw/)")


# --- the gate end to end: a tiny "optax" in a synthetic repository, fake environments ---------------
# the tiny package of test_source_build, named optax at an unreleased version
PYPROJECT = TINY_PYPROJECT.replace('name = "tinypkg"', 'name = "optax"').replace(
    'version = "0.1.0"', 'version = "0.2.9.dev0"'
)
