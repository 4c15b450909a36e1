"""The Optax calls run alone on the baseline's own inputs (``optax_gate.recorder.isolate``, read and compared by
``optax_gate.gate.team_run.isolated``), on written traces; the real runs are in ``test_team_run.py``."""

import json
from pathlib import Path
from typing import Any

import pytest

from optax_gate.gate.report import team_run_section
from optax_gate.gate.team_run import isolated, trace
from tests.meta.support.team_runs import call_event, leaf_record, write_trace


def _alone(
    key: Any, out: Any = None, site: Any = "train.py:20", api: Any = "optax.adam", call: Any = "update", **extra: Any
) -> Any:
    event = {"isolated": api, "call": call, "site": site, "key": key, **extra}
    if out is not None:
        event["out"] = {"tree": "PyTreeDef(*)", "paths": [""], "leaves": [out]}
    return event


def test_isolated_events_are_read_apart_from_the_calls(tmp_path: Path) -> None:
    """An ``isolated`` event is neither a call nor a host callback's values: ``trace.read`` leaves it out, and
    ``isolated.read`` keys it by its call's key."""
    folder = write_trace(
        tmp_path / "t",
        [
            call_event("train.py:20", "optax.adam", "update", leaf_record([1.0])),
            _alone("jax.jit(step)@train.py:30#1", leaf_record([1.0])),
        ],
    )
    assert [o["api"] for o in trace.read(folder)] == ["optax.adam"]
    assert list(isolated.read(folder)) == ["jax.jit(step)@train.py:30#1"]


def test_a_call_that_computes_otherwise_alone_is_a_cause_and_one_within_a_ulp_is_the_same() -> None:
    """Run alone on the same inputs: 1 ULP apart is the same (within one call's budget), 1.5x apart is a cause with
    its line; a call one side skipped is counted by why, not compared."""
    one_ulp = 1.0 + 2.0**-23
    base = {
        "a": _alone("a", leaf_record([1.0, 2.0])),
        "b": _alone("b", leaf_record([1.0]), site="train.py:21"),
        "c": _alone("c", skipped="its arguments hold PRNG keys"),
    }
    cand = {
        "a": _alone("a", leaf_record([one_ulp, 2.0])),
        "b": _alone("b", leaf_record([1.5]), site="train.py:21"),
        "c": _alone("c", skipped="its arguments hold PRNG keys"),
    }
    found = isolated.compare(base, cand)
    assert (found["calls"], found["same"]) == (2, 1)
    assert [r["site"] for r in found["differ"]] == ["train.py:21"]
    assert found["differ"][0]["texts"][0].startswith(
        "run alone on the baseline's own inputs, it computes something else"
    )
    assert found["skipped"] == {"its arguments hold PRNG keys": 1}
    diff = isolated.causes(found, {"causes": [], "divergences": [], "differing": 0, "sites": [], "first": None})
    assert diff["differing"] == 1 and diff["sites"] == ["train.py:21"] and diff["first"]["phase"] == "isolated"
    assert diff["causes"][0]["role"] == "cause"


def test_an_exception_alone_is_compared_by_its_type() -> None:
    """A message may name a tracer or an address: the same exception type on both sides is the same."""
    raised = {"exception": {"type": "ValueError", "message": "at 0x7f00"}}
    other = {"exception": {"type": "ValueError", "message": "at 0x7f99"}}
    assert isolated.compare({"a": _alone("a", **raised)}, {"a": _alone("a", **other)})["same"] == 1
    changed = isolated.compare(
        {"a": _alone("a", **raised)}, {"a": _alone("a", **{"exception": {"type": "TypeError", "message": ""}})}
    )
    assert changed["differ"][0]["kinds"] == ["exception"]


def test_a_cause_the_run_already_names_gets_what_it_computes_alone_once() -> None:
    """The run's own cause at the same line and call: what the call computes alone is added to its first row only."""
    row = {"site": "train.py:21", "call": "optax.adam(...).update", "texts": ["result: 1 ULP"], "role": "cause"}
    found = {
        "differ": [
            {
                "site": "train.py:21",
                "api": "optax.adam",
                "call": "optax.adam(...).update",
                "kinds": ["values"],
                "texts": ["alone: 1.5x"],
                "max_ulps": 1.0,
            }
        ]
    }
    diff = isolated.causes(
        found, {"causes": [row, {**row}], "divergences": [row], "differing": 2, "sites": ["train.py:21"], "first": row}
    )
    assert diff["differing"] == 2 and [c["texts"] for c in diff["causes"]] == [
        ["result: 1 ULP", "alone: 1.5x"],
        ["result: 1 ULP"],
    ]
    assert diff["first"]["texts"] == ["result: 1 ULP", "alone: 1.5x"]


def test_the_report_says_what_the_calls_run_alone_gave() -> None:
    same: Any = {"isolated": {"calls": 5, "same": 5, "differ": [], "skipped": {"its arguments hold PRNG keys": 1}}}
    assert team_run_section.alone_words(same).startswith(
        "**Optax computes the same on identical inputs**: each of the 5 Optax call(s)"
    )
    assert "1 its arguments hold PRNG keys" in team_run_section.alone_words(same)
    other: Any = {
        "isolated": {
            "calls": 5,
            "same": 4,
            "differ": [{"site": "a.py:3", "call": "optax.adam(...).update", "texts": ["x"]}],
            "skipped": {},
        }
    }
    assert team_run_section.alone_words(other).startswith(
        "**Optax computes something else on identical inputs**: 1 of 5"
    )
    assert team_run_section.alone_words({}) == ""


def test_the_recorders_inputs_round_trip_every_dtype(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The inputs the baseline writes are read back bit for bit in their dtype and shape (bfloat16, complex64, bool,
    a 0-d array, an empty one)."""
    import jax.numpy as jnp
    import numpy as np

    from optax_gate.recorder import isolate

    arrays: Any = [
        jnp.array([1.5, -2.25], jnp.bfloat16),
        jnp.array([1 + 2j], jnp.complex64),
        jnp.array([True, False]),
        jnp.float32(3.0),
        jnp.zeros((0, 3)),
    ]
    isolate.save(str(tmp_path), "k#1", *arrays)
    back = isolate.load(str(tmp_path), "k#1")
    assert back is not None
    assert [(str(b.dtype), b.shape) for b in back] == [(str(a.dtype), a.shape) for a in arrays]
    assert all(np.asarray(b).tobytes() == np.asarray(a).tobytes() for a, b in zip(arrays, back, strict=True))
    assert json.loads(Path(isolate.path(str(tmp_path), "k#1") + ".json").read_text())["dtypes"][0] == "bfloat16"
