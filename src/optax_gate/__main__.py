import sys

from optax_gate.gate.cli import main

sys.exit(main())
