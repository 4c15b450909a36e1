from optax_gate.gate.cli import entry

entry()
