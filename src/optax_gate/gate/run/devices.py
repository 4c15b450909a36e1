"""Where the multi-device contracts run: their folder, and the environment of
the second pytest process that runs them (tool half: no JAX import).

JAX reads ``--xla_force_host_platform_device_count`` once, when it creates its
CPU backend, so the eight simulated devices of ``tests/contracts/multidevice/``
must be configured before that process starts and must not reach the
single-device contracts' process. Every place that runs the contracts (the
gate's runner, ``./noxw -s tests``, the mutants check) therefore runs that
folder in a process of its own with :func:`env`; the folder's conftest refuses
to run with any other device count, and ``tests/contracts/conftest.py`` keeps it
out of the single-device process unless it is named on the command line.
"""

from __future__ import annotations

from collections.abc import Mapping

#: The contracts that need eight devices, relative to the project root.
MULTIDEVICE_DIR = "tests/contracts/multidevice"
#: Simulated CPU devices of their process.
DEVICE_COUNT = 8
FLAG = f"--xla_force_host_platform_device_count={DEVICE_COUNT}"


def is_multidevice(path: str) -> bool:
    """True when ``path`` (relative to the project root, ``/``-separated) is the
    multi-device folder or inside it."""
    path = path.replace("\\", "/").rstrip("/")
    return path == MULTIDEVICE_DIR or path.startswith(MULTIDEVICE_DIR + "/")


def env(base: Mapping[str, str]) -> dict[str, str]:
    """``base`` with :data:`FLAG` in ``XLA_FLAGS``: other XLA flags are kept, an
    existing device-count flag is replaced."""
    flags = [f for f in base.get("XLA_FLAGS", "").split() if not f.startswith("--xla_force_host_platform_device_count")]
    return {**base, "XLA_FLAGS": " ".join([*flags, FLAG])}
