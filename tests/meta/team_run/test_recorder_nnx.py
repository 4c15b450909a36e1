"""``gate --run`` on a team written as Flax's NNX examples write it
(``tests/meta/teams/nnx``: ``nnx.Linear``, ``nnx.LayerNorm``, ``nnx.Dropout``,
``nnx.Rngs``, ``nnx.Optimizer``, an ``nnx.jit`` step, a dataclass batch with
static fields): two processes of one program write the same trace, the
recorder changes nothing the program computes, the values inside the
``nnx.jit`` step are compared, and a run of which no value could be compared
is not verified. The candidates are this interpreter with a change planted
into optax at start-up (as in ``test_team_run``)."""

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from optax_gate.gate import assemble
from optax_gate.gate.report import team_run_section
from optax_gate.gate.team_run import birth, birth_words, divergence, isolated, judging, recording, trace
from optax_gate.gate.team_run import command as run_command
from tests.meta.support.team_runs import PLANTS, PYTHON, candidate, line_of, npz_arrays, record, team

#: Each test runs a real JAX program three to five times (the gate's runs): minutes under a loaded machine, not the
#: suite's 60 s default.
pytestmark = pytest.mark.timeout(300)

PLANTS.setdefault(
    "adamw-further",
    """
import optax
_adamw = optax.adamw
def adamw(learning_rate, *args, **kwargs):
    return _adamw(learning_rate * 1.5, *args, **kwargs)
adamw.__module__ = "optax._src.alias"
optax.adamw = adamw
""",
)

PLANTS.setdefault(
    "moments-start-moved",
    """
import jax
import optax.tree
_zeros_like = optax.tree.zeros_like
def zeros_like(tree, dtype=None):  # Adam's moments start at 1e-3, not 0: the state differs from its init on
    return jax.tree.map(lambda x: x + 1e-3 if x.dtype.kind == "f" else x, _zeros_like(tree, dtype))
optax.tree.zeros_like = zeros_like
""",
)


def _recorded_script(tmp_path: Path, source: str) -> list[dict[str, Any]]:
    """The observations of ``source`` run as a team's ``train.py`` under the recorder (it must exit 0)."""
    folder = tmp_path / "team"
    folder.mkdir()
    (folder / "train.py").write_text(source)
    proc = record(folder, "python train.py", folder / "trace")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return trace.read(folder / "trace")


def _events(trace: Path) -> list[str]:
    """The trace's event lines (its header, which holds the process id and start time, left out)."""
    (path,) = sorted(trace.glob("trace-*.jsonl"))
    return path.read_text().splitlines()[1:]


def test_two_processes_of_an_nnx_program_write_the_same_trace(tmp_path: Path) -> None:
    """Two processes of an nnx program (hash randomisation on, two seeds)
    write byte-identical events: the PyTree structure names a static
    function by its qualified name, with no address (``str(treedef)`` holds
    ``<function dot_general at 0x7f…>``), so a model with an ``nnx.Linear``
    is not refused as "not deterministic"."""
    traces = []
    for seed in ("1", "2"):
        folder = team(tmp_path / seed, "nnx")
        os.environ["PYTHONHASHSEED"] = seed
        try:
            proc = record(folder, "python train.py --steps 2", folder / "trace")
        finally:
            del os.environ["PYTHONHASHSEED"]
        assert proc.returncode == 0, proc.stderr[-2000:]
        traces.append(_events(folder / "trace"))
    assert traces[0] == traces[1]
    text = "\n".join(traces[0])
    assert " at 0x" not in text and "dot_general" in text
    assert (
        "Batch" in text and "'train'" in text and "squared" in text
    )  # the dataclass's static fields, by value and name


def test_recording_on_and_off_under_nnx_jit_gives_bit_identical_results(tmp_path: Path) -> None:
    """The team's saved params (bit for bit) and printed losses are the same
    with the recorder on and off under ``nnx.jit`` (its shadow runs on a
    clone of the model and optimizer: the team's own are stepped once per
    call); and the recorder recorded the step's values."""
    results = {}
    for mode in ("off", "on"):
        folder = team(tmp_path / mode, "nnx")
        proc = record(folder, "python train.py --steps 4 --out params.npz", folder / "trace" if mode == "on" else None)
        assert proc.returncode == 0, proc.stderr[-2000:]
        results[mode] = (proc.stdout, npz_arrays(folder / "params.npz"))
    assert results["on"] == results["off"]
    observed = trace.read(tmp_path / "on" / "team-nnx" / "trace")
    update = line_of(tmp_path / "on" / "team-nnx", "optimizer.update(")
    runs = [o for o in observed if o["site"] == update and o["phase"] == "run"]
    assert len(runs) == 4 and all(leaf.get("n") for leaf in runs[0]["out"]["leaves"] if "dtype" in leaf)
    steps = [o for o in observed if o["api"] == "flax.nnx.jit(train_step)"]
    assert len(steps) == 4 and any(
        "['l1']['kernel']" in p for p in steps[-1]["out"]["paths"]
    )  # the state after the step


def test_a_change_inside_an_nnx_jit_step_is_found_at_its_line(tmp_path: Path) -> None:
    """Values under ``nnx.jit`` are recorded, so a real divergence there is
    found. A candidate whose AdamW steps 1.5 times further: the run diverges,
    its cause the ``optimizer.update`` line inside the jitted step (the
    values of its first run, inputs identical); the step's results (the loss,
    the params and optimizer state after it) follow as consequences."""
    folder = team(tmp_path, "nnx")
    spec = run_command.RunSpec("python train.py --steps 3", folder, 300)
    result: Any = recording.run(spec, (PYTHON, candidate(tmp_path, "adamw-further")), tmp_path)
    assert result["outcome"] == "diverged", result["reason"]
    update = line_of(folder, "optimizer.update(")
    assert result["sites"] == [update] and result["first"]["site"] == update
    assert result["first"]["role"] == "cause" and "values" in result["first"]["kinds"]
    step = line_of(folder, "loss = step(model, optimizer, batch)")
    assert any(d["site"] == step and d["role"] == "consequence" for d in result["divergences"])
    assert result["compared_by"]["value"] > 0 and update in result["compared_by"]["value_sites"]
    # the tx.update Flax calls inside optimizer.update, run alone on the baseline's inputs: the cause, at the team's
    # line
    alone = [r for r in result["isolated"]["differ"] if r["site"] == update]
    assert alone and alone[0]["call"] == "optax.adamw(...).update (through flax.nnx.Optimizer.update)", result[
        "isolated"
    ]
    assert result["isolated"]["differ"] == alone, result["isolated"]
    flax_made = [e for e in isolated.read(tmp_path / "team-run-baseline").values() if e.get("through")]
    made = {(e["isolated"], e["call"]) for e in flax_made}  # what Flax calls, not what Optax calls inside those
    assert made == {("optax.adamw", "init"), ("optax.adamw", "update"), ("optax.apply_updates", "call")}, made


def test_an_nnx_program_the_same_on_both_sides_says_what_was_compared_by_value(tmp_path: Path) -> None:
    """Two runs of the same environment: "computes the same", and the report
    counts the calls compared by value (the step's), by structure only (the
    optimizer built), and why."""
    folder = team(tmp_path, "nnx")
    spec = run_command.RunSpec("python train.py --steps 2", folder, 300)
    result = recording.run(spec, (PYTHON, PYTHON), tmp_path)
    assert result["outcome"] == "same", result["reason"]
    assert (
        "replay_runs" not in result
    )  # nothing to trace to its birth: no run replays its step (a compilation per operation)
    by = result["compared_by"]
    assert by["value"] >= 4 and by["structure"] >= 1 and by["why"].get("built", 0) >= 1, by
    text = "\n".join(team_run_section.section({"team_run": result, "findings": []}))
    assert f"{by['value']} call(s) compared by value" in text and "by structure only" in text, text


def test_a_run_of_which_no_value_is_compared_is_not_verified(tmp_path: Path) -> None:
    """A run whose Optax calls only build an optimizer (nothing computed is
    recorded) is not verified, never "computes the same ... bit for bit",
    and the reason counts what was compared and how."""
    folder = tmp_path / "team"
    folder.mkdir()
    (folder / "train.py").write_text("import optax\n\ntx = optax.adam(1e-3)\nprint(tx)\n")
    result = recording.run(run_command.RunSpec("python train.py", folder, 300), (PYTHON, PYTHON), tmp_path / "out")
    assert result["outcome"] == "not-verified"
    assert result["reason"].startswith(
        "no value of your run could be compared: 1 call(s) compared by structure only"
    ), result
    assert divergence.WHY["built"] in result["reason"]


def test_calls_are_counted_by_how_they_were_compared() -> None:
    """``compared_by`` on written observations: arrays on both sides (by
    value), a Python number returned (by value), a factory (structure), a
    traced call with runs and one without (structure, two reasons), a
    recorder error and a one-sided call (not at all)."""
    leaf = {"dtype": "float32", "shape": [], "n": 1, "data": "AACAPw==", "sha256": "x"}

    def obs(
        site: Any, phase: Any = "call", out: Any = None, api: Any = "optax.adam", call: Any = "call", **extra: Any
    ) -> Any:
        return {
            "site": site,
            "api": api,
            "call": call,
            "phase": phase,
            "args": {},
            "warnings": [],
            "exception": None,
            "in": [],
            "out": out,
            **extra,
        }

    base = [
        obs("a:1", out={"tree": "*", "paths": [""], "leaves": [leaf]}),
        obs("a:2", out={"tree": "*", "paths": [""], "leaves": [{"py": "float", "value": "0.5"}]}),
        obs("a:3", out={"tree": "*", "paths": [""], "leaves": [{"callable": "f"}]}),
        obs("a:4", phase="trace"),
        obs("a:4", phase="run", out={"tree": "*", "paths": [""], "leaves": [leaf]}),
        obs("a:5", phase="trace", api="optax.sgd"),
        obs("a:6", record_error="TypeError"),
        obs("a:7"),
    ]
    pairs: list[tuple[dict[str, Any] | None, dict[str, Any] | None]] = [(o, dict(o)) for o in base[:-1]]
    pairs.append((base[-1], None))
    by = divergence.compared_by(base, [c for _, c in pairs if c], pairs)
    assert (by["value"], by["structure"], by["none"]) == (3, 3, 2), by
    assert by["why"] == {"built": 1, "traced": 1, "traced-unrecorded": 1, "record-error": 1, "one-side": 1}
    assert by["value_sites"] == ["a:1", "a:2", "a:4"]


PLANTS.setdefault(
    "tanh-otherwise",
    """
from jax._src.interpreters import mlir
from jax._src.lax import lax as _lax
def _tanh(x, accuracy=None):  # the same operation in the jaxpr, computed otherwise by XLA
    return (_lax.exp(x) - _lax.exp(-x)) / (_lax.exp(x) + _lax.exp(-x))
mlir.register_lowering(_lax.tanh_p, mlir.lower_fun(_tanh, multiple_results=False))
""",
)
PLANTS.setdefault(
    "data-moved",
    """
import numpy as np
_rng = np.random.default_rng
class _Moved:
    def __init__(self, rng):
        self._rng = rng
    def normal(self, *args, **kwargs):
        return self._rng.normal(*args, **kwargs) * (1 + 1e-6)
np.random.default_rng = lambda *args, **kwargs: _Moved(_rng(*args, **kwargs))
""",
)


@pytest.mark.parametrize(
    "plant, kind, by",
    [("tanh-otherwise", "operation", "JAX/XLA"), ("adamw-further", "program", "Optax"), ("data-moved", "before", None)],
)
def test_where_a_difference_is_born_is_found_by_replaying_the_step(
    tmp_path: Path, plant: Any, kind: Any, by: Any
) -> None:
    """A difference born in JAX is not blamed on the step. The first call of
    the ``nnx.jit`` step is replayed equation by equation on both sides: a
    ``tanh`` computed otherwise by XLA (same jaxpr) is born at the model's
    ``jnp.tanh`` line, in JAX/XLA, with its size; an AdamW stepping further
    is another program from Optax's code on; data moved by NumPy is born
    before the step (its inputs already differ). The verdict's reason says
    where."""
    folder = team(tmp_path, "nnx")
    spec = run_command.RunSpec("python train.py --steps 2", folder, 300, members=0)  # --exact: the ULP budget alone
    result: Any = recording.run(spec, (PYTHON, candidate(tmp_path, plant)), tmp_path / "out")
    # XLA's own tanh against the planted formula: 3.8 ULP apart after two steps on one CPU (within the budget of 8:
    # the run is the same, not bit for bit), beyond it on another; either way the last bits are born in the tanh
    assert result["outcome"] == "diverged" or (plant == "tanh-otherwise" and result["outcome"] == "same"), result[
        "reason"
    ]
    assert [r["label"] for r in result["replay_runs"]] == ["baseline-replay", "candidate-replay"]
    (row,) = result["born"]
    assert row["kind"] == kind and row["function"] == "flax.nnx.jit(train_step)", row
    if kind == "operation":
        assert row["primitive"] == "tanh" and row["team"] == line_of(folder, "jnp.tanh(") and row["by"] == by
        assert 0 < row["error_ulps"] < 100 and "|Δ|" in row["change"], row
    elif kind == "program":
        assert row["by"] == by and row["at"].startswith("optax/"), row
    report: Any = {"team_run": result, "findings": [], "verdict": "pass", "reasons": []}
    report = assemble.with_team_run(report, result)
    if result["outcome"] == "diverged":
        assert "born " + birth_words.born_short(row) in report["reasons"][0]
    else:  # the same, not bit for bit: "Your code" says where the last bits are born
        assert "where it is born: " + birth_words.born_words(row) in "\n".join(team_run_section.section(report))


def test_xla_computing_tanh_otherwise_is_rounding_against_the_runs_own_noise_and_still_born_in_jax(
    tmp_path: Path,
) -> None:
    """The same tanh computed otherwise, judged against the spread of the perturbed baseline runs: the run is
    the same (rounding, not a change), and where its last bits are born is still said: JAX/XLA's tanh."""
    folder = team(tmp_path, "nnx")
    result = recording.run(
        run_command.RunSpec("python train.py --steps 2", folder, 300),
        (PYTHON, candidate(tmp_path, "tanh-otherwise")),
        tmp_path / "out",
    )
    assert result["outcome"] == "same" and result["ensemble"]["used"], (result.get("first"), result.get("witnessed"))
    (row,) = result["born"]
    assert row["kind"] == "operation" and row["primitive"] == "tanh" and row["by"] == "JAX/XLA", row


def test_a_candidate_whose_recorder_did_not_start_is_not_verified(tmp_path: Path) -> None:
    """A candidate run that goes through while its recorder records nothing
    (it did not start there, as with 'Error in sitecustomize' in an
    environment without the gate's package) is not verified, saying the
    recorder did not start, never FAIL with every call 'called in the
    baseline only'."""
    folder = team(tmp_path, "nnx")
    python = tmp_path / "cand" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/bash\nunset OPTAX_GATE_TRACE\nexec {PYTHON} "$@"\n')
    python.chmod(0o755)
    result = recording.run(
        run_command.RunSpec("python train.py --steps 1", folder, 300), (PYTHON, python), tmp_path / "out"
    )
    assert result["outcome"] == "not-verified"
    assert result["reason"].startswith(
        "the recorder recorded no call of your run in the candidate, which ran to its end"
    )


def test_a_cause_at_an_nnx_optimizer_update_is_explained_by_findings_on_what_built_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A cause at ``optimizer.update`` of a ``flax.nnx.Optimizer`` (for
    example its state's weight-decay ``count`` 0 → 1) carries the Optax API
    that built the optimizer (``via``: ``optax.adamw``); by the composition
    probe, ``adamw`` is built from ``add_decayed_weights``, whose finding
    (the scheduled weight decay's count no longer stuck) is then the team's
    and explains the line, not "elsewhere"."""
    from optax_gate.gate.team_code import composition

    monkeypatch.setattr(
        composition,
        "of_records",
        lambda *records: ({"optax.adamw": {"optax.scale_by_adam", "optax.add_decayed_weights"}}, [], {}),
    )
    cause = {
        "site": "train.py:41",
        "api": "flax.nnx.Optimizer",
        "via": "optax.adamw",
        "call": "flax.nnx.Optimizer(...).update",
        "phase": "run",
        "occurrence": 1,
        "kinds": ["values"],
        "role": "cause",
        "max_ulps": None,
        "texts": ["result['optimizer']['opt_state'][1]['count'].value: 0 → 1"],
    }
    run: Any = {
        "outcome": "diverged",
        "causes": [cause],
        "sites": ["train.py:41"],
        "first": cause,
        "divergences": [cause],
        "differing": 1,
        "called": ["train.py:41"],
        "reason": "",
    }
    decay = {
        "number": 1,
        "change": "changed",
        "section": "contracts",
        "api": "optax.add_decayed_weights",
        "cause": "optimizer state holds other values: `[0].inner_state.count` 0 → 1",
    }
    other = {
        "number": 2,
        "change": "broken",
        "section": "contracts",
        "api": "optax.huber_loss",
        "cause": "delta keyword-only",
    }
    report: Any = {"findings": [decay, other], "verdict": "pass", "reasons": []}
    report = assemble.with_team_run(report, run)
    scopes: Any = {f["api"]: (f["number"], f["scope"]) for f in report["findings"]}  # the scoped copies
    assert scopes == {"optax.add_decayed_weights": (1, "yours"), "optax.huber_loss": (2, "elsewhere")}, scopes
    assert report["team_run"]["affected"][0]["findings"] == [1]


def test_a_cause_at_an_optax_update_a_library_made_is_explained_by_findings_on_what_built_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A linen TrainState's ``apply_gradients`` runs ``optax.adamw(...).update``, whose weight-decay ``count`` goes
    0 → 1: adamw is built from add_decayed_weights (the composition probe), so that finding, which speaks of the
    count, explains the line, not a finding that merely lists adamw among its APIs (such as one on adamw's
    non-finite outputs, among 14 APIs)."""
    from optax_gate.gate.team_code import composition

    monkeypatch.setattr(
        composition,
        "of_records",
        lambda *records: ({"optax.adamw": {"optax.scale_by_adam", "optax.add_decayed_weights"}}, [], {}),
    )
    cause = {
        "site": "train.py:44",
        "api": "optax.adamw",
        "call": "optax.adamw(...).update (through flax.training.train_state.TrainState.apply_gradients)",
        "phase": "run",
        "occurrence": 1,
        "kinds": ["values"],
        "role": "cause",
        "max_ulps": None,
        "texts": ["result[1][1].count: 0 → 1"],
    }
    run: Any = {
        "outcome": "diverged",
        "causes": [cause],
        "sites": ["train.py:44"],
        "first": cause,
        "divergences": [cause],
        "differing": 1,
        "called": ["train.py:44"],
    }
    nonfinite: Any = {
        "number": 1,
        "change": "changed",
        "section": "contracts",
        "apis": ["optax.adadelta", "optax.adamw"],
        "cause": "fewer non-finite outputs when a parameter is NaN or inf: the update and the state entries",
    }
    decay: Any = {
        "number": 17,
        "change": "changed",
        "section": "contracts",
        "api": "optax.add_decayed_weights",
        "cause": "optimizer state holds other values: `[0].inner_state.count` 0 → 1",
    }
    report = assemble.with_team_run(
        {"findings": [nonfinite, decay], "verdict": "pass", "reasons": []}, {**run, "reason": ""}
    )
    by_number = {
        f["number"]: (f.get("api") or f["apis"][-1], f["scope"]) for f in report["findings"]
    }  # renumbered, the team's first
    explained = [by_number[n] for n in report["team_run"]["affected"][0]["findings"]]
    assert explained == [("optax.add_decayed_weights", "yours")], (explained, by_number)


def test_a_difference_born_in_the_state_nnx_optimizer_builds_is_found_at_its_constructor(tmp_path: Path) -> None:
    """The optimizer state that ``nnx.Optimizer(model, tx, wrt=nnx.Param)`` builds (``tx.init``, called from inside
    Flax) is recorded, so a difference born there (as a bfloat16 ``MultiSteps``' ``acc_grads`` turning float32 in 0.2.8)
    is not first seen at the first ``update`` as "born before ``nnx.jit(train_step)`` ... not an Optax call". A
    candidate whose Adam moments start at 1e-3 (``optax.tree.zeros_like`` planted): the first divergence is the
    constructor's line, a cause (the model's leaves the same, the state other), carrying the Optax API that built the
    transformation, and the verdict says it is born there."""
    folder = team(tmp_path, "nnx")
    spec = run_command.RunSpec("python train.py --steps 2", folder, 300)
    result: Any = recording.run(spec, (PYTHON, candidate(tmp_path, "moments-start-moved")), tmp_path)
    assert result["outcome"] == "diverged", result["reason"]
    built = line_of(folder, "optimizer = nnx.Optimizer(")
    first = result["first"]
    assert first["site"] == built and first["role"] == "cause" and first["call"] == "flax.nnx.Optimizer(...)", first
    assert first["via"] == "optax.adamw" and any("['opt_state']" in text for text in first["texts"]), first
    assert built in result["called"] and built in result["compared_by"]["value_sites"]
    report = assemble.with_team_run({"findings": [], "verdict": "pass", "reasons": []}, result)
    assert (
        f"born in `optax.adamw`, through `flax.nnx.Optimizer(...)` at `{built}`: other results on the same inputs"
        in report["reasons"][0]
    )
    # the jitted step's inputs already differ, from that call on: neither the reason nor "Your code" says "not an Optax
    # call"
    assert [r["kind"] for r in result["born"]] == ["before"], result["born"]
    assert "opt_state" in result["born"][0].get("first_input", ""), result[
        "born"
    ]  # which of the step's inputs differs first
    text = "\n".join(team_run_section.section(report))
    assert (
        "in the Optax call where it is born (above)" in text and "not an Optax call" not in report["reasons"][0] + text
    ), text


def test_the_constructor_of_nnx_optimizer_is_recorded_from_the_line_that_calls_it(tmp_path: Path) -> None:
    """Flax builds a graph node through its metaclass, so the constructor's own caller is Flax's file: the recorded
    site is the team's line all the same, its result the state built (``step``, ``opt_state``), its inputs the
    model's leaves; an ``nnx.Optimizer`` built inside Flax (not from the team's files) is not recorded."""
    observed = _recorded_script(
        tmp_path,
        "import optax\nfrom flax import nnx\n\n"
        "model = nnx.Linear(2, 3, rngs=nnx.Rngs(0))\n"
        "optimizer = nnx.Optimizer(model, optax.sgd(0.1, momentum=0.9), wrt=nnx.Param)\n",
    )
    (built,) = [o for o in observed if o["api"] == "flax.nnx.Optimizer"]
    assert built["site"] == "train.py:5" and built["call"] == "call" and built["via"] == "optax.sgd", built
    paths = built["out"]["paths"]
    assert any(p.startswith("['opt_state']") and "trace" in p for p in paths) and any(
        p.startswith("['step']") for p in paths
    ), paths
    assert len(built["in"]) == 2  # the model's kernel and bias


def _replay(*eqns: tuple[str, str, str, str]) -> dict[str, Any]:
    """A synthetic replay of a step: each equation (primitive, where traced, its input's digest, its output's)."""
    return {
        "eqns": [
            {"p": p, "at": at, "team": "train.py:9", "in": [inp], "out": [out], "vals": []} for p, at, inp, out in eqns
        ],
        "inputs": ["x"],
    }


def test_where_programs_part_is_said_after_the_first_operation_and_line_moves_are_not_a_change() -> None:
    """Synthetic replays: the first equation gives other results on identical
    inputs (an operation of JAX/XLA); later the two sides trace another
    operation in Optax's code (a second, ``also``, row). A line number that
    moved in Optax's file between releases is not a program that changed."""

    base = _replay(
        ("dot_general", "train.py:5", "a", "b"),
        ("mul", "optax/_src/alias.py:10", "b", "c"),
        ("add", "optax/_src/transform.py:20", "c", "d"),
    )
    cand = _replay(
        ("dot_general", "train.py:5", "a", "B"),
        ("mul", "optax/_src/alias.py:12", "B", "C"),
        ("sub", "optax/_src/transform.py:22", "C", "D"),
    )
    rows = birth.birth({("jax.jit(step)", "train.py:30"): base}, {("jax.jit(step)", "train.py:30"): cand})
    assert [(r["kind"], r["index"], r.get("also", False)) for r in rows] == [
        ("operation", 0, False),
        ("program", 2, True),
    ]
    assert rows[1]["by"] == "Optax" and rows[1]["primitive"] == "add → sub"
    # its inputs already moved by the rounding at operation 1: no claim that Optax computes other values there
    assert "on inputs the rounding above already moved" in birth_words.born_words(rows[1])
    assert "computes something else" not in birth_words.born_short(rows[1]) + birth_words.born_words(rows[1])


def test_a_transformation_built_by_a_wrapper_of_a_recorded_factory_is_recorded(tmp_path: Path) -> None:
    """``optax.inject_hyperparams(optax.adam)`` wraps the recorded ``adam`` with
    ``functools.wraps``, which copies the recorder's mark: its transformation is not
    taken as recorded already, and its ``init`` and ``update`` are recorded (in the
    corpus' inject_hyperparams team they hold the run's cause, a bfloat16 ``b2``
    rounded to 1.0 in the state)."""
    observed = _recorded_script(
        tmp_path,
        "import jax.numpy as jnp\nimport optax\n\n"
        "tx = optax.inject_hyperparams(optax.adam)(learning_rate=3e-3)\n"
        "params = {'w': jnp.ones(3)}\n"
        "state = tx.init(params)\n"
        "updates, state = tx.update({'w': jnp.full(3, 0.5)}, state, params)\n",
    )
    calls = {(o["site"], o["call"]) for o in observed}
    assert {("train.py:6", "init"), ("train.py:7", "update")} <= calls, calls


def test_a_training_loop_in_lax_scan_is_the_same_in_its_two_baseline_runs(tmp_path: Path) -> None:
    """The corpus' lax.scan loop (``teams/corpus/lax_scan_sgd``) is the same in its two baseline runs, every
    call compared by value or structure: the first run's equation replay runs the scan whole, and the
    replay's host callbacks record nothing, so it records no call the repeat run (no replay) does not."""
    folder = tmp_path / "team"
    shutil.copytree(Path(__file__).parents[1] / "teams" / "corpus" / "lax_scan_sgd", folder)
    result = recording.run(run_command.RunSpec("python train.py", folder, 300), (PYTHON, PYTHON), tmp_path / "out")
    assert result["outcome"] == "same", result["reason"]
    assert result["compared_by"]["value"] > 40 and not result["compared_by"]["none"], result["compared_by"]


def test_a_shard_map_and_pmap_step_over_eight_devices_is_the_same_in_its_two_baseline_runs(tmp_path: Path) -> None:
    """``teams/corpus/shard_map_pmap``: 8 CPU devices, a jitted
    ``jax.shard_map`` step and a ``jax.pmap`` step, Optax inside each
    device's program. Each device runs the shadow's host callback, in any
    order: matched by arrival, two runs of the same program read 4e8 ULP
    apart. Each callback says its device (``axis_index``); the run is bit for
    bit the same as itself."""
    folder = tmp_path / "team"
    shutil.copytree(Path(__file__).parents[1] / "teams" / "corpus" / "shard_map_pmap", folder)
    result = recording.run(run_command.RunSpec("python train.py", folder, 300), (PYTHON, PYTHON), tmp_path / "out")
    assert result["outcome"] == "same", result["reason"]
    assert result["within_budget"]["calls"] == 0, result["within_budget"]
    # per-device calls are not run alone (a callback per device there deadlocked the collectives)
    assert (
        result["isolated"]["skipped"].get(
            "it runs per device inside shard_map or pmap (its collectives need the mesh)", 0
        )
        >= 3
    )
    runs = [o for o in trace.read(tmp_path / "out" / "team-run-baseline") if o["phase"] == "run"]
    assert len(runs) >= 8 * 3, len(runs)


def test_a_difference_first_seen_after_the_first_step_is_said_born_later_without_a_replay() -> None:
    """The corpus' nnx_mlp_adam: bit-identical at its first step, 1 ULP apart
    in Adam's ``nu`` from step 8: a replay of the first call told of an
    operation that did not make the difference. A step whose first call is
    the same gets ``later`` (the call where it first differs), and no replay
    runs for it."""
    ran = []
    result: Any = {
        "first_differs": {"flax.nnx.jit(train_step)@train.py:96": 8, "optax.adam(...).update@train.py:40": 3}
    }
    recording.births(result, Path("/nonexistent"), None, lambda: ran.append("replayed"))
    assert result["born"] == [
        {"function": "flax.nnx.jit(train_step)", "site": "train.py:96", "kind": "later", "call": 8}
    ]
    assert not ran and "replay_runs" not in result
    assert "they first differ at call 8" in birth_words.born_words(result["born"][0])


def test_a_cause_at_an_eager_optax_call_is_said_first_where_the_difference_is_born() -> None:
    """An Optax call outside any transformed function whose results differ
    on the same inputs is said first where the difference is born; the
    step's birth follows. For example a schedule logged with
    ``float(schedule(step))`` going NaN → 0.01 at its own line (an Optax
    change) comes before a ``dot_general`` in the jitted step (noise)."""
    cause = {
        "site": "train.py:70",
        "api": "optax.cosine_onecycle_schedule",
        "call": "optax.cosine_onecycle_schedule(...)(...)",
        "phase": "call",
        "occurrence": 1,
        "kinds": ["dtype"],
        "role": "cause",
        "side": "both",
        "max_ulps": None,
        "texts": ["result: dtype float64 → float32; value NaN → 0.00999999978"],
    }
    born = {
        "function": "jax.jit(step)",
        "site": "train.py:80",
        "kind": "operation",
        "primitive": "dot_general",
        "at": "train.py:33",
        "team": "train.py:33",
        "by": "JAX/XLA",
        "index": 0,
        "error_ulps": 0.6,
    }
    run: Any = {
        "outcome": "diverged",
        "causes": [cause],
        "sites": ["train.py:70"],
        "first": cause,
        "divergences": [cause],
        "differing": 1,
        "called": ["train.py:70"],
        "reason": "",
        "born": [born],
    }
    report: Any = {"findings": [], "verdict": "pass", "reasons": []}
    report = assemble.with_team_run(report, run)
    reason = report["reasons"][0]
    assert "; born in the Optax call `optax.cosine_onecycle_schedule(...)(...)` at `train.py:70`" in reason, reason
    assert reason.index("train.py:70`: other results") < reason.index("dot_general")


def test_a_warning_raised_from_c_inside_an_optax_call_is_recorded(tmp_path: Path) -> None:
    """A warning raised from C inside an Optax call, such as NumPy's
    ``RuntimeWarning: divide by zero`` inside a schedule (never through
    ``warnings.warn``), is recorded, so "no longer warns" can be said. A
    team schedule that divides by zero inside ``tx.update``: its update
    records the RuntimeWarning, once; a Python-level warning is recorded
    once too."""
    observed = {
        o["site"]: o
        for o in _recorded_script(
            tmp_path,
            (
                "import numpy as np\nimport jax.numpy as jnp\nimport optax\n\n"
                "tx = optax.scale_by_schedule(lambda count: np.float32(1.0) / np.float32(0.0))\n"
                "state = tx.init({'w': jnp.ones(2)})\n"
                "updates, state = tx.update({'w': jnp.ones(2)}, state)\n"
                "tx2 = optax.scale_by_schedule(lambda count: (__import__('warnings').warn('slow', "
                "UserWarning), 1.0)[1])\n"
                "updates, _ = tx2.update({'w': jnp.ones(2)}, tx2.init({'w': jnp.ones(2)}))\n"
            ),
        )
    }
    assert [w["category"] for w in observed["train.py:7"]["warnings"]] == ["RuntimeWarning"], observed["train.py:7"]
    assert [w["category"] for w in observed["train.py:9"]["warnings"]] == [
        "UserWarning"
    ]  # warnings.warn: once, not twice


def test_another_program_for_the_same_values_is_a_changed_path_not_a_cause() -> None:
    """optax 0.2.8 traces another program for the global norm (numerics.py → tree_math.py) that gives the same
    values: the two replays meet again on bit-identical inputs. That is a changed code path, said as such and
    left out of the verdict's reason; a value that differs after it is born where it differs."""

    norm = ("sqrt", "optax/_src/numerics.py:46")
    base = _replay(("mul", "optax/_src/numerics.py:45", "g", "s"), (*norm, "s", "n"), ("div", "optax/x.py:1", "n", "u"))
    same = _replay(
        ("dot", "optax/tree_utils/_tree_math.py:275", "g", "s"), (*norm, "s", "n"), ("div", "optax/x.py:1", "n", "u")
    )
    key = ("jax.jit(step)", "train.py:30")
    (row,) = birth.birth({key: base}, {key: same})
    assert row["kind"] == "path" and row["by"] == "Optax" and row["index"] == 0, row
    assert "a changed code path, not a changed result" in birth_words.born_words(row)
    result = {"outcome": "diverged", "born": [row], "sites": ["train.py:9"], "first": None}
    assert "born" not in judging.of_team_run(result)[1][0]
    moved = _replay(
        ("dot", "optax/tree_utils/_tree_math.py:275", "g", "s"), (*norm, "s", "n"), ("div", "optax/x.py:1", "n", "U")
    )
    path, then = birth.birth({key: base}, {key: moved})
    assert (path["kind"], then["kind"], then["index"], then["by"]) == ("path", "operation", 2, "JAX/XLA"), (path, then)
    other = _replay(
        ("dot", "optax/tree_utils/_tree_math.py:275", "g", "S"), (*norm, "S", "N"), ("div", "optax/x.py:1", "N", "U")
    )
    (row,) = birth.birth({key: base}, {key: other})
    assert row["kind"] == "program"  # the programs meet again on other values: the code there computes something else


def test_a_replayed_operation_is_never_placed_in_the_recorders_own_wrapper(monkeypatch: pytest.MonkeyPatch) -> None:
    """An ``nnx.scan`` the recorder wraps: the scan equation's innermost frame outside JAX is the team's line,
    never the recorder's own ``transforms.py`` (an absolute path of the machine, in the report)."""
    import collections
    import types

    from jax._src import source_info_util

    from optax_gate.recorder import replay

    frame = collections.namedtuple("frame", "file_name start_line")
    wrapper = os.path.join(os.path.dirname(replay.__file__), "transforms.py")
    monkeypatch.setattr(
        source_info_util, "user_frames", lambda traceback: [frame(wrapper, 261), frame("/team/train.py", 54)]
    )
    eqn = types.SimpleNamespace(source_info=types.SimpleNamespace(traceback=None))
    assert replay.frames_of(eqn, lambda name: "train.py" if name.endswith("/train.py") else None) == (
        "train.py:54",
        "train.py:54",
    )
