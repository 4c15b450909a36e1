"""The report's JSON schema and two baseline locks, for the sections beyond the contracts."""

from __future__ import annotations

from pathlib import Path

SCHEMA = Path(__file__).resolve().parents[3] / "src" / "optax_gate" / "gate" / "report" / "report.schema.json"


OLD_LOCK = """\
absl-py==2.5.1 \\
    --hash=sha256:00
    # via
    #   chex
    #   optax
chex==0.1.92 \\
    --hash=sha256:00
    # via optax
jax==0.11.2 \\
    --hash=sha256:00
    # via -r requirements.in
numpy==2.3.1 \\
    --hash=sha256:00
    # via jax
"""


NEW_LOCK = """\
absl-py==2.5.1 \\
    --hash=sha256:00
    # via optax
jax==0.12.0.1 \\
    --hash=sha256:00
    # via -r requirements.in
numpy==2.3.0 \\
    --hash=sha256:00
    # via jax
ml-dtypes==0.5.0 \\
    --hash=sha256:00
    # via jax
"""
