"""The multi-device contracts refuse to run without eight devices.

They run in their own pytest process started with
``XLA_FLAGS=--xla_force_host_platform_device_count=8`` (``./noxw -s tests``,
the gate's runner and the mutants check set it, see
``optax_gate.gate.run.devices``). Anywhere else this conftest stops the session
with a usage error (exit status 4) that says so: never a silent skip, because a
gate that skipped them would report a multi-device regression as "unchanged".
"""

import pytest

from optax_gate.kit.training import multidevice


def pytest_configure(config: pytest.Config) -> None:
    """Stop the session (usage error) unless JAX sees eight devices."""
    try:
        multidevice.require_devices()
    except RuntimeError as exc:
        raise pytest.UsageError(str(exc)) from None
