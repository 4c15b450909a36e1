"""Fixtures shared by the contract modules."""

import gc
import os
import re
from pathlib import Path
from typing import Any

import pytest

from optax_gate.kit import dtypes
from optax_gate.kit.surface import generated as surface_generated

#: Every public callable of this environment's optax that no hand-written
#: table knows gets generated entries before the contract modules read the
#: tables (``optax_gate.kit.surface.generated``).
surface_generated.install()


@pytest.fixture(params=dtypes.FLOAT_DTYPES)
def dtype(request: pytest.FixtureRequest) -> Any:
    """Each floating dtype in turn (float64 with x64 mode on for the test)."""
    with dtypes.precision(request.param) as dt:
        yield dt


def pytest_collection_finish(session: Any) -> None:
    """Tune Python's cyclic garbage collector for the run, once the contracts
    are collected: the objects alive now (JAX, Optax, Flax, the collected
    items) are frozen out of every later collection, and a collection starts
    after 20 000 net allocations instead of 700. Speed only: every cycle is
    still collected, later. Tracing and lowering many small JAX programs
    allocates heavily, and the default spent about 1.3 s of CPU per process on
    collections (measured with ``gc.callbacks`` on the 2-core machine); the
    contracts' second run took about 1 s less wall time with this."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 50, 50)


#: The gate's snapshot folder for a baseline that is not the pinned one
#: (``optax_gate.gate.reuse.baseline_snapshots``): the snapshot contracts read (and,
#: with :data:`RECORD`, write) their files there, under the same relative
#: paths as the committed ones, instead of ``tests/contracts/<module>/``.
SNAPSHOT_DIR = "OPTAX_GATE_SNAPSHOT_DIR"
#: Set to 1 on the baseline side of such a gate: re-record every snapshot
#: (pytest-regressions' ``--regen-all``) into :data:`SNAPSHOT_DIR`.
RECORD = "OPTAX_GATE_RECORD_SNAPSHOTS"


def pytest_configure(config: Any) -> None:
    if os.environ.get(SNAPSHOT_DIR) and os.environ.get(RECORD) == "1":
        config.option.regen_all = True


@pytest.fixture
def original_datadir(request: pytest.FixtureRequest) -> Any:
    """Where a snapshot contract's recorded files are: pytest-datadir's
    ``tests/contracts/<module>/`` (the files recorded at the pinned baseline),
    or the same relative path under ``$OPTAX_GATE_SNAPSHOT_DIR`` when the gate
    records the team's own baseline (``optax_gate.gate.reuse.baseline_snapshots``)."""
    own = Path(request.path).with_suffix("")
    root = os.environ.get(SNAPSHOT_DIR)
    folder = Path(root) / own.relative_to(request.config.rootpath) if root else own
    _skip_unrecorded_generated(request, folder)
    return folder


def _skip_unrecorded_generated(request: pytest.FixtureRequest, folder: Any) -> None:
    """Skip a snapshot contract of a generated API (``surface_generated``)
    whose baseline recorded no file: the API is new in this environment (its
    baseline did not have it), so there is nothing to drift from. A
    hand-written API's missing file still fails (pytest-regressions)."""
    marker = request.node.get_closest_marker("contract")
    api = marker.kwargs.get("api", "") if marker else ""
    if not surface_generated.is_generated(api) or any(
        request.config.getoption(o) for o in ("regen_all", "force_regen")
    ):
        return
    basename = re.sub(r"[\W]", "_", request.node.name)  # pytest-regressions' file name (common.py)
    if not any(folder.glob(basename + ".*")):
        pytest.skip(
            f"new: {api} has generated contracts, and no snapshot of this one was recorded at the baseline "
            "(the API is new in this environment, or the baseline skipped this contract)"
        )


MULTIDEVICE = "multidevice"


def pytest_ignore_collect(collection_path: Any, config: Any) -> Any:
    """Keep ``tests/contracts/multidevice/`` out of this (single-device) process
    unless a command-line argument names that folder or a path inside it: those
    contracts need eight simulated CPU devices, which must be configured before
    JAX starts, so they run in a second pytest process of their own
    (``XLA_FLAGS=--xla_force_host_platform_device_count=8``; ``./noxw -s tests``,
    the gate and the mutants check start it)."""
    if collection_path.name != MULTIDEVICE or collection_path.parent != config.rootpath / "tests" / "contracts":
        return None
    for arg in config.args:
        path = (config.invocation_params.dir / arg.split("::")[0]).resolve()
        if path == collection_path or collection_path in path.parents:
            return None
    return True
