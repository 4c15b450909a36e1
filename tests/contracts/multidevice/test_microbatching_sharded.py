"""Contracts of ``optax.microbatching.microbatch`` over a batch sharded on its batch axis, eight simulated CPU
devices (issue 56: microbatching in every calling form). Public after the pinned 0.2.6: at an optax without it
each contract skips with that reason; a team whose baseline has it (0.2.8) pins its behaviour.

Source read: optax 0.2.8 ``optax/microbatching/_microbatching.py`` (``reshape_batch_axis`` splits the batch axis
column-major; ``microbatch`` runs ``fun`` per microbatch in a ``lax.fori_loop`` and accumulates per
``AccumulationType``). Expected values: float64 NumPy references of the same definitions (the batch's total; the
rows in the batch's order), within ``tolerances.reduction`` ULPs of the terms summed.
"""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.sharding import PartitionSpec as P

from optax_gate.gate.judge.findings import ABSENT_API
from optax_gate.kit import tolerances
from optax_gate.kit.training import multidevice

GUIDE = "docs: optax 0.2.8 optax.microbatching docstrings (optax/microbatching/_microbatching.py)"
#: 16 rows of 3 features, two per device; microbatches of 4 (4 microbatches).
ROWS, FEATURES, MICRO = 16, 3, 4


def _accumulation() -> Any:
    module: Any = getattr(optax, "microbatching", None)
    if module is None:
        pytest.skip(f"optax.microbatching {ABSENT_API} (public after 0.2.6): the report reads it as new")
    return module.AccumulationType


@pytest.mark.golden
@pytest.mark.contract(api="optax.microbatching.microbatch", guide=GUIDE)
@pytest.mark.parametrize("kind", ["SUM", "CONCAT"])
@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_microbatch_over_a_batch_sharded_on_its_batch_axis(kind: Any, mode: Any) -> None:
    """The batch sharded over 8 devices on its batch axis (``P("data")``): SUM of the microbatch totals is the
    batch's total, CONCAT of ``2 x`` per microbatch is ``2 x`` in the batch's row order, eagerly and under
    ``jax.jit``."""
    acc = _accumulation()
    multidevice.require_devices()
    x = np.random.default_rng(0).uniform(-1.0, 1.0, (ROWS, FEATURES)).astype(np.float32)
    sharded = multidevice.shard(jnp.asarray(x), multidevice.data_mesh(), P("data"))
    fun = optax.microbatch((lambda b: 2.0 * b) if kind == "CONCAT" else jnp.sum, 0, MICRO, getattr(acc, kind))
    out = (jax.jit(fun) if mode == "jit" else fun)(sharded)
    x64 = x.astype(np.float64)
    if kind == "SUM":
        tolerances.assert_close(
            out,
            x64.sum(),
            dtype="float32",
            ulps=tolerances.reduction(x.size),
            scale=float(np.abs(x64).sum()),
            what=kind,
        )
    else:
        tolerances.assert_close(out, 2.0 * x64, dtype="float32", ulps=tolerances.EXACT, what=kind)
