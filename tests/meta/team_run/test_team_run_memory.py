"""The compiled memory of the team's jitted steps under ``--run`` (``optax_gate.recorder.memory``, compared by
``optax_gate.gate.team_run.memory``): recorded at a step's first call, compared within ``MEMORY_RTOL`` and
``MEMORY_ATOL``, a growth failing the gate at the step's line whatever its values."""

from pathlib import Path
from typing import Any

from optax_gate.gate.report import team_run_section
from optax_gate.gate.team_run import command as run_command
from optax_gate.gate.team_run import judging, memory, recording
from optax_gate.kit.tolerances import MEMORY_ATOL, MEMORY_RTOL
from tests.meta.support.team_runs import PYTHON, candidate, line_of, record, team


def _event(site: Any = "train.py:30", step: Any = "jax.jit(step)", **figures: Any) -> Any:
    return {
        "memory": step,
        "site": site,
        **{"argument_bytes": 100_000, "output_bytes": 100_000, "temp_bytes": 100_000, **figures},
    }


def test_a_jitted_step_records_its_compiled_memory_once_and_an_eager_one_none(tmp_path: Path) -> None:
    """The tiny team's jitted step, 3 calls: one ``memory`` event at the step's line, its three figures in bytes
    (the arguments hold the 4-float params at least); run eagerly, no event (nothing is compiled as a whole)."""
    folder = team(tmp_path, "tiny")
    proc = record(folder, "python train.py 3", folder / "trace")
    assert proc.returncode == 0, proc.stderr[-2000:]
    events = memory.read(folder / "trace")
    assert list(events) == [f"jax.jit(step)@{line_of(folder, '= step(params, state)')}"], events
    event = next(iter(events.values()))
    assert all(isinstance(event[f], int) for f in memory.FIGURES) and event["argument_bytes"] >= 16, event
    eager = record(folder, "python train.py 3 --eager", folder / "trace-eager")
    assert eager.returncode == 0 and memory.read(folder / "trace-eager") == {}


def test_a_step_that_needs_a_mib_more_fails_the_gate_at_its_line_and_the_same_step_passes(tmp_path: Path) -> None:
    """A candidate whose sgd update holds a 1 MiB temporary, its values the same: the run computes the same, yet
    its step's temporary bytes grew beyond the tolerance: the verdict fails, naming the step's line with the bytes
    and the ratio. The same interpreter on both sides: every figure the same, said in one line, the verdict passes."""
    folder = team(tmp_path, "tiny")
    spec = run_command.RunSpec("python train.py 2", folder, 300, members=0)
    grown: Any = recording.run(spec, (PYTHON, candidate(tmp_path, "sgd-holds-a-mib")), tmp_path / "grown")
    assert grown["outcome"] == "same", grown["reason"] or grown["divergences"]
    step = line_of(folder, "= step(params, state)")
    rows = grown["memory"]["grew"]
    assert [(r["site"], r["figure"]) for r in rows] == [(step, "temp_bytes")], grown["memory"]
    assert (rows[0]["candidate"] - rows[0]["baseline"] >= 2**20 and rows[0]["ratio"] is None) or rows[0]["ratio"] > 1
    verdict, why = judging.of_team_run(grown)
    assert verdict == "fail" and step in why[0] and "temporary bytes" in why[0], why
    text = "\n".join(team_run_section.section({"team_run": grown, "findings": []}))
    assert "**Needs more memory**" in text and step in text, text
    same = recording.run(spec, (PYTHON, PYTHON), tmp_path / "same")
    assert same["memory"]["steps"] == same["memory"]["same"] == 1 and not same["memory"]["grew"], same["memory"]
    assert judging.of_team_run(same) == ("pass", [])
    said = "\n".join(team_run_section.section({"team_run": same, "findings": []}))
    figures = same["memory"]["measured"][0]
    assert (
        f"Compiled memory the same: `{step} jax.jit(step) needs {figures['baseline']['argument_bytes']:,} argument"
        in said
    ), said
    assert figures["backend"] == "cpu" and "(compiled for cpu, as on this machine)" in said, said


def test_memory_is_compared_within_the_tolerance_and_less_memory_does_not_fail() -> None:
    """At the tolerance's edge: a growth of exactly ``max(MEMORY_ATOL, MEMORY_RTOL * before)`` is the same, one byte
    more grew; a shrink beyond it is listed, not a failure; a step one side could not compile is not measured, why
    said."""
    edge = int(max(MEMORY_ATOL, MEMORY_RTOL * 100_000))
    base = {"a": _event(), "b": _event(site="train.py:40"), "c": _event(site="train.py:50")}
    cand = {
        "a": _event(temp_bytes=100_000 + edge),
        "b": _event(site="train.py:40", argument_bytes=50_000),
        "c": {**_event(site="train.py:50"), "error": "ValueError: x"},
    }
    found = memory.compare(base, cand)
    assert (found["steps"], found["same"]) == (2, 1) and found["not_measured"] == {"c": "ValueError: x"}
    assert not found["grew"] and [(r["site"], r["figure"], r["ratio"]) for r in found["shrank"]] == [
        ("train.py:40", "argument_bytes", 0.5)
    ]
    assert judging.of_team_run({"outcome": "same", "memory": found}) == ("pass", [])
    grew = memory.compare(base, {**cand, "a": _event(temp_bytes=100_000 + edge + 1)})
    assert [r["figure"] for r in grew["grew"]] == ["temp_bytes"]
    assert (
        memory.words(grew["grew"][0])
        == f"train.py:30 jax.jit(step): temporary bytes 100,000 -> {100_000 + edge + 1:,} (x1.1)"
    )
    verdict, why = judging.of_team_run({"outcome": "same", "memory": grew})
    assert verdict == "fail" and why[0].startswith("your step needs more memory in the candidate"), why


def test_an_nnx_jit_step_records_its_compiled_memory_without_stepping_the_model(tmp_path: Path) -> None:
    """``flax.nnx.jit``: the step is lowered on a clone of the model and optimizer (``nnx.clone``), so the run's
    results are those of a run without the recorder; one ``memory`` event at the step's line, the model's params
    and the optimizer's moments among its arguments (more than the 4-float params of the tiny team)."""
    folder = team(tmp_path, "nnx")
    on = record(folder, "python train.py --steps 3", folder / "trace")
    off = record(folder, "python train.py --steps 3", None)
    assert on.returncode == 0 and off.returncode == 0, on.stderr[-2000:]
    assert on.stdout == off.stdout
    events = memory.read(folder / "trace")
    step = line_of(folder, "loss = step(model, optimizer, batch)")
    assert [(e["memory"].split("(")[0], e["site"]) for e in events.values()] == [("flax.nnx.jit", step)], events
    assert next(iter(events.values()))["argument_bytes"] > 1000
