"""Mutants of resuming across device counts: deliberately broken variants that
the contracts of ``tests/contracts/multidevice/test_resume_across_devices.py``
must catch. They patch orbax-checkpoint's ``StandardCheckpointer.restore``."""

from __future__ import annotations

from typing import Any

from optax_gate.mutants.registry import family

mutant = family("resume-devices", "tests/contracts/multidevice/test_resume_across_devices.py")


def _post_restore(post: Any) -> Any:
    import orbax.checkpoint as ocp

    orig = ocp.StandardCheckpointer.restore

    def restore(self: Any, directory: Any, target: Any = None, **kw: Any) -> Any:
        return post(orig(self, directory, target, **kw))

    ocp.StandardCheckpointer.restore = restore
    return {}


@mutant("resume-devices-ignores-layout", "restore ignores the target shardings and puts everything on device 0")
def _(optax: Any) -> Any:
    import jax

    return _post_restore(lambda tree: jax.device_put(tree, jax.devices()[0]))


@mutant("resume-devices-drop-shard", "restore loses the first device's shard: row 0 of every array comes back as zeros")
def _(optax: Any) -> Any:
    import jax

    return _post_restore(lambda tree: jax.tree.map(lambda x: x.at[0].set(0) if x.ndim else x, tree))
