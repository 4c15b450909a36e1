"""Helpers of the multi-device contracts (``tests/contracts/multidevice/``):
meshes over the simulated CPU devices, the sharding of every leaf of a PyTree
in words, and the collectives of a compiled program (need JAX).

The contracts run in their own pytest process started with
``XLA_FLAGS=--xla_force_host_platform_device_count=8`` (see
``optax_gate.gate.run.devices``): the flag must be set before JAX creates its CPU
backend, and it must not reach the single-device contracts' process, whose
programs would otherwise be compiled for a host split into eight devices.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

#: Devices the contracts need (the meshes below are built from exactly these).
DEVICES = 8
#: The collectives of an XLA HLO module; asynchronous pairs (``all-reduce-start``
#: / ``-done``) count once, by their ``-start``.
COLLECTIVES = ("all-reduce", "all-gather", "all-to-all", "reduce-scatter", "collective-permute")
_COLLECTIVE = re.compile(r"(?<![\w%.-])(" + "|".join(COLLECTIVES) + r")(?:-start)?\(")


def mesh_2x4(devices: list[Any] | None = None) -> Mesh:
    """The 2 x 4 mesh ``("data", "model")`` of the issue, over the first eight
    devices (or ``devices``), in device-id order. ``jax.sharding.Mesh`` with the
    default (Auto) axis types, as most training code builds it."""
    devs = np.array(devices if devices is not None else jax.devices()[:DEVICES])
    return Mesh(devs.reshape(2, 4), ("data", "model"))


def data_mesh(n: int = DEVICES, devices: list[Any] | None = None) -> Mesh:
    """A 1-D mesh ``("data",)`` over the first ``n`` devices (data parallelism)."""
    devs = np.array(devices if devices is not None else jax.devices()[:n])
    return Mesh(devs, ("data",))


def shard(tree: Any, mesh: Mesh, specs: Any) -> Any:
    """``jax.device_put`` every leaf of ``tree`` with ``NamedSharding(mesh, spec)``;
    ``specs`` is a PyTree prefix of ``tree`` whose leaves are ``PartitionSpec``s."""
    shardings = jax.tree.map(lambda s: NamedSharding(mesh, s), specs, is_leaf=lambda s: isinstance(s, PartitionSpec))
    return jax.device_put(tree, shardings)


def describe(sharding: Any) -> str:
    """One sharding in words, stable across runs: ``"P('data', 'model')"`` for a
    ``NamedSharding`` (its mesh axes sizes follow: ``" on data=2,model=4"``),
    ``"single-device"`` for a ``SingleDeviceSharding``, else the class name."""
    if isinstance(sharding, NamedSharding):
        axes = ",".join(f"{k}={v}" for k, v in sharding.mesh.shape.items())
        return f"{sharding.spec} on {axes}"
    if isinstance(sharding, jax.sharding.SingleDeviceSharding):
        return "single-device"
    return type(sharding).__name__


def shardings(tree: Any) -> dict[str, str]:
    """``{key path: describe(leaf.sharding)}`` for every array leaf of ``tree``
    (a ``snapshot`` contract records this)."""
    return {
        jax.tree_util.keystr(path) or "the array": describe(leaf.sharding)
        for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]
    }


def collectives(hlo_text: str) -> dict[str, int]:
    """How many of each collective (``COLLECTIVES``) a compiled program's HLO
    text (``jax.jit(f).lower(...).compile().as_text()``) contains; every kind
    is present, with 0 when absent."""
    found = Counter(_COLLECTIVE.findall(hlo_text))
    return {kind: found.get(kind, 0) for kind in COLLECTIVES}


def require_devices() -> None:
    """Raise unless JAX sees exactly :data:`DEVICES` devices.

    Raises:
      RuntimeError: naming the device count found and how to start the
        process (the message a refusing conftest shows).
    """
    n = jax.device_count()
    if n != DEVICES:
        raise RuntimeError(
            f"the multi-device contracts need exactly {DEVICES} devices, JAX sees {n} "
            f"({jax.default_backend()}); run them in their own process with "
            f"XLA_FLAGS=--xla_force_host_platform_device_count={DEVICES} set before Python starts "
            "(./noxw -s tests and the gate do this)"
        )
