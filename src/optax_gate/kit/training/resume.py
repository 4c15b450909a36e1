"""Resume across an upgrade: checkpoints written in one environment, restored
and continued in another (needs JAX, Flax, Orbax).

Each *set-up* trains a small Flax NNX model (``models.MLP``) with one of the
contracted optimizer set-ups, deterministically (seeded data, one named
``dropout`` key per step, train mode). ``write`` trains ``STEPS_BEFORE``
steps, saves a checkpoint with orbax-checkpoint, the ecosystem's library, as
separate items (``params``, ``batch_stats``, ``opt_state`` and, for Polyak,
``averaged``) with the writer's versions in ``meta.json``, then continues
``STEPS_AFTER`` steps and saves those params as the control trajectory.
``restore`` builds the *current* environment's fresh state, compares it leaf by
leaf with the checkpoint's metadata, restores into it, and continues the same
steps. ``python -m optax_gate.kit.training.resume write DIR`` is what the gate runs in the
baseline environment.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import orbax.checkpoint as ocp
from flax import nnx

from optax_gate.gate.base import atomic
from optax_gate.kit.environment.probe import installed_versions
from optax_gate.kit.training.models import MLP

STEPS_BEFORE = 3
STEPS_AFTER = 3
POLYAK_STEP = 0.1
SETUPS = ("sgd-momentum", "masked-decay", "multisteps", "polyak")


def optimizer(setup: str) -> optax.GradientTransformation:
    """The optimizer of a set-up (``SETUPS``)."""
    if setup in ("sgd-momentum", "polyak"):
        return optax.sgd(0.1, momentum=0.9)
    if setup == "masked-decay":
        mask = lambda p: jax.tree.map(lambda x: x.ndim > 1, p)  # noqa: E731  kernels only
        return optax.chain(optax.add_decayed_weights(1e-2, mask=mask), optax.sgd(0.1))
    if setup == "multisteps":
        return optax.MultiSteps(optax.sgd(0.1, momentum=0.9), every_k_schedule=2).gradient_transformation()
    raise KeyError(setup)


def batch(step: int) -> tuple[jax.Array, jax.Array]:
    """The (8, 3) inputs and (8, 2) targets of a step (seeded by the step)."""
    rng = np.random.default_rng(1000 + step)
    return jnp.asarray(rng.normal(size=(8, 3)), jnp.float32), jnp.asarray(rng.normal(size=(8, 2)), jnp.float32)


@dataclass
class Run:
    """A model, its optimizer and (Polyak) the averaged copy of its params."""

    model: MLP
    opt: nnx.Optimizer
    averaged: Any = None


def fresh(setup: str) -> Run:
    """A freshly initialised run of ``setup`` (params stream seed 0)."""
    model = MLP(nnx.Rngs(params=0, dropout=0))
    run = Run(model, nnx.Optimizer(model, optimizer(setup), wrt=nnx.Param))
    if setup == "polyak":
        run.averaged = pure(nnx.state(model, nnx.Param))
    return run


def pure(state: Any) -> Any:
    """An NNX state as a plain nested dict of arrays (copies, not live views)."""
    return jax.tree.map(jnp.array, nnx.to_pure_dict(state))


def train(run: Run, steps: range) -> list[dict[str, Any]]:
    """Train ``run`` for the given step numbers; return the params after each."""

    def loss_fn(m: Any, x: Any, y: Any, rngs: Any) -> Any:
        return jnp.mean((m(x, rngs=rngs) - y) ** 2)

    out = []
    run.model.train()
    for step in steps:
        x, y = batch(step)
        grads = nnx.grad(loss_fn)(run.model, x, y, nnx.Rngs(dropout=step))
        run.opt.update(run.model, grads)
        params = pure(nnx.state(run.model, nnx.Param))
        if run.averaged is not None:  # guide 004: after the accepted step, kept apart
            run.averaged = optax.incremental_update(params, run.averaged, POLYAK_STEP)
        out.append(params)
    return out


def forward(run: Run) -> np.ndarray:
    """The control forward pass: eval mode, a fixed (8, 3) batch -> (8, 2)."""
    run.model.eval()
    y = np.asarray(run.model(batch(999)[0]))
    run.model.train()
    return y


def items(run: Run) -> dict[str, Any]:
    """The checkpoint items of a run, each saved apart."""
    found = {
        "params": pure(nnx.state(run.model, nnx.Param)),
        "batch_stats": pure(nnx.state(run.model, nnx.BatchStat)),
        "opt_state": pure(nnx.state(run.opt)),  # the optax state and the optimizer's step counter
    }
    if run.averaged is not None:
        found["averaged"] = run.averaged
    return found


def write(directory: Path) -> None:
    """Write every set-up's checkpoint and control trajectory under ``directory``."""
    checkpointer = ocp.StandardCheckpointer()
    for setup in SETUPS:
        run = fresh(setup)
        train(run, range(STEPS_BEFORE))
        for name, tree in items(run).items():
            checkpointer.save((directory / setup / name).absolute(), tree, force=True)
        checkpointer.wait_until_finished()
        control = {f"forward/{path}": v for path, v in flat({"y": forward(run)}).items()}
        after = train(run, range(STEPS_BEFORE, STEPS_BEFORE + STEPS_AFTER))
        control.update(
            {
                f"step{STEPS_BEFORE + k + 1}/{path}": np.asarray(v)
                for k, params in enumerate(after)
                for path, v in flat(params).items()
            }
        )
        if run.averaged is not None:
            control.update({f"averaged/{path}": np.asarray(v) for path, v in flat(run.averaged).items()})
        np.savez(directory / setup / "control.npz", **control)
    atomic.write_text(
        directory / "meta.json",
        json.dumps(
            {
                "versions": installed_versions(),
                "setups": list(SETUPS),
                "steps_before": STEPS_BEFORE,
                "steps_after": STEPS_AFTER,
            },
            indent=2,
        ),
    )


def flat(tree: Any) -> dict[str, Any]:
    """``{normalised path: leaf}``; attribute and key access print alike, so a
    NamedTuple field and the dict a checkpoint stores it as have one path."""
    out = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
        parts = []
        for p in path:
            name = getattr(p, "key", getattr(p, "name", getattr(p, "idx", None)))
            parts.append(str(name))
        out["/".join(parts)] = leaf
    return out


def leaf_differences(directory: Path, setup: str, run: Run) -> list[str]:
    """Every leaf whose path, shape or dtype differs between the checkpoint and
    the current environment's fresh state, as ``"item/path: saved -> now"``."""
    checkpointer = ocp.StandardCheckpointer()
    found = []
    for name, tree in items(run).items():
        meta = checkpointer.metadata((directory / setup / name).absolute())
        meta = getattr(getattr(meta, "item_metadata", meta), "tree", meta)
        saved = {k: (tuple(v.shape), str(v.dtype)) for k, v in flat(meta).items()}
        now = {k: (tuple(v.shape), str(v.dtype)) for k, v in flat(tree).items()}
        for key in sorted(set(saved) | set(now)):
            if saved.get(key) != now.get(key):
                found.append(f"{name}/{key}: {_describe(saved.get(key))} -> {_describe(now.get(key))}")
    return found


def _describe(leaf: tuple[Any, ...] | None) -> str:
    return "absent" if leaf is None else f"{leaf[1]}{list(leaf[0])}"


def restore(directory: Path, setup: str) -> Run:
    """A fresh run of ``setup`` with the checkpoint's items restored into it
    (orbax restores into the fresh state's shapes and dtypes).

    Raises:
      whatever orbax raises when an item cannot be restored into the current
      state's structure.
    """
    run = fresh(setup)
    checkpointer = ocp.StandardCheckpointer()
    restored = {
        name: checkpointer.restore(
            (directory / setup / name).absolute(), jax.tree.map(ocp.utils.to_shape_dtype_struct, tree)
        )
        for name, tree in items(run).items()
    }
    for name, node, which in (
        ("params", run.model, nnx.Param),
        ("batch_stats", run.model, nnx.BatchStat),
        ("opt_state", run.opt, ...),
    ):
        state = nnx.state(node, which)
        nnx.replace_by_pure_dict(state, restored[name])
        nnx.update(node, state)
    run.averaged = restored.get("averaged")
    return run


def control(directory: Path, setup: str, part: str) -> dict[str, np.ndarray]:
    """What the writer recorded after saving: ``part`` is ``forward`` (the
    control forward pass), ``step4``... (params after each continued step) or
    ``averaged`` (the Polyak copy at the end); by normalised path."""
    data = np.load(directory / setup / "control.npz")
    prefix = f"{part}/"
    return {key[len(prefix) :]: data[key] for key in data.files if key.startswith(prefix)}


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "write":
        sys.exit("usage: python -m optax_gate.kit.training.resume write DIRECTORY")
    write(Path(sys.argv[2]))
