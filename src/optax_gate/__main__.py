import sys

from optax_gate.cli import main

sys.exit(main())
