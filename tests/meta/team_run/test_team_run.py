"""``gate --run``: the recorder of the team's run (``optax_gate.recorder``),
the first divergence (``optax_gate.gate.team_run.divergence``) and the verdict about
the team (``optax_gate.gate.team_run.recording``), on small team repositories in
``tests/meta/teams/`` (``tiny``: SGD with a jitted step; ``f32`` and
``mixed``: the two teams of docs/team-run.md).

The runs are real: the team's script runs in this test environment (the
baseline's jax and optax) under the recorder. A *candidate* is the same
interpreter behind a wrapper ``bin/python`` whose ``PYTHONPATH`` starts with a
folder holding a ``sitecustomize.py`` that *plants* a change into optax (its
``huber_loss`` made keyword-only, its ``sgd`` stepping 1.5 times further) and
then runs the recorder's own ``sitecustomize``.

``OPTAX_GATE_TEAM_RUN_PYTHON`` runs the on/off test with another interpreter
(a gate environment's): host callbacks inside a jitted program moved a float32
loss by 1 ULP under jax 0.12.0.1, not under the baseline's jax 0.11.2, so the
recorder's shadow programs are only put to the test there.
"""

import json
import os
import sys
from pathlib import Path
from typing import Any, cast

import pytest

from optax_gate.gate import assemble
from optax_gate.gate.base.run_record import RunRecord
from optax_gate.gate.judge import compare
from optax_gate.gate.report import markdown as report_markdown
from optax_gate.gate.report import team_run_output
from optax_gate.gate.team_code import scope
from optax_gate.gate.team_run import command as run_command
from optax_gate.gate.team_run import (
    divergence,
    ensemble,
    ensemble_cache,
    judging,
    leaves,
    recording,
    reused,
    run_inputs,
    signatures,
    team_files,
    trace,
)
from optax_gate.kit import tolerances
from tests.meta.support.team_runs import (
    PYTHON,
    call_event,
    candidate,
    leaf_record,
    line_of,
    npz_arrays,
    record,
    team,
    write_trace,
)


@pytest.mark.parametrize(
    "name, command", [("tiny", "python train.py 3 --out w.npy"), ("f32", "python train.py --steps 3 --out params.npz")]
)
def test_recording_on_and_off_gives_bit_identical_results(tmp_path: Path, name: Any, command: Any) -> None:
    """The team's results (its saved params, bit for bit, and its printed
    losses: 9 significant digits, exact for float32) are the same with the
    recorder on and off, a jitted training step included; and the recorder
    did record (its shadow's values of the step's Optax calls)."""
    results = {}
    for mode in ("off", "on"):
        folder = team(tmp_path / mode, name)
        proc = record(folder, command, folder / "trace" if mode == "on" else None)
        assert proc.returncode == 0, proc.stderr[-2000:]
        out = folder / ("w.npy" if name == "tiny" else "params.npz")
        results[mode] = (proc.stdout, out.read_bytes() if name == "tiny" else npz_arrays(out))
        if mode == "on":
            observed = trace.read(folder / "trace")
            assert any(o["phase"] == "run" and o["out"]["leaves"] and o["out"]["leaves"][0].get("n") for o in observed)
    assert results["on"] == results["off"]


def test_recording_under_jit_records_each_step_values(tmp_path: Path) -> None:
    """Under ``jit`` the step's Optax calls are recorded once at trace time
    (abstract) and once per step with their values (host callbacks of the
    shadow program): the last ``apply_updates`` result is the saved params,
    bit for bit; the update's values are SGD's -0.1 * grads."""
    import numpy as np

    folder = team(tmp_path, "tiny")
    proc = record(folder, "python train.py 3 --out w.npy", folder / "trace")
    assert proc.returncode == 0, proc.stderr[-2000:]
    observed = trace.read(folder / "trace")
    apply_site = line_of(folder, "optax.apply_updates(")
    traced = [o for o in observed if o["site"] == apply_site and o["phase"] == "trace"]
    runs = [o for o in observed if o["site"] == apply_site and o["phase"] == "run"]
    assert len(traced) == 1 and traced[0]["out"] is None
    assert len(runs) == 3
    last = runs[-1]["out"]["leaves"][0]
    assert last["dtype"] == "float32" and last["shape"] == [4]
    assert leaves.decode(last) == np.load(folder / "w.npy").tolist()
    update = next(o for o in observed if o["site"] == line_of(folder, "tx.update(") and o["phase"] == "run")
    grads, updates = leaves.decode(update["in"][0]), leaves.decode(update["out"]["leaves"][0])
    assert grads is not None and updates is not None
    assert updates == [float(np.float32(-0.1) * np.float32(g)) for g in grads]


def test_first_divergence_is_the_cause_and_later_calls_its_consequences(tmp_path: Path) -> None:
    """A candidate whose sgd steps 1.5 times further: the first divergence is
    the update of step 1 at its line (inputs identical, values beyond the
    budget): the cause; the results of the jitted step, both steps, follow
    as consequences, in execution order."""
    folder = team(tmp_path, "tiny")
    spec = run_command.RunSpec("python train.py 2", folder, 300)
    result: Any = recording.run(spec, (PYTHON, candidate(tmp_path, "sgd-further")), tmp_path)
    assert result["outcome"] == "diverged", result["reason"]
    update = line_of(folder, "tx.update(")
    assert (
        result["first"]["site"] == update
        and result["first"]["occurrence"] == 1
        and "values" in result["first"]["kinds"]
    )
    assert result["first"]["role"] == "cause"
    assert result["sites"] == [update]
    step = line_of(folder, "= step(params, state)")
    roles = [(d["site"], d["occurrence"], d["role"]) for d in result["divergences"]]
    # inside the jitted step, a call whose inputs already differ is not judged on its values (an inherited error);
    # the step's results, where the team gets them, are: both steps differ, as consequences of the update
    assert roles == [(update, 1, "cause"), (step, 1, "consequence"), (step, 2, "consequence")]


def test_a_run_within_the_budget_says_whether_it_is_bit_for_bit_the_same(tmp_path: Path) -> None:
    """A run within the budget says whether it is bit for bit the same, in the report and in report.json,
    since a team checking golden digests of its params needs to know (a float32 Adam team's params may move
    by up to 96 ULP per element under a new JAX). A candidate whose sgd learning rate is 1 ULP larger: the
    run is still "same" (within the budget), and the report says how many calls are not bit-identical, by
    how much, where; an identical candidate is "bit for bit the same"."""
    from optax_gate.gate.report import team_run_section as report_team_run

    folder = team(tmp_path, "tiny")
    spec = run_command.RunSpec(
        "python train.py 2 --eager", folder, 300
    )  # eager: the update's values are the program's own
    one_ulp = candidate(tmp_path, "sgd-one-ulp")
    drifted = recording.run(spec, (PYTHON, one_ulp), tmp_path / "drifted")
    assert drifted["outcome"] == "same", drifted["reason"] or drifted["divergences"]
    within = drifted["within_budget"]
    assert within["calls"] > 0 and 0 < within["max_ulps"] <= divergence.budget(1) and not within["shadow_only"], within
    assert line_of(folder, "tx.update(") in within["sites"], within
    text = "\n".join(report_team_run.section({"team_run": drifted, "findings": []}))
    assert f"but not bit for bit: {within['calls']} call(s)" in text and line_of(folder, "tx.update(") in text, text
    # jitted, the update drifts only inside the recorder's copy of the step (host callbacks fuse otherwise): the team's
    # own program, its kept results and its output, is bit for bit the same, and the report says so (the corpus'
    # nnx_mlp_adam read "not bit for bit" of a program whose every output was bit-identical)
    jitted = recording.run(
        run_command.RunSpec("python train.py 2", folder, 300), (PYTHON, one_ulp), tmp_path / "jitted"
    )
    if jitted["within_budget"]["calls"]:
        assert jitted["within_budget"]["shadow_only"] and jitted["within_budget"]["kept_max_ulps"] is None, jitted
        assert "every result your program gives is bit for bit the same" in "\n".join(
            report_team_run.section({"team_run": jitted, "findings": []})
        )
    same = recording.run(spec, (PYTHON, PYTHON), tmp_path / "same")
    assert same["outcome"] == "same" and same["within_budget"]["calls"] == 0, same["within_budget"]
    assert "every result is bit for bit the same" in "\n".join(
        report_team_run.section({"team_run": same, "findings": []})
    )


def test_an_exception_that_appears_in_the_candidate_breaks_the_run_at_its_line(tmp_path: Path) -> None:
    """The mixed-precision team passes huber_loss's delta positionally; a
    candidate where it is keyword-only raises TypeError there: the run broke,
    named at the huber_loss line, as the cause."""
    folder = team(tmp_path, "mixed")
    spec = run_command.RunSpec("python train.py --steps 2", folder, 300)
    result = recording.run(spec, (PYTHON, candidate(tmp_path, "huber-keyword-only")), tmp_path)
    huber = line_of(folder, "optax.huber_loss(")
    assert result["outcome"] == "broke", result["reason"]
    assert result["sites"] == [huber]
    cause = result["causes"][0]
    assert cause["kinds"][0] == "exception" and "TypeError" in cause["texts"][0]
    assert result["raised_at"] == huber
    assert "named_from" not in result  # named as the recorder names them (no ``name``)
    assert line_of(folder, "tx.update(") in result["not_in_candidate"]  # the candidate failed before its update


def test_a_run_that_is_not_deterministic_is_not_verified(tmp_path: Path) -> None:
    """Two baseline runs of a script seeded from the clock differ: not
    verified, naming the first call that differs."""
    folder = team(tmp_path, "tiny")
    spec = run_command.RunSpec("python train.py 1 --random", folder, 300)
    result = recording.run(spec, (PYTHON, PYTHON), tmp_path)
    assert result["outcome"] == "not-verified"
    # the data is a constant of the jitted step: its Optax calls' inputs differ already, so the step's result,
    # where the team gets it, is the first call that differs
    assert result["reason"].startswith(
        f"the team's run is not deterministic: its two baseline runs differ first at "
        f"{line_of(folder, '= step(params, state)')} jax.jit(step)(...): result values"
    )
    assert [r["label"] for r in result["runs"]] == ["baseline", "baseline-repeat"]  # the candidate is not run


def test_the_ulp_policy_is_the_kits() -> None:
    assert leaves.ELEMENTWISE == tolerances.ELEMENTWISE
    assert leaves.EPS == tolerances.EPS
    assert leaves.TINY == tolerances.TINY
    assert leaves.ENSEMBLE_FACTOR == tolerances.ENSEMBLE_FACTOR


def test_divergence_order_budget_and_roles_on_written_traces(tmp_path: Path) -> None:
    """Hand-written traces: a value 2 ULP off is within the budget (4 ULP
    for a first call); the first call beyond it (same inputs) is the cause;
    the params' apply_updates, whose input differs, a consequence; an update
    whose input differs is not judged on its values (an inherited error may
    grow there); a call made in the candidate only comes after them."""
    one = 1.0 + 2**-22  # 2 ULP above 1.0 in float32
    far = 1.0 + 2**-18  # 32 ULP
    base = [
        call_event("a.py:1", "optax.x", "call", leaf_record([1.0])),
        call_event("a.py:2", "optax.y", "call", leaf_record([2.0]), [leaf_record([1.0])]),
        call_event("a.py:3", "optax.apply_updates", "call", leaf_record([3.0]), [leaf_record([2.0])]),
        call_event("a.py:5", "optax.adam", "update", leaf_record([3.0]), [leaf_record([2.0])]),
    ]
    cand = [
        call_event("a.py:1", "optax.x", "call", leaf_record([one])),
        call_event("a.py:2", "optax.y", "call", leaf_record([2.0 * far]), [leaf_record([1.0])]),
        call_event("a.py:3", "optax.apply_updates", "call", leaf_record([3.5]), [leaf_record([2.0 * far])]),
        call_event("a.py:5", "optax.adam", "update", leaf_record([9.0]), [leaf_record([2.0 * far])]),
        call_event("a.py:4", "optax.w", "call", leaf_record([1.0])),
    ]
    result = divergence.compare(
        trace.read(write_trace(tmp_path / "b", base)), trace.read(write_trace(tmp_path / "c", cand))
    )
    rows = [(d["site"], d["role"], d["kinds"]) for d in result["divergences"]]
    assert rows == [
        ("a.py:2", "cause", ["values"]),
        ("a.py:3", "consequence", ["values"]),
        ("a.py:4", "consequence", ["one side only"]),
    ]
    assert result["first"]["site"] == "a.py:2" and result["sites"] == ["a.py:2"]
    assert 31 < result["first"]["max_ulps"] < 33


def _report(broken_api: str) -> Any:
    def record(outcome: Any) -> Any:
        return {
            "label": "x",
            "status": "ran",
            "versions": {},
            "contracts": {
                f"{broken_api}:golden": {
                    "api": broken_api,
                    "guide": "g",
                    "kind": "golden",
                    "outcome": outcome,
                    "detail": "AssertionError: x",
                }
            },
        }

    return compare.compare(RunRecord.from_json(record("passed")), RunRecord.from_json(record("failed")))


def _team(outcome: Any, causes: Any = ()) -> Any:
    return {
        "command": "python train.py",
        "run_dir": "/team",
        "outcome": outcome,
        "reason": "",
        "runs": [],
        "compared": 5,
        "differing": len(causes),
        "first": causes[0] if causes else None,
        "divergences": list(causes),
        "causes": list(causes),
        "sites": [c["site"] for c in causes],
        "raised_at": "",
    }


def test_verdict_is_about_the_team_run() -> None:
    """A broken contract on an API the run did not diverge at: PASS, the
    finding under "Optax changed elsewhere" (--fail-on all: FAIL). A run that
    diverges at a call of that API: FAIL, the finding is yours and "Your
    code" opens the report naming the line, what changed and the finding."""
    report = assemble.with_team_run(_report("optax.adam"), _team("same"))
    assert report["verdict"] == "pass" and report["findings"][0]["scope"] == "elsewhere"
    text = report_markdown.render(report)
    assert text.index("## Your code") < text.index(f"## {scope.ELSEWHERE_HEADING}")
    assert "computes the same" in text and "Your run does not diverge for these" in text
    assert "\n\n\n" not in text.split("## Your code")[0] + "## Your code", "two blank lines after the title"
    assert assemble.with_team_run(_report("optax.adam"), _team("same"), "all")["verdict"] == "fail"
    cause: Any = {
        "site": "train.py:7",
        "api": "optax.adam",
        "call": "optax.adam(...).update",
        "phase": "run",
        "occurrence": 1,
        "kinds": ["values"],
        "texts": ["result values: largest error 40 ULP (budget 4)"],
        "max_ulps": 40.0,
        "budget_ulps": 4,
        "role": "cause",
        "side": "both",
    }
    report = assemble.with_team_run(_report("optax.adam"), _team("diverged", [cause]))
    assert report["verdict"] == "fail" and report["findings"][0]["scope"] == "yours"
    assert report["reasons"][0].startswith("your run diverges at train.py:7")
    _validates(report)
    text = report_markdown.render(report)
    your_code = text[text.index("## Your code") :]
    assert "`train.py:7` `optax.adam(...).update`: result values: largest error 40 ULP" in your_code
    assert "[F1](#f1)" in your_code.splitlines()[4]
    from optax_gate.action import comment

    posted = comment.body(text, "https://example.org/report")  # the pull-request comment opens with it too
    assert posted.split("\n## ")[1].startswith("Your code") and "`train.py:7`" in posted


def test_a_run_not_verified_makes_the_gate_not_verified() -> None:
    team: Any = {
        **_team("not-verified"),
        "reason": "the team's run fails in the baseline (exit 1: RuntimeError: boom)",
        "runs": [
            {
                "label": "baseline",
                "exit": 1,
                "seconds": 1.0,
                "tail": "Traceback\nRuntimeError: boom\n",
                "log": "team-run-baseline.log",
            }
        ],
    }
    report = assemble.with_team_run(_report("optax.adam"), team)
    assert report["verdict"] == "not-verified"
    assert (
        report["reasons"][0] == "--run not verified: the team's run fails in the baseline (exit 1: RuntimeError: boom)"
    )
    text = report_markdown.render(report)
    assert "**Not verified**: the team's run fails in the baseline" in text
    assert "```\nTraceback\nRuntimeError: boom\n```" in text  # its output's tail


def test_the_action_run_input_becomes_gate_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """action.yml's ``run:`` reaches the gate as ``--run CMD`` (and not at all when empty)."""
    from optax_gate.action import run as action_run

    monkeypatch.setenv("INPUT_RUN", "python train.py --steps 3")
    args = action_run.gate_args(tmp_path)
    assert args[args.index("--run") + 1] == "python train.py --steps 3"
    monkeypatch.setenv("INPUT_RUN", "")
    assert "--run" not in action_run.gate_args(tmp_path)


def _validates(report: Any) -> None:
    """``report`` (its ``team_run`` included) validates against report.schema.json."""
    jsonschema = pytest.importorskip(
        "jsonschema", reason="jsonschema comes with the tools lock (requirements-tools.txt)"
    )
    schema = json.loads((Path(recording.__file__).parents[1] / "report" / "report.schema.json").read_text())
    jsonschema.validate(json.loads(json.dumps(report)), schema)
    bad = json.loads(json.dumps(report))
    bad["team_run"]["outcome"] = "fine"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


RUN_SCRIPTS = {
    "affected": "import optax\n\nprint(optax.scale(0.5)([2.0, -4.0]))\n",  # the tiny candidate's scale doubles
    "unaffected": "import optax\n\nprint(optax.clip(1.0)([3.0, -0.5]))\n",
}


@pytest.mark.parametrize("case", ["affected", "unaffected"])
def test_the_action_with_run_gives_a_verdict_about_the_team(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: Any
) -> None:
    """End to end through the action and the gate (support/action_fakes.py's fake
    environments: a tiny pure-Python optax whose candidate ``scale`` doubles;
    here their ``python`` runs anything else with the real interpreter and
    that optax): a team whose run calls ``scale`` gets FAIL naming its line
    first in report.md and the job summary; one whose run calls only ``clip``
    gets PASS, the broken ``scale`` contract under "Optax changed elsewhere"."""
    from tests.meta.support import action_fakes

    fake = action_fakes.FAKE_PYTHON.replace(
        'else:\n    sys.exit("fake python: unexpected " + " ".join(args))',
        "else:  # the team's command (gate --run): the real interpreter with the tiny optax\n"
        '    os.environ["PYTHONPATH"] = os.pathsep.join([os.environ.get("PYTHONPATH", ""), site])\n'
        "    os.execv({python!r}, [{python!r}, *args])",
    )
    assert fake != action_fakes.FAKE_PYTHON
    monkeypatch.setattr(action_fakes, "FAKE_PYTHON", fake)
    team = action_fakes.team_repo(tmp_path)
    (team / "train.py").write_text(RUN_SCRIPTS[case])
    proc, outputs = action_fakes.run_action(tmp_path, team, run="python train.py")
    report_md = Path(outputs["report"])
    report = json.loads(report_md.with_name("report.json").read_text())
    text, summary = report_md.read_text(), (tmp_path / "summary.md").read_text()
    scale = next(f for f in report["findings"] if f.get("api") == "optax.scale")
    if case == "affected":
        assert proc.returncode == 1 and outputs["verdict"] == "fail", proc.stdout + proc.stderr
        assert report["team_run"]["outcome"] == "diverged" and report["team_run"]["sites"] == ["train.py:3"]
        assert scale["scope"] == "yours"
        opening = text.split("\n## ", 2)[1]
        assert (
            opening.startswith("Your code")
            and "- `train.py:3` `optax.scale(...)(...)`: result[0]: 1.0 → 2.0" in opening
        )
        assert f"[F{scale['number']}](#f{scale['number']})" in opening
        assert "## Your code" in summary
    else:
        assert proc.returncode == 0 and outputs["verdict"] == "pass", proc.stdout + proc.stderr
        assert report["team_run"]["outcome"] == "same"
        assert scale["scope"] == "elsewhere" and "## Optax changed elsewhere" in text
        assert text.index("## Your code") < text.index("## Optax changed elsewhere")


def test_the_environment_of_the_command_has_absolute_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The gate knows its environments by paths relative to the project
    (``.nox/gate-envs/<hash>/bin/python``) but runs the team's command in --run-dir: PATH,
    VIRTUAL_ENV, PYTHONPATH and the trace folder must be absolute (otherwise the baseline runs
    the system python: 'No module named jax')."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "team" / "src").mkdir(parents=True)
    env = run_command.environment(Path(".nox/gate-envs/abc/bin/python"), Path("team"), Path("evidence/trace"))
    assert env["PATH"].split(os.pathsep)[0] == str(tmp_path / ".nox/gate-envs/abc/bin")
    assert env["VIRTUAL_ENV"] == str(tmp_path / ".nox/gate-envs/abc")
    assert env["PYTHONPATH"].split(os.pathsep) == [
        str(run_command.RECORDER_SITE),
        str(tmp_path / "team"),
        str(tmp_path / "team/src"),
    ]
    assert env["OPTAX_GATE_TRACE"] == str(tmp_path / "evidence/trace")


def test_an_affected_line_names_the_findings_that_speak_of_its_change() -> None:
    """The mixed-precision team's MultiSteps.init line: of the two findings
    on MultiSteps (optax 0.2.8 report), the state dtype change explains it,
    the float64 precision one does not; a failing run is named by its error
    line, not by JAX's note printed after it."""
    report: Any = {
        "findings": [
            {
                "number": 1,
                "change": "broken",
                "api": "optax.MultiSteps",
                "apis": ["optax.MultiSteps"],
                "cause": "float64 results have float32-sized errors: off by up to 4.3e-9 relative = 2e7 ULP of float64",
            },
            {
                "number": 2,
                "change": "changed",
                "api": "optax.MultiSteps",
                "apis": ["optax.MultiSteps"],
                "cause": "optimizer state bfloat16 → float32: `.acc_grads` 2 → 4 bytes per parameter",
            },
            {
                "number": 3,
                "change": "broken",
                "api": "optax.adam",
                "apis": ["optax.adam"],
                "cause": "state bfloat16 → float32",
            },
        ],
        "team_run": {
            "sites": ["train.py:34"],
            "causes": [
                {
                    "site": "train.py:34",
                    "api": "optax.MultiSteps",
                    "call": "optax.MultiSteps(...).init",
                    "max_ulps": None,
                    "texts": ["result.acc_grads['b']: dtype bfloat16 → float32"],
                }
            ],
        },
    }
    assert [line["findings"] for line in judging.affected(report, report["team_run"])] == [[2]]
    tail = (
        'Traceback (most recent call last):\n  File "train.py", line 21, in loss_fn\n'
        "TypeError: huber_loss() takes from 1 to 2 positional arguments but 3 were given\n"
        "--------------------\nFor simplicity, JAX has removed its internal frames from the traceback of the "
        "following exception.\n"
    )
    assert (
        run_command.exit_reason({"error": "", "exit": 1, "tail": tail})
        == "exit 1: TypeError: huber_loss() takes from 1 to 2 positional arguments but 3 were given"
    )


def test_run_inputs_are_refused_before_anything_runs(tmp_path: Path) -> None:
    """An empty --run, a --run-dir that does not exist (said so, not "is not a folder", for a typo) or is a
    file, a --run-dir without --run: refused (exit 2, with the reason)."""
    from optax_gate.gate.inputs import validate

    (tmp_path / "train.py").write_text("")
    for cmd, run_dir, said in (
        ("  ", None, "--run is empty"),
        ("python train.py", tmp_path / "nope", "nope does not exist"),
        ("python train.py", tmp_path / "train.py", "train.py is not a folder"),
        (None, tmp_path, "--run-dir is given without --run"),
    ):
        with pytest.raises(validate.InvalidInput, match=said):
            run_inputs.check(cmd, run_dir, 60)
    assert run_inputs.check(None, None, 60) is None
    assert run_inputs.check("python train.py", tmp_path, 60) == run_command.RunSpec(
        "python train.py", tmp_path.resolve(), 60
    )


@pytest.mark.timeout(600)  # two --run comparisons
def test_an_eager_training_loop_is_judged_at_its_updates_birth_and_its_params(tmp_path: Path) -> None:
    """The tiny team without jit, against the candidate whose sgd steps 1.5
    times further: step 1's update is the cause (its inputs identical), the
    params (apply_updates) of both steps are consequences. By the ULP budget
    alone (``--exact``) step 2's update, whose inputs already differ, is not
    judged on its values; against the run's own rounding noise (the ensemble
    reaches it) it is, and it is a consequence too."""
    folder = team(tmp_path, "tiny")
    update, apply = line_of(folder, "tx.update("), line_of(folder, "optax.apply_updates(")
    exact = run_command.RunSpec("python train.py 2 --eager", folder, 300, members=0)
    further = candidate(tmp_path, "sgd-further")
    result = recording.run(exact, (PYTHON, further), tmp_path / "exact")
    rows = [(d["site"], d["occurrence"], d["role"]) for d in result["divergences"]]
    assert rows == [(update, 1, "cause"), (apply, 1, "consequence"), (apply, 2, "consequence")]
    assert result["ensemble"] == {"members": 0, "used": False, "why": "--exact: the ULP budget alone"}
    spec = run_command.RunSpec("python train.py 2 --eager", folder, 300)
    result = recording.run(spec, (PYTHON, further), tmp_path / "noise")
    rows = [(d["site"], d["occurrence"], d["role"]) for d in result["divergences"]]
    assert [r for r in rows if r[2] == "cause"] == [(update, 1, "cause")]
    assert {(update, 2, "consequence"), (apply, 1, "consequence"), (apply, 2, "consequence")} <= set(rows)
    assert result["ensemble"]["used"] and result["ensemble"]["members"] == 3 and result["outcome"] == "diverged"


def test_an_explaining_finding_is_never_cut_inside_a_value_or_bracket() -> None:
    """An explaining finding in a "Your code" line is never sliced mid-parenthesis, as at 160 characters
    in "`.hyperparams` (scalars, no cost ; F6 ... (and"."""
    from optax_gate.gate.report import team_run_section as report_team_run

    cause = (
        "optimizer state bfloat16 → float32: `.inner_state[0].trace` 2 → 4 bytes per parameter; `.acc_grads` 2 → 4 "
        "bytes per parameter; `.hyperparams` (scalars, no cost per parameter)"
    )
    words = report_team_run.finding_words({"findings": [{"number": 5, "cause": cause}]}, [5])
    assert words.startswith("[F5](#f5) optimizer state bfloat16 → float32") and "…" in words, words
    assert words.count("(") == words.count(")"), words  # a cut closes its brackets (plain_text.cut)


def test_an_explaining_finding_leads_with_the_part_that_speaks_of_the_line() -> None:
    """The part of an explaining finding sharing the most words with the line leads, the parts sharing far
    fewer are counted, not said; a line sharing none keeps the finding's own order. For example the bfloat16
    team's line "acc_grads: dtype bfloat16 → float32" is explained by MultiSteps' part about the state dtype,
    not by its first part, "float64 results have float32-sized errors ..."."""
    from optax_gate.gate.report import team_run_section as report_team_run

    cause = (
        "float64 results have float32-sized errors: off by up to 4.3e-9 relative = 2e7 ULP of float64, allowed 8 to "
        "112 ULP; optimizer state bfloat16 → float32: `.acc_grads` 2 → 4 bytes per parameter; at corner "
        "`adam/bfloat16` "
        "the outcome differs"
    )
    report: Any = {"findings": [{"number": 1, "cause": cause}]}
    words = report_team_run.finding_words(report, [1], "result.acc_grads['w']: dtype bfloat16 → float32")
    assert words.startswith("[F1](#f1) optimizer state bfloat16 → float32: `.acc_grads`"), words
    # the float64 part, about other inputs, is counted for a bfloat16 line, not said
    assert "float64" not in words and words.endswith("(and 2 other changes of this finding)"), words
    assert report_team_run.finding_words(report, [1], "raises TypeError").startswith("[F1](#f1) float64 results"), words


def test_an_affected_line_names_the_commit_the_bisection_found() -> None:
    """With --bisect, a "Your code" line says which upstream commit changed it (issue 26: "the contracts and
    commits that explain it"), not only the finding: a found commit by its short sha and subject, a range by
    its size; a finding that was not bisected adds nothing."""
    from optax_gate.gate.report import team_run_section as report_team_run

    commit = {
        "sha": "7a58a58f" + "0" * 32,
        "short": "7a58a58f",
        "subject": "MultiSteps: accumulate in float32 (#1234)",
        "pr": 1234,
        "pr_url": "https://github.com/google-deepmind/optax/pull/1234",
        "url": "https://github.com/google-deepmind/optax/commit/7a58a58f",
        "date": "2025-10-02T00:00:00+00:00",
    }
    report: Any = {
        "findings": [
            {
                "number": 5,
                "cause": "optimizer state bfloat16 → float32",
                "bisect": [{"status": "found", "package": "optax", "commits": [commit]}],
            },
            {
                "number": 6,
                "cause": "keyword-only",
                "bisect": [{"status": "range", "package": "optax", "commits": [commit] * 12, "skipped": {}}],
            },
            {"number": 7, "cause": "other", "bisect": [{"status": "not-bisected", "reason": "no contract"}]},
        ]
    }
    words = report_team_run.finding_words(report, [5, 6, 7])
    assert "[F5](#f5) optimizer state bfloat16 → float32, changed by optax [`7a58a58f`]" in words, words
    assert "[F6](#f6) keyword-only, changed by optax one of 12 commits" in words, words
    assert "[F7](#f7) other;" not in words and words.endswith("[F7](#f7) other"), words


def test_only_the_findings_that_explain_a_divergence_are_the_teams() -> None:
    """Only the findings that explain a run's divergence are the team's. In the mixed team's 0.2.8 gate,
    whose run raises at huber_loss (delta keyword-only) and whose MultiSteps.init state turns float32,
    findings on those APIs that do not speak of what changed there (input checks on integer inputs;
    float64 precision) are not counted as broken contracts where the team's code goes: they are
    "elsewhere", saying the run calls that API but diverges there for another cause."""
    findings = [
        {
            "number": 1,
            "change": "broken",
            "api": "optax.huber_loss",
            "apis": ["optax.huber_loss", "optax.l2_loss"],
            "contracts": ["a"],
            "cause": "input checks now raise TypeError/ValueError instead of AssertionError: Expected the input to "
            "have a dtype",
        },
        {
            "number": 2,
            "change": "broken",
            "api": "optax.MultiSteps",
            "apis": ["optax.MultiSteps"],
            "contracts": ["b"],
            "cause": "float64 results have float32-sized errors: off by up to 4.3e-9 relative = 2e7 ULP of float64",
        },
        {
            "number": 3,
            "change": "broken",
            "api": "optax.huber_loss",
            "apis": ["optax.huber_loss"],
            "contracts": ["c"],
            "cause": "did not warn (DeprecationWarning); got ('delta', 'KEYWORD_ONLY', 1.0) at index 2, expected "
            "('delta', "
            "'POSITIONAL_OR_KEYWORD', 1.0); API surface: keyword-only (delta): delta (positional or keyword) "
            "→ delta (keyword-only)",
        },
        {
            "number": 4,
            "change": "changed",
            "api": "optax.MultiSteps",
            "apis": ["optax.MultiSteps"],
            "contracts": ["d"],
            "cause": "optimizer state bfloat16 → float32: `.acc_grads` 2 → 4 bytes per parameter",
        },
    ]
    causes: Any = [
        {
            "site": "train.py:34",
            "api": "optax.MultiSteps",
            "call": "optax.MultiSteps(...).init",
            "max_ulps": None,
            "role": "cause",
            "texts": ["result.acc_grads['b']: dtype bfloat16 → float32"],
        },
        {
            "site": "train.py:21",
            "api": "optax.huber_loss",
            "call": "optax.huber_loss(...)",
            "max_ulps": None,
            "role": "cause",
            "texts": [
                "raises TypeError: huber_loss() takes from 1 to 2 positional arguments but 3 were given",
                "no longer warns DeprecationWarning: only the first 2 arguments can be passed positionally "
                "additional args will become keyword-only soon",
            ],
        },
    ]  # the real run's texts (report.json recording.causes)
    report: Any = {"verdict": "fail", "reasons": [], "notes": [], "summary": {}, "contracts": [], "findings": findings}
    report = assemble.with_team_run(report, _team("broke", causes))
    scopes: Any = {f["cause"][:12]: f["scope"] for f in report["findings"]}
    assert scopes == {
        "input checks": "elsewhere",
        "float64 resu": "elsewhere",
        "did not warn": "yours",
        "optimizer st": "yours",
    }, scopes
    moved = next(f for f in report["findings"] if f["cause"].startswith("input checks"))
    assert "diverges there for another cause" in moved["scope_why"], moved
    assert report["verdict"] == "fail"


def test_the_failing_runs_output_leaves_out_the_recorders_frames() -> None:
    """The real candidate run's traceback showed two frames of optax_gate/recorder/hook.py between the
    team's huber_loss line and the TypeError: a reader took them for the gate's own failure."""

    tail = (
        "Traceback (most recent call last):\n"
        '  File "/src/team/train.py", line 21, in loss_fn\n'
        "    return optax.huber_loss(pred, y.astype(jnp.bfloat16), 1.0).mean()\n"
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        '  File "/x/src/optax_gate/recorder/hook.py", line 196, in wrapper\n'
        "    return call_event(api, kind, fn, args, kwargs, sys._getframe(1))\n"
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        '  File "/x/src/optax_gate/recorder/hook.py", line 165, in call_event\n'
        "    return _wrap_result(api, fn(*args, **kwargs))\n"
        "TypeError: huber_loss() takes from 1 to 2 positional arguments but 3 were given\n"
    )
    text = "\n".join(
        team_run_output.output_tail([{"label": "candidate", "tail": tail, "log": "team-run-candidate.log"}])
    )
    assert "recorder/hook.py" not in text and "_wrap_result" not in text, text
    assert 'train.py", line 21' in text and "TypeError: huber_loss()" in text
    assert "2 frame(s) left out" in text


def test_a_run_that_cannot_be_verified_stops_the_gate_before_the_contracts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The team's run comes first: when it cannot be verified (``--run "python nope.py"`` fails in the
    baseline), no contract runs, the gate says so at once (exit 2) and the run judged nothing (report.md
    keeps the last judged run)."""
    from tests.meta.support import action_fakes

    fake = action_fakes.FAKE_PYTHON.replace(
        'else:\n    sys.exit("fake python: unexpected " + " ".join(args))',
        "else:  # the team's command (gate --run): the real interpreter with the tiny optax\n"
        '    os.environ["PYTHONPATH"] = os.pathsep.join([os.environ.get("PYTHONPATH", ""), site])\n'
        "    os.execv({python!r}, [{python!r}, *args])",
    )
    monkeypatch.setattr(action_fakes, "FAKE_PYTHON", fake)
    team = action_fakes.team_repo(tmp_path)
    proc, outputs = action_fakes.run_action(tmp_path, team, run="python nope.py")
    assert proc.returncode == 2 and outputs["verdict"] == "not-verified", proc.stdout + proc.stderr
    report = json.loads(
        Path(outputs["report"]).with_name(Path(outputs["report"]).name.replace(".md", ".json")).read_text()
    )
    assert report["team_run"]["outcome"] == "not-verified"
    assert report["baseline"]["status"] != "ran" and report["candidate"]["status"] != "ran", (
        report["baseline"],
        report["candidate"],
    )
    assert report["baseline"]["reason"] == "not run: --run could not be verified, so no contract ran", report[
        "baseline"
    ]["reason"]


def test_a_kept_result_whose_inputs_already_differed_says_the_change_was_born_before_it(tmp_path: Path) -> None:
    """A kept result whose inputs already differed says so, not only "largest error 15.3 ULP", which reads as
    Optax's fault: for example a float32 team's jitted step whose params come out 15 ULP apart at the third
    step (budget 12) because JAX's random initialisation differs by 1 ULP, no Optax call differing."""
    two = 2.0 * (1.0 + 2**-22)  # 2 ULP
    far = 1.0 + 2**-18  # 32 ULP
    base = [call_event("t.py:9", "jax.jit(step)", "jax.jit(step)(...)", leaf_record([1.0]), [leaf_record([2.0])])]
    cand = [call_event("t.py:9", "jax.jit(step)", "jax.jit(step)(...)", leaf_record([far]), [leaf_record([two])])]
    result = divergence.compare(
        trace.read(write_trace(tmp_path / "b", base)), trace.read(write_trace(tmp_path / "c", cand))
    )
    (row,) = result["divergences"]
    assert row["kinds"] == ["values"] and any("inputs already differed by up to 2 ULP" in t for t in row["texts"]), row[
        "texts"
    ]
    same_in = [call_event("t.py:9", "jax.jit(step)", "jax.jit(step)(...)", leaf_record([far]), [leaf_record([2.0])])]
    (row,) = divergence.compare(
        trace.read(write_trace(tmp_path / "b2", base)), trace.read(write_trace(tmp_path / "c2", same_in))
    )["divergences"]
    assert not any("inputs already differed" in t for t in row["texts"]), row["texts"]


def test_a_site_of_the_run_is_named_as_usage_names_the_same_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A site of the run is named as ``--usage`` names the same line, from the folder the gate was started in:
    started from the tool's folder with ``--usage ../team --run ... --run-dir ../team``, a line is
    ``../team/train.py:34`` both in "Your code" and in the findings, never ``train.py:34`` in one of them."""
    from optax_gate.gate.inputs import typed_path, usage_files

    (tmp_path / "team").mkdir()
    (tmp_path / "tool").mkdir()
    monkeypatch.setenv(typed_path.INVOKED_FROM, str(tmp_path / "tool"))
    name = recording.user_names(tmp_path / "team")
    assert (
        name("train.py:34")
        == "../team/train.py:34"
        == f"{usage_files.display_name(tmp_path / 'team' / 'train.py', str(tmp_path / 'tool'))}:34"
    )
    diff = {
        "first": {"site": "train.py:34", "call": "x"},
        "divergences": [{"site": "train.py:34"}, {"site": "lib/m.py:2"}],
        "causes": [{"site": "train.py:34"}],
        "sites": ["train.py:34"],
        "compared": 3,
    }
    renamed = recording.renamed(diff, name)
    assert renamed["first"]["site"] == "../team/train.py:34" and renamed["sites"] == ["../team/train.py:34"]
    assert [d["site"] for d in renamed["divergences"]] == ["../team/train.py:34", "../team/lib/m.py:2"]
    assert renamed["causes"][0]["site"] == "../team/train.py:34" and renamed["compared"] == 3
    assert diff["sites"] == ["train.py:34"]  # the recorder's names are left as they were
    assert recording.renamed(diff, None) is diff
    monkeypatch.setenv(typed_path.INVOKED_FROM, str(tmp_path / "team"))
    assert (
        recording.user_names(tmp_path / "team")("train.py:34") == "train.py:34"
    )  # started in the team's folder: as before


def test_a_finding_elsewhere_keeps_no_surface_note_that_is_another_findings_cause() -> None:
    """A finding under "Optax changed elsewhere" (for example the mixed team's losses' input-check finding,
    --run) says the run diverges there for another cause and names the finding that explains it, never that
    cause's surface note ("your code: train.py:21 (API surface: breaks: delta is keyword-only in the
    candidate)"). The explaining finding keeps the surface's note and names the run's line, whose call
    (``.init``) is not the constructor's line its own call sites name (train.py:34 is tied to train.py:33)."""
    from optax_gate.gate.report import your_code_line

    note = "breaks: delta is keyword-only in the candidate"
    findings = [
        {
            "number": 1,
            "change": "broken",
            "api": "optax.huber_loss",
            "apis": ["optax.huber_loss", "optax.l2_loss"],
            "contracts": ["a"],
            "cause": "input checks now raise TypeError/ValueError instead of AssertionError: Expected the input to "
            "have a dtype",
            "your_code": ["train.py:21", "train.py:18", "nb.ipynb:code cell 2:3"],
            "your_code_notes": {"train.py:21": note},
        },
        {
            "number": 2,
            "change": "broken",
            "api": "optax.huber_loss",
            "apis": ["optax.huber_loss"],
            "contracts": ["c"],
            "cause": "did not warn (DeprecationWarning); got ('delta', 'KEYWORD_ONLY', 1.0) at index 2, expected "
            "('delta', "
            "'POSITIONAL_OR_KEYWORD', 1.0); API surface: keyword-only (delta): delta (positional or keyword) "
            "→ delta (keyword-only)",
            "your_code": ["train.py:21"],
            "your_code_notes": {"train.py:21": note},
        },
        {
            "number": 3,
            "change": "changed",
            "api": "optax.MultiSteps",
            "apis": ["optax.MultiSteps"],
            "contracts": ["d"],
            "cause": "optimizer state bfloat16 → float32: `.acc_grads` 2 → 4 bytes per parameter",
            "your_code": ["train.py:33"],
        },
    ]
    full = {"phase": "run", "occurrence": 1, "kinds": ["dtype"], "budget_ulps": 4, "side": "both"}
    causes: Any = [
        {
            "site": "train.py:34",
            "api": "optax.MultiSteps",
            "call": "optax.MultiSteps(...).init",
            "max_ulps": None,
            "role": "cause",
            "texts": ["result.acc_grads['b']: dtype bfloat16 → float32"],
            **full,
        },
        {
            "site": "train.py:21",
            "api": "optax.huber_loss",
            "call": "optax.huber_loss(...)",
            "max_ulps": None,
            "role": "cause",
            "texts": [
                "raises TypeError: huber_loss() takes from 1 to 2 positional arguments but 3 were given",
                "no longer warns DeprecationWarning: only the first 2 arguments can be passed positionally "
                "additional args will become keyword-only soon",
            ],
            **full,
        },
    ]
    for f in findings:
        f["text"] = f["cause"]
    report: Any = {**_report("optax.adam"), "findings": findings}
    report = assemble.with_team_run(
        report, {**_team("broke", causes), "called": ["train.py:18", "train.py:21", "train.py:33", "train.py:34"]}
    )
    _validates(report)
    by_cause = {f["cause"][:12]: f for f in report["findings"]}
    checks, delta, state = by_cause["input checks"], by_cause["did not warn"], by_cause["optimizer st"]
    assert checks["scope"] == "elsewhere" and delta["scope"] == "yours" and state["scope"] == "yours"
    line = your_code_line.suffix(checks)
    assert note not in line and "API surface" not in line, line
    assert (
        f"your run diverges here for another cause, explained by [F{delta['number']}](#f{delta['number']})" in line
    ), line
    assert note in your_code_line.suffix(delta)
    assert "**your run diverges** at `train.py:34 optax.MultiSteps(...).init`" in your_code_line.suffix(state)
    assert "your run diverges" not in your_code_line.suffix({**checks, "your_code_run": {}, "run_sites": []})
    # a line the run reaches without a difference, and one it does not reach, are said so too
    assert "`train.py:18` (your run calls it here and computes the same, up to its failure)" in line, (
        line
    )  # no line named
    assert "`nb.ipynb:code cell 2:3` (your run does not reach this line)" in line, line

    def fresh(f: Any) -> Any:
        return {
            **{k: v for k, v in f.items() if k not in ("scope", "scope_why", "your_code_run", "run_sites")},
            "your_code_notes": {"train.py:21": note},
        }

    old: Any = {**_report("optax.adam"), "findings": [fresh(checks), fresh(delta)]}
    old = assemble.with_team_run(
        old, _team("broke", causes)
    )  # a run recorded before its calls were: only where it diverges
    moved = next(f for f in old["findings"] if f["scope"] == "elsewhere")
    assert set(moved["your_code_run"]) == {"train.py:21"}, moved


def test_a_run_that_fails_in_the_baseline_names_the_folder_it_ran_in(tmp_path: Path) -> None:
    """The first try of --run from the project folder, the team's script elsewhere: "python: can't open file
    '<project>/train.py'" and "fix the command" — the reason now names the folder and --run-dir."""
    spec = run_command.RunSpec("python train.py", tmp_path, 60)
    result = recording.run(spec, (Path(sys.executable), Path(sys.executable)), tmp_path / "out")
    assert result["outcome"] == "not-verified"
    assert f"it ran in {tmp_path}: --run-dir sets the folder" in result["reason"], result["reason"]


REAL_READ = trace.read


def test_a_recorded_run_reused_from_another_folder_names_its_lines_as_usage_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """compare --team-run started from another folder than the gate: the run's lines kept the gate's names
    (``../../tmp/team/train.py:21``) while --usage named the same file ``team/train.py:21``, so no call site
    of a finding matched a line of the run. The recorded run's names are made anew from this folder."""
    from optax_gate.gate.inputs.typed_path import INVOKED_FROM

    (tmp_path / "project").mkdir()
    cause = {
        "site": "../team/train.py:21",
        "api": "optax.huber_loss",
        "call": "optax.huber_loss(...)",
        "phase": "run",
        "occurrence": 1,
        "kinds": ["exception"],
        "texts": ["raises TypeError"],
        "max_ulps": None,
        "budget_ulps": 4,
        "role": "cause",
        "side": "both",
    }
    team = {
        **_team("broke", [cause]),
        "raised_at": "../team/train.py:21",
        "named_from": str(tmp_path / "project"),
        "called": ["../team/train.py:9", "../team/train.py:21"],
        "reason": "your run fails in the candidate (exit 1: TypeError: x, raised at ../team/train.py:21)",
    }
    monkeypatch.setenv(INVOKED_FROM, str(tmp_path))
    named = reused.named_here(team)
    assert named["sites"] == ["team/train.py:21"] and named["causes"][0]["site"] == "team/train.py:21"
    assert named["first"]["site"] == "team/train.py:21" and named["raised_at"] == "team/train.py:21"
    assert named["called"] == ["team/train.py:9", "team/train.py:21"]
    assert named["reason"].endswith("raised at team/train.py:21)") and named["named_from"] == str(tmp_path)
    monkeypatch.setenv(INVOKED_FROM, str(tmp_path / "project"))
    assert reused.named_here(team) == team  # from the gate's own folder: as recorded
    # the gate records the folder its names are relative to (a run of recorded traces, the command not run)
    event = {**call_event("train.py:3", "optax.sgd", "optax.sgd(...).update", leaf_record([1.0])), "phase": "update"}
    monkeypatch.setattr(
        run_command,
        "run_once",
        lambda spec, python, label, folder, extra_env=None: {
            "label": label,
            "exit": 0,
            "timed_out": False,
            "error": "",
            "tail": "",
            "seconds": 0.1,
            "log": "x.log",
            "trace": write_trace(tmp_path / "traces" / label, [event]).name,
        },
    )
    monkeypatch.setattr(trace, "read", lambda folder: REAL_READ(tmp_path / "traces" / folder.name))
    spec = run_command.RunSpec("python train.py", tmp_path / "team", 60)
    result = recording.run(
        spec, (Path(sys.executable),) * 2, tmp_path / "out", name=recording.user_names(tmp_path / "team")
    )
    assert result["outcome"] == "same" and result["named_from"] == str(tmp_path / "project"), result
    assert result["called"] == ["../team/train.py:3"]  # where the run called Optax, named as the sites are


def test_the_files_the_command_writes_in_its_folder_are_named_kept_and_put_back(tmp_path: Path) -> None:
    """--run runs the team's command three times in its own folder: each run starts from the folder as
    it was, the folder is put back after each run, what a run wrote is kept in the run's evidence, and
    the report names the files. A command that saves its params (``--out params.npz``) never leaves
    the candidate's run's file over the team's own."""
    team_dir = tmp_path / "team"
    (team_dir / ".git").mkdir(parents=True)
    (team_dir / "keep.txt").write_text("mine")
    os.utime(team_dir / "keep.txt", ns=(1_000_000_000, 1_000_000_000))
    said: list[str] = []
    (team_dir / "data").mkdir()
    (team_dir / "data" / "old.txt").write_text("old")
    spec = run_command.RunSpec(
        "echo run >> out.txt; mkdir -p new/deep; echo n > new/deep/n.txt; echo x > .git/HEAD; echo y > "
        "keep.txt; rm -r data",
        team_dir,
        60,
    )
    result = recording.run(spec, (Path(sys.executable),) * 2, tmp_path / "out", said.append)
    assert result["outcome"] == "not-verified"  # no Optax call recorded: the gate stops after the first run
    assert result["wrote"] == {
        "files": ["data/old.txt", "keep.txt", "new/deep/n.txt", "out.txt"],
        "count": 4,
        "existed": ["data/old.txt", "keep.txt"],
        "kept": ["team-run-baseline-files"],
        "not_restored": [],
    }, result.get("wrote")
    assert (team_dir / "data" / "old.txt").read_text() == "old"  # deleted with its folder, put back
    assert (team_dir / "keep.txt").read_text() == "mine" and (team_dir / "keep.txt").stat().st_mtime_ns == 1_000_000_000
    assert sorted(p.name for p in team_dir.iterdir()) == [
        ".git",
        "data",
        "keep.txt",
    ]  # out.txt and new/ are gone from the folder
    assert (team_dir / ".git" / "HEAD").read_text() == "x\n"  # not looked at
    kept = tmp_path / "out" / "team-run-baseline-files"
    assert (kept / "out.txt").read_text() == "run\n" and (kept / "keep.txt").read_text() == "y\n"
    assert (kept / "new" / "deep" / "n.txt").read_text() == "n\n"
    assert not (tmp_path / "out" / "team-run-before").exists()  # the copies are removed once the runs are settled
    assert any(
        "wrote 4 file(s)" in s
        and "data/old.txt, keep.txt, new/deep/n.txt, …" in s
        and "it is so again" in s
        and "team-run-baseline-files" in s
        for s in said
    ), said
    from optax_gate.gate.report import team_run_section

    text = "\n".join(team_run_section.section({"team_run": result}))
    assert (
        "Your command wrote 4 file(s) in" in text and "`data/old.txt`, `keep.txt`, `new/deep/n.txt`, `out.txt`" in text
    ), text
    assert "the gate put it back after each: your own files are as they were" in text, text
    assert "`team-run-baseline-files/`" in text and "overwritten" not in text, text
    old = {
        **result,
        "wrote": {"files": ["keep.txt"], "count": 1, "existed": ["keep.txt"]},
    }  # a report of before 2026-12-02
    text = "\n".join(team_run_section.section({"team_run": old}))
    assert (
        "They now hold the baseline run's output" in text
        and "existed before the gate and were overwritten: `keep.txt`" in text
    )
    quiet = recording.run(run_command.RunSpec("true", team_dir, 60), (Path(sys.executable),) * 2, tmp_path / "out2")
    assert "wrote" not in quiet


def _resuming(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, team_dir: Any, interrupt_at: Any = None, traces: Any = "traces"
) -> Any:
    """A team run (run_once faked) whose command resumes from ckpt.npz when an earlier run wrote it: its
    step then computes from other inputs. Writes ckpt.npz in every run."""
    zeros, ones = leaf_record([0.0, 0.0]), leaf_record([1.0, 2.0])

    def run_once(spec: Any, python: Any, label: Any, folder: Any, extra_env: Any = None) -> Any:
        ckpt = team_dir / "ckpt.npz"
        leaf = (
            ones if ckpt.exists() and ckpt.read_text() in ("baseline", "baseline-repeat") else zeros
        )  # a run's own output
        (team_dir / "ckpt.npz").write_text(label)
        if label == interrupt_at:
            raise KeyboardInterrupt
        return {
            "label": label,
            "exit": 0,
            "timed_out": False,
            "error": "",
            "tail": "",
            "seconds": 0.1,
            "log": "x.log",
            "trace": write_trace(
                tmp_path / traces / label,
                [
                    {
                        **call_event("train.py:9", "jax.jit(step)", "jax.jit(step)(...)", leaf, inputs=[leaf]),
                        "phase": "call",
                    }
                ],
            ).name,
        }

    monkeypatch.setattr(run_command, "run_once", run_once)
    monkeypatch.setattr(trace, "read", lambda folder: REAL_READ(tmp_path / traces / folder.name))
    return run_command.RunSpec("python train.py --out ckpt.npz", team_dir, 60)


def test_a_command_that_resumes_from_its_own_output_starts_each_run_from_the_teams_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command that resumes from its own --out file starts each run from the folder as it was, so its
    second baseline run never reads what the first wrote (and is not "not deterministic"); a file too large
    to keep a copy of is the one case left, and the reason then names it."""
    team_dir = tmp_path / "team"
    team_dir.mkdir()
    result = recording.run(_resuming(tmp_path, monkeypatch, team_dir), (Path(sys.executable),) * 2, tmp_path / "o")
    assert result["outcome"] == "same", result["reason"]
    assert not (team_dir / "ckpt.npz").exists()
    assert (tmp_path / "o" / "team-run-candidate-files" / "ckpt.npz").read_text() == "candidate"
    assert (tmp_path / "o" / "team-run-baseline-files" / "ckpt.npz").read_text() == "baseline"
    assert not (tmp_path / "o" / "team-run-baseline-repeat-files").exists()
    assert result["wrote"]["kept"] == ["team-run-baseline-files", "team-run-candidate-files"]
    # a checkpoint of the team's too large to keep a copy of: it is overwritten, and a run reads the one before it
    (team_dir / "ckpt.npz").write_text("the team's own")
    monkeypatch.setattr(team_files, "KEPT_BYTES", 5)
    result = recording.run(
        _resuming(tmp_path, monkeypatch, team_dir, traces="traces2"), (Path(sys.executable),) * 2, tmp_path / "o2"
    )
    assert result["outcome"] == "not-verified" and "not deterministic" in result["reason"], result["reason"]
    assert (
        "your command wrote ckpt.npz in its folder, too large for the gate to put back between the runs"
        in result["reason"]
    )
    assert "e+36" not in result["reason"] and "more than 1e+12 ULP" in result["reason"], result["reason"]
    assert "(within the budget)" not in result["reason"], result["reason"]
    assert result["wrote"]["not_restored"] == ["ckpt.npz"] and (team_dir / "ckpt.npz").read_text() == "baseline-repeat"
    from optax_gate.gate.report import team_run_section

    text = "\n".join(team_run_section.section({"team_run": result}))
    assert "except 1 file(s) too large to keep a copy of (`ckpt.npz`): they hold the last run's output now" in text, (
        text
    )


def test_an_interrupted_team_run_puts_the_teams_folder_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    team_dir = tmp_path / "team"
    team_dir.mkdir()
    (team_dir / "ckpt.npz").write_text("the team's own")
    with pytest.raises(KeyboardInterrupt):
        recording.run(
            _resuming(tmp_path, monkeypatch, team_dir, interrupt_at="candidate"),
            (Path(sys.executable),) * 2,
            tmp_path / "o",
        )
    assert (team_dir / "ckpt.npz").read_text() == "the team's own"
    assert not (tmp_path / "o" / "team-run-before").exists()


def test_a_failing_pytest_command_is_named_by_its_cause_and_only_the_baseline_is_said_to_have_run(
    tmp_path: Path,
) -> None:
    """A failing ``--run "python -m pytest -x -q tests"`` is named by its cause, pytest's
    ``E   ModuleNotFoundError: No module named 'grain'`` line, not by pytest's own summary ("exit 1: ImportError
    while importing test module '…/data_test.py'.;"); a command traced in the baseline only says so, never
    "traced in both environments"."""
    tail = (
        "ImportError while importing test module '/team/tests/data_test.py'.\nHint: make sure your test modules\n"
        "Traceback:\ntests/data_test.py:3: in <module>\n    import grain\nE   ModuleNotFoundError: No module "
        "named 'grain'\n"
        "=========================== short test summary info ============================\n"
        "ERROR tests/data_test.py\n!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!\n"
    )
    row = {"label": "baseline", "exit": 1, "error": "", "tail": tail, "seconds": 2.0}
    assert run_command.exit_reason(row) == "exit 1: ModuleNotFoundError: No module named 'grain'"
    from optax_gate.gate.report import team_run_section

    team = {
        **_team("not-verified"),
        "reason": f"the team's run fails in the baseline ({run_command.exit_reason(row)})",
        "runs": [row],
    }
    text = "\n".join(team_run_section.section({"team_run": team}))
    assert "traced in the baseline only (the gate stopped there)" in text and "both environments" not in text, text


def test_a_surface_break_at_a_line_the_run_does_not_reach_is_the_teams() -> None:
    """A surface break at a line of the team's that the run never reaches is the team's: for example a helper
    the run never calls passing huber_loss's delta positionally. Its finding (joined to the contracts of the
    same cause) is not listed under "Optax changed elsewhere … do not set the verdict", and the verdict names
    the line, which the run does not reach."""
    finding = {
        "number": 1,
        "change": "broken",
        "api": "optax.huber_loss",
        "apis": ["optax.huber_loss"],
        "contracts": ["c"],
        "cause": "delta (parameter 3) is now keyword-only (was positional or keyword), default 1.0",
        "text": "x",
        "your_code": ["train.py:11", "train.py:20"],
        "your_code_notes": {
            "train.py:11": "breaks: delta is keyword-only in the candidate",
            "train.py:20": "passes delta by keyword",
        },
        "parts": [
            {"section": "contracts", "change": "broken", "cause": "x", "contracts": 1, "names": []},
            {"section": "surface", "change": "broken", "cause": "y", "contracts": 0, "names": ["optax.huber_loss"]},
        ],
    }
    other = {
        "number": 2,
        "change": "broken",
        "api": "optax.sgd",
        "apis": ["optax.sgd"],
        "contracts": ["d"],
        "cause": "y",
        "text": "y",
        "your_code": [],
    }  # elsewhere: the verdict's count then says where it counted
    report: Any = {**_report("optax.adam"), "findings": [dict(finding), other]}
    report = assemble.with_team_run(report, {**_team("same"), "called": ["train.py:20"]})
    f = report["findings"][0]
    assert f["scope"] == "yours" and f["breaks_unreached"] == ["train.py:11"], f
    assert report["verdict"] == "fail" and report["reasons"][0].startswith(
        "1 contract(s) broken at lines of your code that your run does not reach: 1 in F1 (breaks train.py:11)"
    ), report["reasons"]
    assert "where your code goes" not in report["reasons"][0]  # it would contradict the verdict
    _validates(report)
    alone = {
        **finding,
        "parts": [{"section": "contracts", "change": "broken", "cause": "x", "contracts": 1, "names": []}],
    }  # no surface part: the run decides
    report = {**_report("optax.adam"), "findings": [alone]}
    report = assemble.with_team_run(report, {**_team("same"), "called": ["train.py:20"]})
    assert report["findings"][0]["scope"] == "elsewhere" and report["verdict"] == "pass"


def test_a_run_that_failed_in_the_candidate_is_the_same_only_up_to_its_failure() -> None:
    """When the run fails in the candidate (the mixed team's run raises at huber_loss inside the jitted
    step, so the candidate never calls AdamW's update), a line it reached "computes the same, up to its
    failure" at the failing line, and a line the candidate's run never reached says that."""
    from optax_gate.gate.report import your_code_line

    finding = {
        "number": 1,
        "change": "changed",
        "api": "optax.adamw",
        "apis": ["optax.adamw"],
        "contracts": ["n"],
        "cause": "fewer non-finite outputs when a parameter is NaN",
        "text": "x",
        "your_code": ["train.py:33", "train.py:39"],
    }
    report: Any = {**_report("optax.adam"), "findings": [finding]}
    team: Any = {
        **_team("broke"),
        "raised_at": "train.py:21",
        "called": ["train.py:21", "train.py:33", "train.py:39"],
        "not_in_candidate": ["train.py:39"],
    }
    report = assemble.with_team_run(report, team)
    _validates(report)
    line = your_code_line.suffix(report["findings"][0])
    assert "`train.py:33` (your run calls it here and computes the same, up to its failure at `train.py:21`)" in line, (
        line
    )
    assert "`train.py:39` (your run fails before this line in the candidate)" in line, line


def test_the_gates_own_folders_in_the_teams_folder_are_never_put_back(tmp_path: Path) -> None:
    """The gate writes its evidence (the runs' traces and logs) while the command runs; with --run-dir a
    folder that holds the gate's output (the checkout the gate was started from, or --out inside the
    team's folder), the gate's own folders are never put back, which would move the traces away before
    they are read."""
    team_dir = tmp_path / "team"
    evidence, cache = team_dir / "reports" / "runs" / "r1" / "evidence", team_dir / "cache"
    evidence.mkdir(parents=True)
    cache.mkdir()
    (cache / "entry").write_text("old")
    spec = run_command.RunSpec(
        "echo run > out.txt; echo new > cache/entry; echo log > reports/runs/r1/gate.log",
        team_dir,
        60,
        not_watched=(team_dir / "reports", cache),
    )
    result = recording.run(spec, (Path(sys.executable),) * 2, evidence)
    assert result["wrote"]["files"] == ["out.txt"], result["wrote"]
    assert (evidence / "team-run-baseline.log").exists() and (evidence / "team-run-baseline").is_dir()
    assert (cache / "entry").read_text() == "new\n" and (team_dir / "reports" / "runs" / "r1" / "gate.log").exists()
    assert not (team_dir / "out.txt").exists()


def test_a_run_that_diverges_in_dtypes_only_says_every_value_is_the_same() -> None:
    """A run that diverges in dtypes only still fails, and the verdict and "Your code" say every value is
    the same and name the lines that compute bit for bit the same: for example a bfloat16 team (MultiSteps
    over inject_hyperparams(sgd)) whose accumulator's dtype changes while its updates and params come out
    bit for bit the same."""
    from optax_gate.gate.report import team_run_section

    init = {
        "site": "train.py:23",
        "call": "optax.MultiSteps(...).init",
        "api": "optax.MultiSteps",
        "phase": "call",
        "occurrence": 1,
        "role": "cause",
        "side": "both",
        "kinds": ["dtype"],
        "max_ulps": 0.0,
        "budget_ulps": 4,
        "texts": ["result.acc_grads['b']: dtype bfloat16 → float32"],
    }
    update = {
        **init,
        "site": "train.py:27",
        "call": "optax.MultiSteps(...).update",
        "role": "consequence",
        "kinds": ["arguments", "dtype"],
        "texts": ["argument 2 leaf 7: bfloat16[4] → float32[4]"],
    }
    team: Any = {
        **_team("diverged", [init]),
        "divergences": [init, update],
        "differing": 2,
        "called": ["train.py:21", "train.py:22", "train.py:23", "train.py:27", "train.py:28"],
        "within_budget": {"calls": 0, "max_ulps": 0.0, "sites": []},
    }
    report = assemble.with_team_run(_report("optax.MultiSteps"), team)
    assert report["verdict"] == "fail"  # the state's memory and its checkpoint change: still the team's to know
    assert report["reasons"][0].endswith("; in dtypes only: every value your run computes is the same"), report[
        "reasons"
    ]
    text = "\n".join(team_run_section.section(report))
    assert "**in dtypes only**: every differing call above computes the same values (0 ULP)" in text, text
    assert (
        "computes bit for bit the same at your other lines that call Optax: `train.py:21`, `train.py:22`, `train.py:28`"
        in text
    )
    # a value that differs, a call not bit-identical elsewhere, or a divergence not listed: no such claim
    valued = {**team, "divergences": [init, {**update, "kinds": ["values"], "max_ulps": 9.0}]}
    drift: Any = {**team, "within_budget": {"calls": 1, "max_ulps": 2.0, "sites": ["train.py:28"]}}
    unlisted = {**team, "differing": 60}
    for other in (valued, drift, unlisted):
        report = assemble.with_team_run(_report("optax.MultiSteps"), cast(Any, other))
        assert "in dtypes only" not in report["reasons"][0] and "in dtypes only" not in "\n".join(
            team_run_section.section(report)
        )
    text = "\n".join(team_run_section.section(assemble.with_team_run(_report("optax.MultiSteps"), drift)))
    assert (
        "your other lines that call Optax: `train.py:21`, `train.py:22`" in text
        and "`train.py:28`" not in text.split("other lines")[1]
    )
    assert judging.unchanged(unlisted) is None


def test_a_difference_born_before_any_optax_call_is_said_so_with_what_the_team_keeps(tmp_path: Path) -> None:
    """A difference born before any Optax call is said so (the first call that gives other results already
    gets other inputs), with how far the results the team keeps differ, so it does not read as Optax's
    arithmetic changing: for example a float32 AdamW team whose initial params come from jax.random (whose
    values changed in jax 0.12) has its largest difference, 42.1 ULP, inside an Optax update, and its
    params differ by 1.5 ULP."""
    from optax_gate.gate.report import team_run_section

    one = 1.0 + 2**-22  # 2 ULP above 1.0 in float32
    base = [
        call_event("train.py:18", "optax.l2_loss", "call", leaf_record([1.0]), [leaf_record([0.5])]),
        call_event("train.py:27", "optax.adamw", "update", leaf_record([2.0]), [leaf_record([1.0])]),
        call_event("train.py:28", "optax.apply_updates", "call", leaf_record([3.0]), [leaf_record([2.0])]),
    ]
    cand = [
        call_event("train.py:18", "optax.l2_loss", "call", leaf_record([one]), [leaf_record([0.5 * one])]),
        call_event("train.py:27", "optax.adamw", "update", leaf_record([2.0 * (1 + 2**-21)]), [leaf_record([one])]),
        call_event("train.py:28", "optax.apply_updates", "call", leaf_record([3.0 * one]), [leaf_record([2.0])]),
    ]
    result = divergence.compare(
        trace.read(write_trace(tmp_path / "b", base)), trace.read(write_trace(tmp_path / "c", cand))
    )
    within = result["within_budget"]
    assert result["differing"] == 0 and within["calls"] == 3, result
    assert within["first"] == {"site": "train.py:18", "call": "optax.l2_loss(...)", "inputs_differ": True}, within
    assert 1.9 < within["kept_max_ulps"] < 2.1 and within["max_ulps"] > within["kept_max_ulps"], within
    text = team_run_section.bits({"within_budget": within})
    assert "the difference is born before any Optax call: the first that gives other results, `train.py:18`" in text, (
        text
    )
    assert "from code that is not an Optax call (JAX, e.g. jax.random; the model; the data)" in text, text
    assert (
        "the results you keep (what your transformed functions return, the params an update gives) differ by "
        "at most 2 ULP" in text
    ), text
    born_here = [dict(e) for e in cand]
    born_here[0]["in"] = [leaf_record([0.5])]  # the same inputs: the first difference is the Optax call's own
    within = divergence.compare(
        trace.read(write_trace(tmp_path / "b2", base)), trace.read(write_trace(tmp_path / "c2", born_here))
    )["within_budget"]
    assert within["first"]["inputs_differ"] is False and "born before" not in team_run_section.bits(
        {"within_budget": within}
    )
    assert "born before" not in team_run_section.bits(
        {"within_budget": {"calls": 1, "max_ulps": 2.0, "sites": ["a.py:1"]}}
    )  # an older report


def _l2_loss_finding_at_18_and_20() -> dict[str, Any]:
    """A report whose one finding (``optax.l2_loss``'s input checks, broken) names the team's lines 18 and 20."""
    finding = {
        "number": 1,
        "change": "broken",
        "api": "optax.l2_loss",
        "apis": ["optax.l2_loss"],
        "contracts": ["c"],
        "cause": "input checks now raise TypeError",
        "text": "x",
        "your_code": ["train.py:18", "train.py:20"],
    }
    return {**_report("optax.adam"), "findings": [finding]}


def test_a_line_that_computes_the_same_within_the_budget_says_it_is_not_bit_for_bit() -> None:
    """A line whose calls compute the same within the ULP budget, but not bit for bit (listed so in "Your
    code"), says "within the ULP budget, not bit for bit"; a bit-identical line keeps "computes the
    same"."""
    from optax_gate.gate.report import your_code_line

    report: Any = _l2_loss_finding_at_18_and_20()
    team: Any = {
        **_team("same"),
        "called": ["train.py:18", "train.py:20"],
        "within_budget": {"calls": 2, "max_ulps": 3.0, "sites": ["train.py:18"]},
    }
    report = assemble.with_team_run(report, team)
    _validates(report)
    line = your_code_line.suffix(report["findings"][0])
    assert (
        "`train.py:18` (your run calls it here and computes the same within the ULP budget, not bit for bit)" in line
    ), line
    assert "`train.py:20` (your run calls it here and computes the same)" in line, line


def test_a_line_whose_calls_got_other_inputs_is_never_said_to_compute_the_same(tmp_path: Path) -> None:
    """A line whose calls got other inputs is never said to compute the same: the compared traces mark such a
    site (``inputs_differ_sites``) and the finding's line says its inputs already differ, as for a bfloat16
    MultiSteps team's loss line (``softmax_cross_entropy_with_integer_labels``, a finding "elsewhere") after the
    MultiSteps divergence; a line whose calls drift on the same inputs keeps "within the ULP budget"."""
    from optax_gate.gate.report import your_code_line

    one = 1.0 + 2**-22  # 2 ULP above 1.0 in float32
    base = [
        call_event("train.py:18", "optax.l2_loss", "call", leaf_record([1.0]), [leaf_record([0.5])]),
        call_event("train.py:20", "optax.l2_loss", "call", leaf_record([1.0]), [leaf_record([0.5])]),
    ]
    # train.py:18 gets other inputs (and gives a result 2 ULP off); train.py:20 the same inputs, a result 2 ULP off
    cand = [
        call_event("train.py:18", "optax.l2_loss", "call", leaf_record([one]), [leaf_record([0.5 * one])]),
        call_event("train.py:20", "optax.l2_loss", "call", leaf_record([one]), [leaf_record([0.5])]),
    ]
    within = divergence.compare(
        trace.read(write_trace(tmp_path / "b", base)), trace.read(write_trace(tmp_path / "c", cand))
    )["within_budget"]
    assert within["sites"] == ["train.py:18", "train.py:20"] and within["inputs_differ_sites"] == ["train.py:18"], (
        within
    )
    report: Any = _l2_loss_finding_at_18_and_20()
    team: Any = {**_team("same"), "called": ["train.py:18", "train.py:20"], "within_budget": within}
    report = assemble.with_team_run(report, team)
    _validates(report)
    assert report["findings"][0]["your_code_run"]["train.py:18"] == {"run": "inputs-differ"}
    line = your_code_line.suffix(report["findings"][0])
    assert "`train.py:18` (your run calls it here with inputs that already differ" in line, line
    assert (
        "`train.py:20` (your run calls it here and computes the same within the ULP budget, not bit for bit)" in line
    ), line


def test_every_site_of_a_compared_run_is_renamed_for_the_report(tmp_path: Path) -> None:
    """Every ``file:line`` string anywhere in ``team_run.renamed``'s result is renamed: with ``--run-dir``
    elsewhere than the folder the gate started in, the sites read ``../teamA/train.py:21``, and so does
    ``within_budget.inputs_differ_sites``, so the check that reads it matches them."""
    import re

    one = 1.0 + 2**-22
    base = [
        call_event("train.py:18", "optax.l2_loss", "call", leaf_record([1.0]), [leaf_record([0.5])]),
        call_event("train.py:20", "optax.sgd", "update", leaf_record([1.0]), [leaf_record([0.5])]),
    ]
    cand = [
        call_event("train.py:18", "optax.l2_loss", "call", leaf_record([one]), [leaf_record([0.5 * one])]),
        call_event("train.py:20", "optax.sgd", "update", leaf_record([3.0]), [leaf_record([0.5])]),
    ]
    diff = divergence.compare(
        trace.read(write_trace(tmp_path / "b", base)), trace.read(write_trace(tmp_path / "c", cand))
    )
    diff["called"] = ["train.py:18", "train.py:20"]
    assert diff["within_budget"]["inputs_differ_sites"] == ["train.py:18"] and diff["causes"], diff

    def strings(value: Any) -> Any:
        if isinstance(value, dict):
            return [s for v in value.values() for s in strings(v)]
        if isinstance(value, list):
            return [s for v in value for s in strings(v)]
        return [value] if isinstance(value, str) else []

    named = recording.renamed(diff, lambda site: f"../team/{site}")
    left = [s for s in strings(named) if re.fullmatch(r"[\w./-]+\.py:\d+", s) and not s.startswith("../team/")]
    assert left == [], left


def test_a_run_that_creates_more_files_than_are_watched_is_still_put_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The look after a run has no limit: it only counts what the run left, so a run that creates more
    files than the folder's watch limit is still put back: the team's files are never named "could not be
    put back" as deleted, and the new ones do not stay."""
    monkeypatch.setattr(team_files, "WATCHED_FILES", 3)
    team_dir = tmp_path / "team"
    team_dir.mkdir()
    for name in ("a.txt", "b.txt"):
        (team_dir / name).write_text(name)
    spec = run_command.RunSpec("for i in 1 2 3 4 5; do echo $i > out$i.txt; done; echo changed > a.txt", team_dir, 60)
    result = recording.run(spec, (Path(sys.executable),) * 2, tmp_path / "out")
    assert result["wrote"]["count"] == 6 and result["wrote"]["not_restored"] == [], result["wrote"]
    assert (
        sorted(p.name for p in team_dir.iterdir()) == ["a.txt", "b.txt"] and (team_dir / "a.txt").read_text() == "a.txt"
    )


@pytest.mark.timeout(600)  # three --run comparisons, 14 runs of the team's command
def test_a_candidate_that_only_rounds_otherwise_passes_against_the_runs_own_noise(tmp_path: Path) -> None:
    """The noise team (Adam on a tanh network until its loss is near 0) against a candidate whose tanh rounds one
    ULP up, Optax the same: by the ULP budget alone (``--exact``) its late losses read as a divergence; judged
    against the spread of three perturbed baseline runs it is rounding: the same, said with its numbers."""
    from optax_gate.gate.report import team_run_section as report_team_run

    folder = team(tmp_path, "noise")
    rounds = candidate(tmp_path, "tanh-one-ulp")
    command = "python train.py 120 --out params.npz"
    exact = recording.run(run_command.RunSpec(command, folder, 300, members=0), (PYTHON, rounds), tmp_path / "exact")
    assert exact["outcome"] == "diverged", exact.get("witnessed")
    result: Any = recording.run(
        run_command.RunSpec(command, folder, 300, cache=tmp_path / "cache"), (PYTHON, rounds), tmp_path / "noise"
    )
    assert result["outcome"] == "same", (result.get("witnessed"), result.get("first"))
    assert result["ensemble"]["used"] and result["ensemble"]["members"] == 3 and result["ensemble"]["reached"] > 0
    assert result["witness"]["output"]["within_budget"] > 0 and result["witness"]["files"]["within_budget"] == 1
    words = report_team_run.noise_words(result)
    assert (
        words.startswith("**Consistent with your run's own rounding noise**: largest deviation")
        and "3 perturbed baseline runs" in words
    )
    alone = result["isolated"]  # its Optax calls run alone on the baseline's inputs: the same on both sides
    assert alone["calls"] > 0 and alone["same"] == alone["calls"] and not alone["differ"], alone
    assert report_team_run.alone_words(result).startswith("**Optax computes the same on identical inputs**")
    said: list[str] = []
    again = recording.run(
        run_command.RunSpec(command, folder, 300, cache=tmp_path / "cache"),
        (PYTHON, rounds),
        tmp_path / "again",
        said.append,
    )
    assert again["ensemble"]["cached"] and again["outcome"] == "same"  # the ensemble's runs kept: not run again
    assert any("perturbed baseline runs kept from an earlier gate" in line for line in said), said
    assert not any(r["label"].startswith(recording.NOISE) for r in again["runs"])


@pytest.mark.timeout(600)  # seven runs of the team's command
def test_an_optax_change_behind_rounding_still_diverges_at_the_optax_call(tmp_path: Path) -> None:
    """The same rounding, and adam stepping 1.5 times further: the inputs of adam's update differ by rounding
    only (within the ensemble's spread), so the update is the cause, named at its line; the run diverges."""
    folder = team(tmp_path, "noise")
    both = candidate(tmp_path, "tanh-one-ulp-adam-further")
    result = recording.run(run_command.RunSpec("python train.py 120", folder, 300), (PYTHON, both), tmp_path / "run")
    assert result["outcome"] == "diverged" and result["ensemble"]["used"]
    assert line_of(folder, "tx.update(") in result["sites"], result["sites"]
    # run alone on the baseline's own inputs (identical by construction), the candidate's update computes something else
    assert line_of(folder, "tx.update(") in [r["site"] for r in result["isolated"]["differ"]], result["isolated"]


@pytest.mark.timeout(600)  # seven runs of the team's command
def test_an_optax_call_flax_makes_for_the_team_is_recorded_at_the_teams_line(tmp_path: Path) -> None:
    """A linen TrainState's ``apply_gradients`` calls ``tx.update`` inside Flax: the call is recorded at the team's
    ``state.apply_gradients`` line, said as made through Flax, and a change of adamw's weight-decay schedule is
    named there, as the cause."""
    folder = team(tmp_path, "corpus/linen_msgpack_wd_schedule")
    later = candidate(tmp_path, "adamw-decay-count")
    result = recording.run(run_command.RunSpec("python train.py", folder, 300), (PYTHON, later), tmp_path / "run")
    assert result["outcome"] == "diverged"
    line = line_of(folder, "state.apply_gradients(")
    assert line in result["sites"], result["sites"]
    cause = next(c for c in result["causes"] if c["site"] == line)
    assert cause["call"] == "optax.adamw(...).update (through flax.training.train_state.TrainState.apply_gradients)"
    # run alone on the baseline's own inputs, adamw's update decays by another schedule value
    said = [
        t for t in cause["texts"] if t.startswith("run alone on the baseline's own inputs, it computes something else")
    ]
    assert said and "ULP (budget 4)" in said[0], cause["texts"]


def test_the_ensemble_judges_each_element_against_its_own_spread_on_written_traces(tmp_path: Path) -> None:
    """Hand-written traces and two members: an element the members moved by d = 2**-20 is rounding up to 8x that
    (ensemble.FACTOR), beyond it a difference; an element they leave bit-identical keeps the ULP budget; a leaf
    whose one chaotic element moved by 1.0 does not widen its other elements; an integer (a count) that moved
    is never rounding."""
    base = [call_event("a.py:1", "optax.adam", "update", leaf_record([1.0, 2.0, 0.5]), [leaf_record([1.0])])]
    d = 2.0**-20  # 8 ULP of 1.0 in float32
    members = [[call_event("a.py:1", "optax.adam", "update", leaf_record([1.0 + d, 2.0, 1.5]), [leaf_record([1.0])])]]
    members.append(
        [call_event("a.py:1", "optax.adam", "update", leaf_record([1.0 - d / 2, 2.0, -0.5]), [leaf_record([1.0])])]
    )
    table = ensemble.spreads(
        trace.read(write_trace(tmp_path / "b", base)),
        [trace.read(write_trace(tmp_path / f"m{i}", m)) for i, m in enumerate(members)],
    )
    (entry,) = table.values()
    assert entry["out"][0] == [d, 0.0, 1.0] and entry["in"] == [None]

    def judged(values: list[float], name: str, dtype: str = "float32") -> dict[str, Any]:
        cand = [call_event("a.py:1", "optax.adam", "update", leaf_record(values, dtype), [leaf_record([1.0])])]
        return divergence.compare(
            trace.read(tmp_path / "b"), trace.read(write_trace(tmp_path / name, cand)), noise=table
        )

    within = judged([1.0 + 6 * d, 2.0, 0.5], "within")
    assert within["differing"] == 0 and within["within_budget"]["noise_ratio"] == 6.0, within["within_budget"]
    beyond = judged([1.0 + 10 * d, 2.0, 0.5], "beyond")
    assert beyond["differing"] == 1 and "the spread of its perturbed baseline runs" in beyond["first"]["texts"][0], (
        beyond["first"]
    )
    untouched = judged([1.0, 2.0 + 2**-18, 0.5], "untouched")  # 16 ULP where the members agree: the ULP budget (4)
    assert untouched["differing"] == 1 and "budget 4" in untouched["first"]["texts"][0], untouched["first"]
    assert judged([1.0, 2.0, 0.5 + 0.3], "chaotic")["differing"] == 0  # within the chaotic element's own spread
    plain = divergence.compare(trace.read(tmp_path / "b"), trace.read(tmp_path / "within"))
    assert plain["differing"] == 1  # the same candidate by the ULP budget alone (--exact)
    counts = [call_event("a.py:1", "optax.adam", "init", leaf_record([0], "int32"))]
    moved = [call_event("a.py:1", "optax.adam", "init", leaf_record([1], "int32"))]
    count_table = ensemble.spreads(
        trace.read(write_trace(tmp_path / "cb", counts)), [trace.read(write_trace(tmp_path / "cm", counts))]
    )
    (row,) = divergence.compare(
        trace.read(tmp_path / "cb"), trace.read(write_trace(tmp_path / "cc", moved)), noise=count_table
    )["divergences"]
    assert "values" in row["kinds"] and "0 → 1" in row["texts"][0]


def test_a_warning_alone_is_said_at_its_line_and_does_not_make_the_run_diverge(tmp_path: Path) -> None:
    """A DeprecationWarning new in the candidate at a call that computes the same: listed in ``warned``, not a
    divergence; with --fail-on-new-deprecations (``warnings_differ``) it is one."""
    from optax_gate.gate.report import team_run_section

    base = [call_event("a.py:7", "optax.global_norm", "call", leaf_record([2.0]), [leaf_record([1.0])])]
    cand = [{**base[0], "warnings": [{"category": "DeprecationWarning", "message": "use optax.tree.norm"}]}]
    b, c = trace.read(write_trace(tmp_path / "b", base)), trace.read(write_trace(tmp_path / "c", cand))
    result: Any = divergence.compare(b, c)
    assert result["differing"] == 0 and result["warned"] == [
        {"site": "a.py:7", "call": "optax.global_norm(...)", "texts": ["warns DeprecationWarning: use optax.tree.norm"]}
    ]
    (line,) = team_run_section.warned_lines(result)
    assert "`a.py:7`" in line and "does not set the verdict" in line and "--fail-on-new-deprecations" in line
    strict = divergence.compare(b, c, warnings_differ=True)
    assert strict["differing"] == 1 and strict["first"]["kinds"] == ["warning"] and not strict["warned"]


def test_a_structure_difference_says_where_and_both_forms() -> None:
    text = signatures.structure_change(
        "dict[opt](Optimizer[step=*, tx=MultiSteps(k=4)](*))", "dict[opt](Optimizer[step=*, tx=MultiSteps(k=8)](*))"
    )
    assert text == "at `…dict[opt](Optimizer[step=*, tx=MultiSteps(`: `k=4)](*))` → `k=8)](*))`"
    assert signatures.structure_change("a", "a") == ""


def test_an_optax_object_held_as_static_data_is_written_by_its_type_and_public_configuration() -> None:
    """Its private fields and functions change between releases without the team's program changing."""
    import types

    from optax_gate.recorder import values

    module = types.ModuleType("optax._src.wrappers")

    class MultiSteps:
        __module__ = "optax._src.wrappers"
        __qualname__ = "MultiSteps"

        def __init__(self, k: Any, private: Any) -> None:
            self.every_k = k
            self._opt = private
            self.update = lambda: None

    assert (
        module
        and values.plain(MultiSteps(4, object()))
        == values.plain(MultiSteps(4, "another inner"))
        == "MultiSteps(every_k=4)"
    )
    assert values.plain(MultiSteps(8, None)) == "MultiSteps(every_k=8)"


def test_an_unquoted_run_command_is_told_to_be_quoted() -> None:
    from optax_gate.gate.inputs import validate

    with pytest.raises(validate.InvalidInput, match=r'quote it, --run "python train.py --steps"'):
        run_inputs.refuse_unquoted("python", ["train.py", "--steps", "optax==0.2.8"], {"optax", "jax"})
    with pytest.raises(
        validate.InvalidInput, match=r'quote it, --run "python train.py"'
    ):  # the SPECs first, the command after
        run_inputs.refuse_unquoted("python", ["optax==0.2.8", "jax==0.12.0.1", "train.py"], {"optax", "jax"})
    run_inputs.refuse_unquoted("python train.py", ["optax==0.2.8"], {"optax"})  # quoted: nothing to say
    run_inputs.refuse_unquoted("python", ["optax==0.2.8"], {"optax"})  # a SPEC after a one-word command


def test_exact_without_run_and_a_run_dir_as_typed_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from optax_gate.gate.inputs import validate
    from optax_gate.gate.inputs.typed_path import user_path

    monkeypatch.chdir(tmp_path)
    with pytest.raises(validate.InvalidInput, match="--exact is given without --run"):
        run_inputs.check(None, None, 60, exact=True)
    with pytest.raises(validate.InvalidInput, match=r"--run-dir \.\./nope \(= .*nope\) does not exist"):
        run_inputs.check("python train.py", user_path("../nope"), 60)
    spec = run_inputs.check("python train.py", tmp_path, 60, exact=True)
    assert spec is not None and spec.members == 0


def test_a_donating_jitted_step_is_compared_by_value(tmp_path: Path) -> None:
    """``jax.jit(step, donate_argnums=0)``: its inputs are stored before the call donates them (no record-error)."""
    folder = tmp_path / "team"
    folder.mkdir()
    (folder / "train.py").write_text(
        "import jax, jax.numpy as jnp, optax\n"
        "tx = optax.sgd(0.1)\n"
        "def step(params, state):\n"
        "    grads = jax.grad(lambda p: optax.l2_loss(p['w'], jnp.ones(4)).sum())(params)\n"
        "    updates, state = tx.update(grads, state, params)\n"
        "    return optax.apply_updates(params, updates), state\n"
        "step = jax.jit(step, donate_argnums=(0, 1))\n"
        "params = {'w': jnp.zeros(4)}\n"
        "state = tx.init(params)\n"
        "for _ in range(3):\n"
        "    params, state = step(params, state)\n"
        "print(params['w'])\n"
    )
    result = recording.run(run_command.RunSpec("python train.py", folder, 300), (PYTHON, PYTHON), tmp_path / "run")
    assert result["outcome"] == "same", result["reason"]
    assert "record-error" not in result["compared_by"]["why"], result["compared_by"]


def test_an_unquoted_run_with_options_is_told_to_be_quoted_by_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    from optax_gate.gate import cli_parser

    with pytest.raises(SystemExit) as stop:
        cli_parser.parse(["gate", "optax==0.2.8", "--run", "python", "train.py", "--steps", "3"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and 'quote it, --run "python ..."' in err, err


def test_the_ensembles_key_leaves_out_the_gates_own_folders_in_the_teams_folder(tmp_path: Path) -> None:
    """A report written inside the team's folder (``--out`` there) does not make the kept ensemble stale; a change
    of the team's own files does."""
    folder = team(tmp_path, "tiny")
    report = folder / "gate-report"
    report.mkdir()
    spec = run_command.RunSpec("python train.py 3", folder, 300, not_watched=(report,))
    key = ensemble_cache.ensemble_key(spec, PYTHON)
    (report / "report.md").write_text("a report\n")
    assert ensemble_cache.ensemble_key(spec, PYTHON) == key
    (folder / "train.py").write_text((folder / "train.py").read_text() + "\n# changed\n")
    assert ensemble_cache.ensemble_key(spec, PYTHON) != key
