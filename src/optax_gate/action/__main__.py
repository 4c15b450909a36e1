"""``python -m optax_gate.action keys|gate|comment`` (see ``optax_gate.action``)."""

import sys

from optax_gate.action import comment, run

COMMANDS = {"keys": run.keys, "gate": run.gate, "comment": comment.main}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in COMMANDS:
        print(
            f"usage: python -m optax_gate.action {{{'|'.join(COMMANDS)}}} (inputs from INPUT_* variables)",
            file=sys.stderr,
        )
        sys.exit(2)
    sys.exit(COMMANDS[sys.argv[1]]())
