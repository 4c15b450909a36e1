"""``python -m optax_gate``: the gate's command line (``optax_gate.gate.cli``)."""

import os
import sys

try:
    from optax_gate.gate.cli import entry
except KeyboardInterrupt:  # a Ctrl-C while the command line is still being imported: nothing was run or written
    print(
        "optax-gate: interrupted (SIGINT, Ctrl-C) while starting: not verified; nothing was run or written",
        file=sys.stderr,
    )
    if os.environ.get("OPTAX_GATE_EXIT_FILE"):  # cli.EXIT_FILE, for the nox session
        try:
            with open(os.environ["OPTAX_GATE_EXIT_FILE"], "w") as said:
                said.write("2 interrupted\n")
        except OSError:
            pass
    sys.exit(2)

entry()
