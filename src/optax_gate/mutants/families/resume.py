"""Mutants of resume across an upgrade (the reader side): deliberately broken variants that the contracts
of ``tests/contracts/test_resume.py`` must catch."""

from __future__ import annotations

from typing import Any

from optax_gate.mutants.patches import wrap_tx
from optax_gate.mutants.registry import family

mutant = family("resume", "tests/contracts/test_resume.py")


def _restore_zeroing(item: str) -> dict[str, Any]:
    """orbax restores the named checkpoint item as zeros."""
    import jax
    import jax.numpy as jnp
    import orbax.checkpoint as ocp

    orig = ocp.StandardCheckpointer.restore

    def restore(self: Any, directory: Any, *args: Any, **kwargs: Any) -> Any:
        out = orig(self, directory, *args, **kwargs)
        return jax.tree.map(jnp.zeros_like, out) if str(directory).rstrip("/").endswith(item) else out

    ocp.StandardCheckpointer.restore = restore
    return {}


@mutant("resume-loses-opt-state", "the optimizer state (momentum, step counter) comes back as zeros")
def _(optax: Any) -> Any:
    return _restore_zeroing("opt_state")


@mutant("resume-loses-batch-stats", "the batch statistics come back as zeros")
def _(optax: Any) -> Any:
    return _restore_zeroing("batch_stats")


@mutant("resume-loses-averaged", "the Polyak copy comes back as zeros")
def _(optax: Any) -> Any:
    return _restore_zeroing("averaged")


@mutant("resume-trace-bfloat16", "the new release keeps the momentum trace in bfloat16")
def _(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    orig = optax.sgd

    def sgd(*a: Any, **k: Any) -> Any:
        tx = orig(*a, **k)
        return wrap_tx(
            tx,
            init=lambda p: jax.tree.map(
                lambda x: x.astype(jnp.bfloat16) if jnp.issubdtype(x.dtype, jnp.floating) else x, tx.init(p)
            ),
        )

    return {"sgd": sgd}


@mutant("resume-learning-rate-drift", "the new release's SGD steps 10% further")
def _(optax: Any) -> Any:
    orig = optax.sgd
    return {"sgd": lambda learning_rate, *a, **k: orig(learning_rate * 1.1, *a, **k)}


@mutant("resume-decay-counts-steps", "the new release's weight decay keeps a step counter in its state")
def _(optax: Any) -> Any:
    import jax.numpy as jnp

    orig = optax.add_decayed_weights

    def add_decayed_weights(*a: Any, **k: Any) -> Any:
        tx = orig(*a, **k)
        return wrap_tx(
            tx,
            init=lambda p: (tx.init(p), jnp.zeros([], jnp.int32)),
            update=lambda g, s, params=None: (tx.update(g, s[0], params)[0], (s[0], s[1] + 1)),
        )

    return {"add_decayed_weights": add_decayed_weights}


@mutant("resume-writer-forgets-versions", "the checkpoint metadata does not record the Flax version", writer_side=True)
def _(optax: Any) -> Any:
    from optax_gate.kit.environment import probe

    orig = probe.installed_versions
    probe.installed_versions = lambda: {k: v for k, v in orig().items() if k != "flax"}
    import optax_gate.kit.training.resume as resume

    resume.installed_versions = probe.installed_versions  # type: ignore[attr-defined]  # imported there from probe
    return {}
