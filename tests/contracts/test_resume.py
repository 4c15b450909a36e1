"""Resume across an upgrade (``resume:*`` contracts): checkpoints of a small
Flax NNX model trained with each contracted optimizer set-up, written by the
baseline, restored and continued here (``optax_gate.kit.training.resume``).

Guides: the shared "transfer into a real model" section (params, statistics
and optimizer state saved and checked apart; a control forward pass after a
restore, 001_3de679c23eb4e8d7.txt lines 30 and 43) and guide 004 line 47 (do
not lose the averaged copy on resume). Source read: orbax-checkpoint 0.12.8
``StandardCheckpointer`` (``save``, ``restore`` into a target of
``jax.ShapeDtypeStruct``, which casts to the target's dtype silently, hence the
leaf-by-leaf comparison with ``metadata`` first) and flax 0.12.12
``nnx.to_pure_dict`` / ``replace_by_pure_dict`` / ``update``.

Where the checkpoints come from: ``OPTAX_GATE_CHECKPOINTS`` (the gate writes
them in the baseline environment and points both runs at them); without it,
this run writes its own first, so the baseline restores what it wrote.
"""

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from optax_gate.kit import guides, tolerances
from optax_gate.kit.tolerances import assert_close
from optax_gate.kit.training import resume


def per_setup() -> Any:
    return [
        pytest.param(s, id=s, marks=pytest.mark.contract(api=f"resume:{s}", guide=guides.NNX_TRANSFER))
        for s in resume.SETUPS
    ]


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> Any:
    given = os.environ.get("OPTAX_GATE_CHECKPOINTS")
    if given:
        path = Path(given)
        assert (path / "meta.json").exists(), f"OPTAX_GATE_CHECKPOINTS={given} holds no checkpoints (meta.json missing)"
        return path
    path = tmp_path_factory.mktemp("checkpoints")
    resume.write(path)
    return path


@pytest.mark.acceptance
@pytest.mark.parametrize("setup", per_setup())
def test_checkpoint_maps_leaf_by_leaf_onto_the_current_state(checkpoints: Any, setup: Any) -> None:
    """Every saved leaf (params, batch statistics, optimizer state with its step
    counter, averaged copy) has a leaf of the same path, shape and dtype in this
    environment's fresh state, and nothing is new."""
    differences = resume.leaf_differences(checkpoints, setup, resume.fresh(setup))
    assert differences == [], "leaves that moved: " + "; ".join(differences)


@pytest.mark.acceptance
@pytest.mark.parametrize("setup", per_setup())
def test_control_forward_pass_in_eval_mode_after_restore(checkpoints: Any, setup: Any) -> None:
    """After the restore, the eval-mode forward pass on the control batch is
    finite, (8, 2), and equals the writer's within the float32 budget of a
    two-layer forward pass."""
    run = resume.restore(checkpoints, setup)
    y = resume.forward(run)
    want = resume.control(checkpoints, setup, "forward")["y"]
    assert y.shape == (8, 2) and np.all(np.isfinite(y))
    assert_close(y, want, dtype="float32", ulps=tolerances.reduction(8), what="control forward pass")


@pytest.mark.acceptance
@pytest.mark.parametrize("setup", per_setup())
def test_training_continues_like_the_writer(checkpoints: Any, setup: Any) -> None:
    """Three more steps from the restored state follow the writer's own
    continuation step by step (float32, accumulated budget); the optimizer's
    step counter ends at 6; the Polyak copy ends where the writer's did.

    The error is measured against the model's largest parameter at that step:
    backpropagation mixes every layer's values into each gradient, and some
    leaves are rounding noise around zero (linear1's bias feeds a BatchNorm,
    which makes its gradient vanish), whose own magnitude is no scale."""
    run = resume.restore(checkpoints, setup)
    after = resume.train(run, range(resume.STEPS_BEFORE, resume.STEPS_BEFORE + resume.STEPS_AFTER))
    for k, params in enumerate(after, start=1):
        want = resume.control(checkpoints, setup, f"step{resume.STEPS_BEFORE + k}")
        got = resume.flat(params)
        assert sorted(got) == sorted(want)
        scale = max(float(np.max(np.abs(v))) for v in want.values())
        for path in want:
            assert_close(
                got[path],
                want[path],
                dtype="float32",
                ulps=tolerances.accumulated(k, tolerances.reduction(8)),
                scale=scale,
                what=f"{path} at continued step {k}",
            )
    assert int(run.opt.step[...]) == resume.STEPS_BEFORE + resume.STEPS_AFTER
    if setup == "polyak":
        want = resume.control(checkpoints, setup, "averaged")
        scale = max(float(np.max(np.abs(v))) for v in want.values())
        for path, value in resume.flat(run.averaged).items():
            assert_close(
                value,
                want[path],
                dtype="float32",
                ulps=tolerances.accumulated(3, tolerances.reduction(8)),
                scale=scale,
                what=f"averaged {path}",
            )


@pytest.mark.acceptance
@pytest.mark.parametrize("setup", per_setup())
def test_checkpoint_records_the_writers_versions(checkpoints: Any, setup: Any) -> None:
    """The guides' acceptance criterion 1: the checkpoint's metadata names the
    versions it was written with, and the items are stored apart."""
    meta = json.loads((checkpoints / "meta.json").read_text())
    assert {"python", "optax", "jax", "jaxlib", "flax"} <= set(meta["versions"])
    stored = {p.name for p in (checkpoints / setup).iterdir()}
    assert {"params", "batch_stats", "opt_state", "control.npz"} <= stored
    assert ("averaged" in stored) == (setup == "polyak")
