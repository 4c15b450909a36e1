"""The names the recorder of what each contract module executes (``reach``, a pytest plugin) shares with the gate, which
reads its files without pytest."""

from __future__ import annotations

#: The packages whose functions are recorded (the ones a selection can map a change to).
PACKAGES = ("optax", "flax")
#: The record's format.
FORMAT = "reach-v1"
#: The environment variable naming the output file.
VARIABLE = "OPTAX_GATE_REACH"
#: The environment variable that asks for a record per API of each module too (set for a baseline's run: only a
#: baseline's record selects, and recording per API takes about a quarter more time).
PER_API_VARIABLE = "OPTAX_GATE_REACH_PER_API"
#: The environment variable naming the file of the APIs that run in the modules a selection runs in part
#: (``select_apis``).
SELECT_VARIABLE = "OPTAX_GATE_SELECT_APIS"
#: Where what runs outside any contract module goes.
SESSION = "session"


def unit_of(qualname: str) -> str:
    """The function or method a code object belongs to: its qualified name up to the first ``<locals>``."""
    return qualname.split(".<locals>", 1)[0]
