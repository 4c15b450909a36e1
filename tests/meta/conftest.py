"""The suite's own tests start pytest subprocesses of their own (plugins,
outcomes, the gate end to end): those load the installed plugins as pytest
does by default. The switch the nox session sets for the contract runs
(``optax_gate.gate.run.pytest_plugins.ENV``) is dropped for them while the tests
run: in a fixture, not at import, because a controlling pytest-xdist process
imports this file before it starts its workers, which must keep the switch."""

import os
from typing import Any

import pytest

from optax_gate.gate.run.pytest_plugins import ENV as _AUTOLOAD_SWITCH

pytest.register_assert_rewrite("tests.meta.support")  # their asserts explain themselves as a test's do


@pytest.fixture(autouse=True, scope="session")
def _subprocesses_autoload_plugins() -> Any:
    saved = {name: os.environ.pop(name) for name in _AUTOLOAD_SWITCH if name in os.environ}
    yield
    os.environ.update(saved)


@pytest.fixture(autouse=True, scope="session")
def _subprocesses_take_ctrl_c() -> Any:
    """Several tests send SIGINT to a gate they start, as a terminal's Ctrl-C would. A process started
    in the background by a shell without job control (``.ci/run &`` from a script) has SIGINT ignored,
    and its children inherit that: the gate then rightly ignores SIGINT (``cli.main``: a background
    job) and those tests failed. Their gates are started as from a terminal: a Python handler here is
    reset to the default in each child at exec, where an ignored signal would stay ignored."""
    import signal

    saved = signal.getsignal(signal.SIGINT)
    if saved is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    if saved is signal.SIG_IGN:
        signal.signal(signal.SIGINT, saved)
