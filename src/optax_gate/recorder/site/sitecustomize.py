"""Start-up hook of the team-run recorder (``gate --run``): Python imports this
module at start-up when its folder is on ``PYTHONPATH``. With
``OPTAX_GATE_TRACE`` set it installs the recorder's import hook; without it,
it does nothing. A ``sitecustomize`` of the environment that this one shadows
is still run afterwards."""

import importlib.util
import os
import sys


def _chain() -> None:
    """Run the next ``sitecustomize`` on ``sys.path`` after this one's folder (the environment's own), if any."""
    here = os.path.dirname(os.path.abspath(__file__))
    entries = [os.path.abspath(e) if e else "" for e in sys.path]
    after = entries.index(here) + 1 if here in entries else len(entries)
    for entry in entries[after:]:
        if not entry:
            continue
        path = os.path.join(entry, "sitecustomize.py")
        if os.path.isfile(path):
            spec = importlib.util.spec_from_file_location("_optax_gate_next_sitecustomize", path)
            if spec and spec.loader:
                spec.loader.exec_module(importlib.util.module_from_spec(spec))
            return


if os.environ.get("OPTAX_GATE_TRACE"):
    from optax_gate.recorder import hook

    hook.install()
_chain()
