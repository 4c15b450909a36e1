"""The suite's own tests start pytest subprocesses of their own (plugins,
outcomes, the gate end to end): those load the installed plugins as pytest
does by default. The switch the nox session sets for the contract runs
(``optax_gate.gate.pytest_plugins.ENV``) is dropped for them here; a test that
wants it sets it itself."""

import os

from optax_gate.gate.pytest_plugins import ENV as _AUTOLOAD_SWITCH

for _name in _AUTOLOAD_SWITCH:
    os.environ.pop(_name, None)
