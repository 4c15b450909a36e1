"""Root conftest: hypothesis profiles of the suite.

``OPTAX_GATE_HYPOTHESIS_PROFILE`` selects one (default ``ci``):

- ``ci``: derandomized (the same examples every run, so a baseline and a
  candidate see identical inputs), 25 examples per property, no deadline
  (the first call of a shape includes XLA compilation).
- ``dev``: random, 200 examples per property, for hunting counter-examples.
- ``mutants``: the ``ci`` examples without shrinking, for ``optax_gate.mutants``
  (a broken API only has to be caught, not minimised).
"""

import os
from typing import Any

from hypothesis import HealthCheck, Phase, settings

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=25,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=200, deadline=None, print_blob=True)
settings.register_profile(
    "mutants", settings.get_profile("ci"), phases=[Phase.explicit, Phase.reuse, Phase.generate], database=None
)
PROFILE = os.environ.get("OPTAX_GATE_HYPOTHESIS_PROFILE", "ci")
settings.load_profile(PROFILE)


def pytest_report_header(config: Any) -> Any:
    """The hypothesis profile the contracts draw their examples with, in pytest's header."""
    return [f"hypothesis profile: {PROFILE}"]
