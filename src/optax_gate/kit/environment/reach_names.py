"""The names the recorder of what each contract module executes (``reach``, a pytest plugin) shares with the gate, which reads its files without pytest."""

from __future__ import annotations

#: The packages whose functions are recorded (the ones a selection can map a change to).
PACKAGES = ("optax", "flax")
#: The record's format.
FORMAT = "reach-v1"
#: The environment variable naming the output file.
VARIABLE = "OPTAX_GATE_REACH"
#: Where what runs outside any contract module goes.
SESSION = "session"


def unit_of(qualname: str) -> str:
    """The function or method a code object belongs to: its qualified name up to the first ``<locals>``."""
    return qualname.split(".<locals>", 1)[0]
