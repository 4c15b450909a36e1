"""The suite's own tests start pytest subprocesses of their own (plugins,
outcomes, the gate end to end): those load the installed plugins as pytest
does by default. The switch the nox session sets for the contract runs
(``optax_gate.gate.run.pytest_plugins.ENV``) is dropped for them while the tests
run: in a fixture, not at import, because a controlling pytest-xdist process
imports this file before it starts its workers, which must keep the switch."""

import os

import pytest

from optax_gate.gate.run.pytest_plugins import ENV as _AUTOLOAD_SWITCH


@pytest.fixture(autouse=True, scope="session")
def _subprocesses_autoload_plugins():
    saved = {name: os.environ.pop(name) for name in _AUTOLOAD_SWITCH if name in os.environ}
    yield
    os.environ.update(saved)
