"""The second witness of ``gate --run`` (``optax_gate.gate.team_run.witness``):
the run's own output and the files it writes, compared without the recorder.
Arrays are read from ``.npy``/``.npz`` without numpy; numpy (in this test
environment) is the independent reference for what they hold."""

import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from optax_gate.gate import assemble
from optax_gate.gate.report import team_run_section
from optax_gate.gate.team_run import command as run_command
from optax_gate.gate.team_run import divergence, leaves, output_arrays, recording, witness
from tests.meta.support.team_runs import CHAIN, PYTHON


@pytest.mark.parametrize(
    "array",
    [
        np.arange(6, dtype=np.float32).reshape(2, 3),
        np.array(2.5, np.float64),
        np.arange(10_000, dtype=np.int32),
        np.array([True, False]),
        np.zeros((0, 3), np.float16),
    ],
)
def test_an_npy_file_is_read_as_numpy_reads_it(array: Any) -> None:
    buffer = io.BytesIO()
    np.save(buffer, array)
    leaf = output_arrays.read_npy(buffer.getvalue())
    assert leaf is not None
    assert leaf["dtype"] == str(array.dtype) and leaf["shape"] == list(array.shape)
    stride = leaf["stride"]
    assert leaves.decode(leaf) == array.reshape(-1)[::stride][:4096].tolist()


def test_output_lines_are_compared_where_the_two_baseline_runs_agree() -> None:
    """Durations, addresses and clock times are masked; a line that differs
    between the two baseline runs is noise, left out; a number 1 ULP apart is
    within the budget; a loss that moved is the first difference, with its
    values, absolute and relative size."""
    base = "epoch 1 took 1.52 s at 0x7f00aa\nrandom 0.123\nstep 1 loss 1.35400009\nstep 2 loss 1.2\ndone"
    again = "epoch 1 took 1.61 s at 0x7f00bb\nrandom 0.987\nstep 1 loss 1.35400009\nstep 2 loss 1.2\ndone"
    one_ulp = f"{float(np.nextafter(np.float32(1.35400009), np.float32(2))):.9g}"
    same = witness.compare_output(base, again, base.replace("1.35400009", one_ulp), ulps=4)
    assert not same["differs"] and same["noise"] == 1 and same["within_budget"] == 1, same
    moved = witness.compare_output(base, again, base.replace("loss 1.2", "loss 1.244"), ulps=4)
    assert moved["differs"] and moved["first"]["line"] == 4, moved
    assert moved["first"]["change"].startswith("a number: 1.2 → 1.244 (|Δ| 0.044, relative 0.035)")
    gone = witness.compare_output(base, again, base.replace("\ndone", ""), ulps=4)
    assert gone["differs"] and gone["first"]["change"] == "a line the baseline's run writes, not the candidate's"
    assert witness.compare_output(base, again, base + "\nnew warning", ulps=4)["differs"]


def _npz(path: Path, **arrays: Any) -> None:
    np.savez(path, **arrays)


def test_files_are_compared_by_value_json_by_numbers_others_by_bytes(tmp_path: Path) -> None:
    sides = {name: tmp_path / name for name in ("b", "r", "c")}
    for folder in sides.values():
        folder.mkdir()
        (folder / "log.bin").write_bytes(b"same")
    w: Any = np.linspace(-1, 1, 5, dtype=np.float32)
    for name in ("b", "r"):
        _npz(sides[name] / "params.npz", w=w, step=np.int32(3))
        (sides[name] / "metrics.json").write_text(json.dumps({"loss": 1.354, "lr": [0.01, float("nan")]}))
        (sides[name] / "run-id.txt").write_text(name)  # differs between the baseline runs: noise
    (sides["c"] / "run-id.txt").write_text("c")
    _npz(sides["c"] / "params.npz", w=w, step=np.int32(3))
    (sides["c"] / "metrics.json").write_text(json.dumps({"loss": 1.354, "lr": [0.01, float("nan")]}))
    same = witness.compare_files(sides["b"], sides["r"], sides["c"], ulps=4)
    assert not same["differs"] and same["noise"] == 1 and same["files"] == 3, same
    _npz(sides["c"] / "params.npz", w=w * np.float32(1.5), step=np.int32(3))
    moved = witness.compare_files(sides["b"], sides["r"], sides["c"], ulps=4)
    assert moved["differs"] and moved["first"]["file"] == "params.npz" and moved["first"]["key"] == "w", moved
    assert "ULP (budget 4)" in moved["first"]["change"] and "→" in moved["first"]["change"]
    _npz(sides["c"] / "params.npz", w=w, step=np.int32(3))
    (sides["c"] / "metrics.json").write_text(json.dumps({"loss": 1.244, "lr": [0.01, 0.0075]}))
    json_moved = witness.compare_files(sides["b"], sides["r"], sides["c"], ulps=4)
    assert json_moved["first"] == {
        "file": "metrics.json",
        "key": "['loss']",
        "change": "1.354 → 1.244 (|Δ| 0.11, relative 0.081)",
    }, json_moved
    (sides["c"] / "metrics.json").write_text(json.dumps({"loss": 1.354, "lr": [0.01, 0.0075]}))
    nan_gone = witness.compare_files(sides["b"], sides["r"], sides["c"], ulps=4)
    assert nan_gone["first"]["key"] == "['lr'][1]" and nan_gone["first"]["change"] == "nan → 0.0075", nan_gone
    (sides["c"] / "log.bin").write_bytes(b"other")
    (sides["c"] / "metrics.json").write_text(json.dumps({"loss": 1.354, "lr": [0.01, float("nan")]}))
    bytes_only = witness.compare_files(sides["b"], sides["r"], sides["c"], ulps=4)
    assert not bytes_only["differs"] and bytes_only["first"] is None and bytes_only["not_judged"] == ["log.bin"], (
        bytes_only
    )


def test_a_value_within_its_spread_over_the_perturbed_runs_is_rounding_one_beyond_it_is_not(tmp_path: Path) -> None:
    """The ensemble's witness: an output number or an array element is within the run's own rounding noise when
    its deviation is at most ensemble.FACTOR times its deviation over the members; beyond it, or where the
    members agree with the baseline (the ULP budget), it differs."""
    base = "step 0 loss 0.5\nstep 1 loss 1e-06\n"
    members = ["step 0 loss 0.5\nstep 1 loss 1.1e-06\n", "step 0 loss 0.5\nstep 1 loss 0.95e-06\n"]
    within = witness.compare_output(base, base, "step 0 loss 0.5\nstep 1 loss 1.5e-06\n", 4, members)
    assert not within["differs"] and within["within_budget"] == 1 and within["noise_ratio"] == pytest.approx(5.0), (
        within
    )
    beyond = witness.compare_output(base, base, "step 0 loss 0.5\nstep 1 loss 2e-06\n", 4, members)
    assert beyond["differs"] and "10x the spread" in beyond["first"]["change"], beyond
    untouched = witness.compare_output(base, base, "step 0 loss 0.50001\nstep 1 loss 1e-06\n", 4, members)
    assert untouched["differs"] and untouched["first"]["line"] == 1, untouched  # the members leave it: the ULP budget
    assert witness.compare_output(base, base, "step 0 loss 0.5\nstep 1 loss 1.5e-06\n", 4)[
        "differs"
    ]  # no ensemble: the ULP budget
    sides = {name: tmp_path / name for name in ("b", "r", "c", "m")}
    for folder in sides.values():
        folder.mkdir()
    w: Any = np.linspace(-1, 1, 5, dtype=np.float32)
    for name in ("b", "r"):
        _npz(sides[name] / "params.npz", w=w)
    _npz(sides["m"] / "params.npz", w=w + np.float32(1e-4))
    _npz(sides["c"] / "params.npz", w=w + np.float32(5e-4))
    assert (
        witness.compare_files(sides["b"], sides["r"], sides["c"], 4, witness.Others((sides["m"],)))["within_budget"]
        == 1
    )
    _npz(sides["c"] / "params.npz", w=w + np.float32(1e-2))
    far = witness.compare_files(sides["b"], sides["r"], sides["c"], 4, witness.Others((sides["m"],)))
    assert far["differs"] and "the spread of its perturbed baseline runs" in far["first"]["change"], far


TEAM = """import jax.numpy as jnp
import numpy as np
import optax

x = jnp.asarray(np.linspace(-1, 1, 8), jnp.float32)
params = {"w": jnp.ones(8, jnp.float32)}
tx = optax.sgd(0.1)
state = tx.init(params)
for step in range(3):
    grads = {"w": 2 * (params["w"] * x - 1) * x}
    updates, state = tx.update(grads, state, params)
    params = optax.apply_updates(params, updates)
score = jnp.mean(params["w"] * x)  # an evaluation no Optax call sees
print(f"eval {float(score):.9g}")
np.save("w.npy", np.asarray(params["w"]))
"""

EVAL_OFF = """
import jax.numpy as jnp
_mean = jnp.mean
jnp.mean = lambda *a, **k: _mean(*a, **k) * 1.01
"""


def test_a_run_whose_recorded_calls_are_the_same_but_whose_output_differs_diverges(tmp_path: Path) -> None:
    """The recorder sees every Optax call the same (the candidate changes
    only ``jnp.mean``, in an evaluation after training); the run's printed
    evaluation differs: the run never reads "computes the same", it
    diverges, and the reason names the output line and the numbers."""
    team = tmp_path / "team"
    team.mkdir()
    (team / "train.py").write_text(TEAM)
    site = tmp_path / "plant"
    site.mkdir()
    (site / "sitecustomize.py").write_text(EVAL_OFF + CHAIN)
    python = tmp_path / "cand" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/bash\nexport PYTHONPATH="{site}:$PYTHONPATH"\nexec {PYTHON} "$@"\n')
    python.chmod(0o755)
    result: Any = recording.run(run_command.RunSpec("python train.py", team, 300), (PYTHON, python), tmp_path / "out")
    assert result["outcome"] == "diverged" and not result["differing"], result["reason"]
    assert result["witness"]["output"]["first"]["line"] == 1 and result["witnessed"].startswith(
        "output line 1: a number"
    )
    assert result["witness"]["files"]["files"] == 1 and not result["witness"]["files"]["differs"]  # w.npy: the same
    report: Any = {"team_run": result, "findings": [], "verdict": "pass", "reasons": []}
    report = assemble.with_team_run(report, result)
    assert (
        report["verdict"] == "fail"
        and "your run's own outputs differ in the candidate: output line 1" in report["reasons"][0]
    )
    assert "Your run's own outputs differ" in "\n".join(team_run_section.section(report))
    same = recording.run(run_command.RunSpec("python train.py", team, 300), (PYTHON, PYTHON), tmp_path / "same")
    assert same["outcome"] == "same" and not same["witness"]["differs"] and same["witness"]["files"]["files"] == 1
    assert not (tmp_path / "same" / "team-run-baseline-repeat-files").exists()  # read by the witness, then dropped


def test_a_command_that_times_out_is_stopped_whole_before_the_folder_is_put_back(tmp_path: Path) -> None:
    """A command that times out (or is interrupted) runs in its own process
    group and is stopped whole before the folder is put back: for ``--run
    "python train.py && echo done"`` not only bash is killed, so the team's
    Python cannot write its checkpoint into the folder after it is put back,
    and the folder stays as it was."""
    import time as _time

    team = tmp_path / "team"
    team.mkdir()
    (team / "checkpoint.txt").write_text("ORIGINAL")
    (team / "train.py").write_text(
        "import time\ntime.sleep(4)\nopen('checkpoint.txt', 'w').write('written by the run')\n"
    )
    spec = run_command.RunSpec("python train.py && echo done", team, 1.5)
    result = recording.run(spec, (PYTHON, PYTHON), tmp_path / "out")
    assert result["outcome"] == "not-verified" and result["runs"][0]["timed_out"], result
    _time.sleep(5)
    assert (team / "checkpoint.txt").read_text() == "ORIGINAL"


def test_a_warning_on_one_side_does_not_pair_the_lines_after_it_with_the_wrong_ones() -> None:
    """Lines are aligned by their words, numbers masked, so a warning on one
    side does not pair the lines after it with the wrong ones: the baseline's
    NumPy RuntimeWarning (stderr, merged into the output) before
    `step 0 lr=nan` is listed, not counted, and the first difference is the
    learning rate against the candidate's `step 0 lr=0.0099`, NaN →
    0.00999999978."""
    warn = (
        "/env/site-packages/optax/schedules/_schedule.py:143: RuntimeWarning: divide by zero encountered\n  "
        "return a / b"
    )
    base = f"{warn}\nstep 0 lr=nan loss 1.5\nstep 1 lr=0.0085 loss 1.4"
    cand = "step 0 lr=0.00999999978 loss 1.5\nstep 1 lr=0.0085 loss 1.4"
    seen = witness.compare_output(base, base, cand, ulps=4)
    assert seen["first"]["line"] == 3 and seen["first"]["change"].startswith("a number: NaN → 0.00999999978"), seen
    assert seen["warnings"] and "RuntimeWarning" in seen["warnings"][0]
    assert not witness.compare_output(base, base, base.replace(warn + "\n", ""), ulps=4)["differs"]


def test_an_error_measured_on_a_sample_of_a_leaf_says_so() -> None:
    """The error of a sampled leaf says on how many elements it was measured: a
    9,216-element kernel stored every 3rd element may read "largest error 0.65 ULP"
    where the true one is 56.5 ULP, outside the sample."""
    import base64 as _b64

    def leaf(values: Any) -> Any:
        data = np.asarray(values, np.float32)
        return {
            "dtype": "float32",
            "shape": [9216],
            "stride": 3,
            "n": data.size,
            "data": _b64.b64encode(data.tobytes()).decode(),
            "sha256": str(hash(data.tobytes())),
        }

    base: dict[str, Any] = {
        "phase": "call",
        "api": "jax.jit(step)",
        "args": {},
        "in": [],
        "warnings": [],
        "exception": None,
        "out": {"tree": "*", "paths": [""], "leaves": [leaf([1.0] * 3072)]},
    }
    cand = {**base, "out": {"tree": "*", "paths": [""], "leaves": [leaf([1.0 + 2.0**-10] + [1.0] * 3071)]}}
    diff = divergence.differences(base, cand, 1)
    assert diff is not None
    assert any("measured on 3072 of 9216 elements, one in 3:" in t for t in diff["texts"]), diff


def test_a_run_the_same_within_the_budget_says_when_a_differing_leaf_was_measured_on_a_sample() -> None:
    """A drifting call whose sampled leaf differs by its digest is counted
    (``within_budget.sampled``), and the report says the error of such leaves
    is the sample's: a 9,216-element kernel stored one element in 3 may be
    47.3 ULP apart outside its sample while "the results you keep differ by
    at most 2.34 ULP"."""
    from optax_gate.gate.report import team_run_section

    leaf = {"dtype": "float32", "shape": [9216], "stride": 3, "n": 1, "data": "AACAPw==", "sha256": "a"}

    def obs(sha: Any) -> Any:
        return {
            "site": "train.py:9",
            "api": "jax.jit(step)",
            "call": "call",
            "phase": "call",
            "args": {},
            "warnings": [],
            "exception": None,
            "in": [],
            "out": {"tree": "*", "paths": [""], "leaves": [{**leaf, "sha256": sha}]},
        }

    result = divergence.compare([obs("a")], [obs("b")])
    assert not result["differing"] and result["within_budget"]["sampled"] == 1, result["within_budget"]
    text = "\n".join(
        team_run_section.section(
            {"team_run": {**result, "command": "c", "run_dir": ".", "runs": [], "outcome": "same"}, "findings": []}
        )
    )
    assert "stored as a sample" in text and "measured on the sample" in text, text


def test_a_flax_msgpack_checkpoint_is_judged_by_its_arrays_read_in_the_teams_environment(tmp_path: Path) -> None:
    """``flax.serialization.to_bytes`` files are read with the baseline's interpreter (``kit.environment.arrays``)
    and judged array by array; without an interpreter to read them, a differing one is "not judged"."""
    import sys

    from flax import serialization

    sides = {name: tmp_path / name for name in ("b", "r", "c")}
    w: Any = np.linspace(-1, 1, 6, dtype=np.float32)
    for name, value in (("b", w), ("r", w), ("c", w * np.float32(1.5))):
        sides[name].mkdir()
        (sides[name] / "params.msgpack").write_bytes(
            serialization.to_bytes({"params": {"w": value, "step": np.int32(3)}})
        )
    python = witness.Others(python=Path(sys.executable))
    read = output_arrays.read_in_environment.cache_info().misses
    moved = witness.compare_files(sides["b"], sides["r"], sides["c"], 4, python)
    # the baseline's file read once, compared twice
    assert output_arrays.read_in_environment.cache_info().misses - read == 3
    assert (
        moved["differs"] and moved["first"]["key"] == "['params']['w']" and "ULP (budget 4)" in moved["first"]["change"]
    ), moved
    unread = witness.compare_files(sides["b"], sides["r"], sides["c"], 4)
    assert not unread["differs"] and unread["not_judged"] == ["params.msgpack"], unread
    (sides["c"] / "params.msgpack").write_bytes((sides["b"] / "params.msgpack").read_bytes())
    assert not witness.compare_files(sides["b"], sides["r"], sides["c"], 4, python)["differs"]


def _orbax_checkpoint(folder: Path, tree: dict[str, Any]) -> None:
    """``tree`` saved by a CheckpointManager at step 5, as a team's training loop saves it (its data files get new names
    in every run)."""
    import orbax.checkpoint as ocp

    manager = ocp.CheckpointManager(folder.resolve() / "ckpt")
    manager.save(5, args=ocp.args.StandardSave(tree))
    manager.wait_until_finished()
    manager.close()


def test_an_orbax_checkpoint_is_judged_by_its_arrays_read_in_the_teams_environment(tmp_path: Path) -> None:
    """An Orbax checkpoint's item folder is one output, read with the baseline's interpreter (orbax is in the
    team's environment) and judged array by array: 1 ULP apart is within the budget, 1.5x beyond it, named by its
    key; without an interpreter to read it, it is noise: by bytes, two baseline runs write it otherwise (its data
    files get new names in every run)."""
    import sys

    import jax.numpy as jnp

    sides = {name: tmp_path / name for name in ("b", "r", "c", "u")}
    w: Any = np.linspace(-1, 1, 6, dtype=np.float32)
    one_ulp = np.nextafter(w, np.float32(np.inf))
    for name, value in (("b", w), ("r", w), ("c", w * np.float32(1.5)), ("u", one_ulp)):
        sides[name].mkdir()
        _orbax_checkpoint(
            sides[name], {"params": {"w": jnp.asarray(value), "b": jnp.ones(3, jnp.bfloat16)}, "step": jnp.int32(5)}
        )
    python = witness.Others(python=Path(sys.executable))
    moved = witness.compare_files(sides["b"], sides["r"], sides["c"], 4, python)
    assert moved["differs"] and moved["first"]["file"] == "ckpt/5/default/", moved
    assert moved["first"]["key"] == "['params']['w']" and "ULP (budget 4)" in moved["first"]["change"], moved
    close = witness.compare_files(sides["b"], sides["r"], sides["u"], 4, python)
    assert not close["differs"] and close["within_budget"] == 1 and not close["not_judged"], close
    # the folder is one output; what the two baseline runs wrote otherwise (the manager's timestamps) is named
    assert close["checkpoint_folders"] == 1 and close["noise_files"] == [
        "ckpt/5/_CHECKPOINT_METADATA",
        "ckpt/5/commit_success.txt",
    ], close
    unread = witness.compare_files(
        sides["b"], sides["r"], sides["u"], 4
    )  # by bytes, its two baseline copies already differ
    assert not unread["differs"] and unread["files"] == 0 and unread["noise"] == close["files"] + close["noise"], unread
