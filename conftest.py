"""Root conftest: hypothesis profiles of the suite.

``OPTAX_GATE_HYPOTHESIS_PROFILE`` selects one (default ``ci``):

- ``ci``: derandomized (the same examples every run, so a baseline and a
  candidate see identical inputs), 25 examples per property, no deadline
  (the first call of a shape includes XLA compilation).
- ``dev``: random, 200 examples per property, for hunting counter-examples.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", derandomize=True, max_examples=25, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=200, deadline=None, print_blob=True)
PROFILE = os.environ.get("OPTAX_GATE_HYPOTHESIS_PROFILE", "ci")
settings.load_profile(PROFILE)


def pytest_report_header(config):
    return [f"hypothesis profile: {PROFILE}"]
