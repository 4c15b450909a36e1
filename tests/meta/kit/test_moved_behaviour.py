"""The ledger of moved behaviour (``optax_gate.kit.moved_behaviour``): at a
baseline in an entry's range the contract passes only when it fails as that
baseline does; at any other baseline the entry does nothing; the baseline's
version, not the installed one, decides (``pytester``, in a subprocess so the
entry-point plugin loads as in the gate)."""

import json
import re
from pathlib import Path
from typing import Any

import pytest

from optax_gate.gate.base.run_record import RunRecord
from optax_gate.kit import moved_behaviour

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[3]

SAMPLE = """
def test_fails_as_listed():
    raise ValueError("moved to 3 leaves")

def test_passes_now():
    assert True

def test_fails_otherwise():
    raise TypeError("something else")

def test_listed_for_other_baselines():
    raise ValueError("moved to 3 leaves")

def test_not_listed():
    raise ValueError("moved to 3 leaves")
"""

LEDGER = """
[[moved]]
contract = "test_sample.py::test_fails_as_listed"
optax = ">=0.2.8"
fails = "ValueError: moved to \\\\d+ leaves"
why = "0.2.8 refuses the tree"

[[moved]]
contract = "test_sample.py::test_passes_now"
optax = ">=0.2.8"
fails = "ValueError"
why = "0.2.8 refuses the tree"

[[moved]]
contract = "test_sample.py::test_fails_otherwise"
optax = ">=0.2.8"
fails = "ValueError"
why = "0.2.8 refuses the tree"

[[moved]]
contract = "test_sample.py::test_listed_for_other_baselines"
optax = "==0.2.7"
fails = "ValueError"
why = "0.2.7 only"
"""


def _outcomes(
    pytester: pytest.Pytester, baseline: str | None, monkeypatch: pytest.MonkeyPatch
) -> dict[str, tuple[str, str]]:
    pytester.makepyfile(test_sample=SAMPLE)
    (pytester.path / "ledger.toml").write_text(LEDGER)
    pytester.makeini("[pytest]\nmoved_behaviour = ledger.toml\n")
    if baseline is None:
        monkeypatch.delenv(moved_behaviour.BASELINE_ENV, raising=False)
    else:
        monkeypatch.setenv(moved_behaviour.BASELINE_ENV, baseline)
    log = pytester.path / "log.jsonl"
    pytester.runpytest_subprocess(f"--report-log={log}", "-p", "no:cacheprovider")
    out = {}
    for line in log.read_text().splitlines():
        r = json.loads(line)
        if r.get("$report_type") == "TestReport" and r["when"] == "call":
            out[r["nodeid"].split("::")[1]] = (r["outcome"], json.dumps(r.get("longrepr")))
    return out


def test_at_a_listed_baseline_a_contract_passes_only_when_it_fails_as_that_baseline_does(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    got = _outcomes(pytester, "0.2.8", monkeypatch)
    assert got["test_fails_as_listed"][0] == "passed"
    assert (
        got["test_passes_now"][0] == "failed"
        and "here it passed: the behaviour is no longer the baseline" in got["test_passes_now"][1]
    )
    assert got["test_fails_otherwise"][0] == "failed" and "failed otherwise" in got["test_fails_otherwise"][1]
    assert "TypeError: something else" in got["test_fails_otherwise"][1]
    assert got["test_listed_for_other_baselines"][0] == "failed"  # ==0.2.7 does not hold 0.2.8
    assert got["test_not_listed"][0] == "failed"


def test_at_the_pinned_baseline_the_entries_do_nothing(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 0.2.6 -> 0.2.8 gate gives both sides the baseline's 0.2.6: every
    contract keeps its 0.2.6 expectation, so what 0.2.8 moved shows."""
    got = _outcomes(pytester, "0.2.6", monkeypatch)
    assert {name: outcome for name, (outcome, _) in got.items()} == {
        "test_fails_as_listed": "failed",
        "test_passes_now": "passed",
        "test_fails_otherwise": "failed",
        "test_listed_for_other_baselines": "failed",
        "test_not_listed": "failed",
    }


def test_without_the_gates_variable_the_installed_optax_is_the_baseline(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from importlib import metadata

    installed = metadata.version("optax")
    got = _outcomes(pytester, None, monkeypatch)
    listed = moved_behaviour.Entry("x", ">=0.2.8", "ValueError", "w").applies(installed)
    assert got["test_fails_as_listed"][0] == ("passed" if listed else "failed")


@pytest.mark.parametrize(
    "text, message",
    [
        ('[[moved]]\ncontract = "a::b"\noptax = ">=0.2.8"\nfails = "x"\n', "needs exactly"),
        ('[[moved]]\ncontract = "a::b"\noptax = "0.2.8"\nfails = "x"\nwhy = "w"\n', "Invalid specifier"),
        ('[[moved]]\ncontract = "a::b"\noptax = ">=0.2.8"\nfails = "("\nwhy = "w"\n', "missing )"),
        (
            '[[moved]]\ncontract = "a::b"\noptax = ">=0.2.7"\nfails = "x"\nwhy = "w"\n'
            '[[moved]]\ncontract = "a::b"\noptax = ">=0.2.8"\nfails = "y"\nwhy = "w"\n',
            "ranges meet",
        ),
        ("[[other]]\nx = 1\n", "unknown tables"),
    ],
)
def test_a_malformed_ledger_is_refused_naming_the_entry(tmp_path: Path, text: Any, message: Any) -> None:
    path = tmp_path / "ledger.toml"
    path.write_text(text)
    with pytest.raises(
        ValueError, match=re.escape(message) if message != "Invalid specifier" else "(?i)invalid specifier"
    ):
        moved_behaviour.load(path)


def test_disjoint_ranges_of_one_contract_are_kept() -> None:
    path = ROOT / "does-not-exist.toml"
    assert moved_behaviour.load(path) == []
    entries = [moved_behaviour.Entry("a::b", "==0.2.7", "x", "w"), moved_behaviour.Entry("a::b", ">=0.2.8", "y", "w")]
    assert moved_behaviour.applicable(entries, "0.2.8")["a::b"].fails == "y"
    assert moved_behaviour.applicable(entries, "0.2.7")["a::b"].fails == "x"
    assert moved_behaviour.applicable(entries, "0.2.6") == {}


def test_the_projects_ledger_is_well_formed_and_names_contracts_that_exist() -> None:
    entries = moved_behaviour.load(ROOT / moved_behaviour.LEDGER)
    for entry in entries:
        path, _, rest = entry.contract.partition("::")
        function = rest.split("::")[-1].split("[")[0]
        assert (ROOT / path).is_file(), f"stale entry: {entry.contract} (no such file)"
        assert re.search(rf"def {re.escape(function)}\(", (ROOT / path).read_text()), f"stale entry: {entry.contract}"


def test_the_gate_passes_the_baseline_locks_optax_to_both_sides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``runner.run`` gives every pytest process the baseline lock's optax
    (``name==version``, or the version of a wheel built from source), whatever
    the side's own lock is."""
    from optax_gate.gate.inputs.options import EnvironmentOptions
    from optax_gate.gate.run import runner

    pinned = tmp_path / "pinned.txt"
    pinned.write_text("jax==0.12.0.1 \\\n    --hash=sha256:aa\noptax==0.2.8 \\\n    --hash=sha256:bb\n")
    built = tmp_path / "built.txt"
    built.write_text(
        "optax @ file:///w/cache/source/wheels/e699/optax-0.2.9.dev0-py3-none-any.whl \\\n    --hash=sha256:cc\n"
    )
    none = tmp_path / "none.txt"
    none.write_text("jax==0.12.0.1\n")
    assert [runner.baseline_optax(p) for p in (pinned, built, none, tmp_path / "gone.txt")] == [
        "0.2.8",
        "0.2.9.dev0",
        "",
        "",
    ]

    seen: list[dict[str, str]] = []

    def run_parts(call: Any, *a: Any, **k: Any) -> list[None]:
        seen.append(call.env)
        return [None]

    monkeypatch.setattr(runner, "run_parts", run_parts)
    env = EnvironmentOptions(project_root=ROOT, baseline_lock=pinned, python="python3", envs_dir=tmp_path)
    record = runner.run(
        tmp_path / "python", "candidate", tmp_path / "out", env, probed=({"optax": "0.2.9"}, None, [], {})
    )
    assert record.status == "not-verified"
    assert seen and seen[0][moved_behaviour.BASELINE_ENV] == "0.2.8"


# ------------------------------------------------------------------ rebaseline: what it accepts


def test_a_failures_first_line_becomes_an_expression_loose_in_numbers_and_addresses() -> None:
    from optax_gate.gate.judge import moved_ledger

    line = (
        "AssertionError: leaf 3 differs by 1.5e-07 (0.25 > 0.125) in float32 at <function f at 0x7f3a2b>; see (a)+[b]"
    )
    expr = moved_ledger.pattern(line + "\nsecond line")
    assert re.fullmatch(expr, line)
    assert re.fullmatch(
        expr, line.replace("1.5e-07", "2.25e-06").replace("0.25", "0.2500001").replace("0x7f3a2b", "0xdeadbeef")
    )
    for moved in (
        ("differs", "matches"),
        ("leaf 3", "leaf 4"),
        ("float32", "float64"),
    ):  # words, counts, dtypes literal
        assert not re.fullmatch(expr, line.replace(*moved)), moved


def _log(path: Path, reports: list[tuple[str, str, str]]) -> Path:
    lines = [
        json.dumps(
            {
                "$report_type": "TestReport",
                "nodeid": nid,
                "when": when,
                "outcome": outcome,
                "longrepr": {"reprcrash": {"message": f"ValueError: {nid} moved\nmore"}}
                if outcome == "failed"
                else None,
            }
        )
        for nid, when, outcome in reports
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_rebaseline_accepts_each_failure_narrows_what_moved_again_keeps_what_holds_and_refuses_errors(
    tmp_path: Path,
) -> None:
    from optax_gate.gate.judge import moved_ledger

    log = _log(
        tmp_path / "r.reportlog.jsonl",
        [
            ("t.py::new", "call", "failed"),
            ("t.py::again", "call", "failed"),
            ("t.py::holds", "call", "failed"),
            ("t.py::fine", "call", "passed"),
            ("t.py::broken_fixture", "setup", "failed"),
        ],
    )
    crashes = moved_ledger.crash_lines([log, tmp_path / "missing.jsonl"])
    assert crashes == {f"t.py::{n}": f"ValueError: t.py::{n} moved" for n in ("new", "again", "holds")}
    record = {
        "label": "rebaseline",
        "status": "ran",
        "contracts": {
            "t.py::new": {"outcome": "failed", "api": "optax.a"},
            "t.py::again": {"outcome": "failed", "api": "optax.a"},
            "t.py::holds": {"outcome": "failed", "api": "optax.b"},
            "t.py::fine": {"outcome": "passed", "api": "optax.b"},
            "t.py::broken_fixture": {"outcome": "error", "api": "optax.c", "detail": "fixture 'x' not found"},
        },
    }
    old = [
        moved_behaviour.Entry("t.py::again", ">=0.2.7", "TypeError", "0.2.7 raised TypeError"),
        moved_behaviour.Entry("t.py::holds", ">=0.2.7", "ValueError: .* moved", "0.2.7 moved it"),
    ]
    entries, done = moved_ledger.accept(old, RunRecord.from_json(record), crashes, "0.2.8", "0.12.0.1")
    assert (
        done.entries == ["t.py::again", "t.py::new"]
        and done.narrowed == ["t.py::again"]
        and done.kept == ["t.py::holds"]
    )
    assert (
        list(done.refused) == ["t.py::broken_fixture"]
        and "fixture 'x' not found" in done.refused["t.py::broken_fixture"]
    )
    by = {(e.contract, e.optax): e for e in entries}
    assert set(by) == {
        ("t.py::again", ">=0.2.7,<0.2.8"),
        ("t.py::again", ">=0.2.8"),
        ("t.py::holds", ">=0.2.7"),
        ("t.py::new", ">=0.2.8"),
    }
    assert by[("t.py::new", ">=0.2.8")].why == "rebaselined at optax 0.2.8, jax 0.12.0.1: ValueError: t.py::new moved"
    assert moved_behaviour.applicable(entries, "0.2.7")["t.py::again"].fails == "TypeError"
    assert re.search(
        moved_behaviour.applicable(entries, "0.2.8")["t.py::again"].fails, "E   ValueError: t.py::again moved"
    )

    ledger = tmp_path / "moved.toml"
    moved_ledger.write(ledger, entries)
    assert moved_behaviour.load(ledger) == entries  # read back whole: quotes, backslashes and all
    assert ledger.read_text().startswith("# Ledger of behaviour")


def _rebaseline(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    outcomes: dict[str, str],
    move: bool = False,
    lock_text: str | None = None,
    ledger_text: str = "",
) -> Any:
    """``rebaseline_flow.rebaseline`` with the environment and the contract
    run replaced: the run gives ``outcomes`` (node id -> passed/failed/error)."""
    from optax_gate.gate import rebaseline_flow
    from optax_gate.gate.inputs.options import EnvironmentOptions, RebaselineOptions
    from optax_gate.gate.install import environments
    from optax_gate.gate.reuse import baseline_snapshots
    from optax_gate.gate.run import runner

    project = tmp_path / "project"
    (project / "tests" / "contracts").mkdir(parents=True)
    if ledger_text:
        (project / moved_behaviour.LEDGER).write_text(ledger_text)
    lock = tmp_path / "lock-0.2.8.txt"
    lock.write_text(lock_text if lock_text is not None else "optax==0.2.8 \\\n    --hash=sha256:aa\n")
    seen: dict[str, Any] = {}

    def run(python: Any, label: Any, out_dir: Any, env: Any, how: Any = None, **kw: Any) -> Any:
        seen.update(baseline_lock=env.baseline_lock, extra_env=dict(how.extra_env))
        out_dir.mkdir(parents=True, exist_ok=True)
        _log(
            out_dir / f"{label}.reportlog.jsonl",
            [
                (nid, "call" if o != "error" else "setup", "failed" if o != "passed" else "passed")
                for nid, o in outcomes.items()
            ],
        )
        return RunRecord.from_json(
            {
                "label": label,
                "status": "ran",
                "versions": {"optax": "0.2.8", "jax": "0.12.0.1"},
                "contracts": {nid: {"outcome": o, "api": "optax.adam", "detail": "d"} for nid, o in outcomes.items()},
            }
        )

    monkeypatch.setattr(environments, "ensure", lambda *a, **k: tmp_path / "env" / "bin" / "python")
    monkeypatch.setattr(runner, "write_checkpoints", lambda *a, **k: "")
    monkeypatch.setattr(runner, "run", run)
    env = EnvironmentOptions(
        project_root=project,
        baseline_lock=project / "requirements-lock.txt",
        python="python3",
        envs_dir=tmp_path / "envs",
        cache_dir=tmp_path / "cache",
    )
    code = rebaseline_flow.rebaseline(RebaselineOptions(environment=env, lock=lock, move=move, out=tmp_path / "out"))
    ledger = project / moved_behaviour.LEDGER
    return code, (moved_behaviour.load(ledger) if ledger.exists() else None), seen, lock, project, baseline_snapshots


def test_rebaseline_runs_at_the_locks_optax_and_writes_the_ledger_and_a_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, entries, seen, lock, project, snaps = _rebaseline(
        tmp_path,
        monkeypatch,
        {
            "tests/contracts/test_a.py::test_x": "failed",
            "tests/contracts/test_a.py::test_y": "passed",
            "tests/contracts/test_a.py::test_s": "skipped",
        },
    )
    assert code == 0
    assert [(e.contract, e.optax) for e in entries] == [("tests/contracts/test_a.py::test_x", ">=0.2.8")]
    assert seen["baseline_lock"] == lock and seen["extra_env"][snaps.RECORD] == "1"
    assert Path(seen["extra_env"][snaps.SNAPSHOT_DIR]) != project, (
        "without --move the committed snapshots were re-recorded"
    )
    assert not (project / "requirements-lock.txt").exists()
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "1 newly accepted" in summary and "| `optax.adam` | 1 |" in summary
    assert "3 contracts: 1 failed, 1 passed, 1 skipped." in summary
    assert "Skipped at this baseline, 1 contracts of 1 APIs" in summary and "- `optax.adam`: d" in summary  # the reason


def test_rebaseline_move_makes_the_lock_the_pinned_one_and_records_snapshots_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, entries, seen, lock, project, snaps = _rebaseline(
        tmp_path, monkeypatch, {"tests/contracts/test_a.py::test_x": "passed"}, move=True
    )
    assert code == 0 and entries == []
    assert (project / "requirements-lock.txt").read_text() == lock.read_text()
    assert Path(seen["extra_env"][snaps.SNAPSHOT_DIR]) == project


@pytest.mark.parametrize(
    "lock_text, said",
    [
        ("jax==0.12.0.1 \\\n    --hash=sha256:aa\n", "does not pin optax"),
        ("optax==0.2.8\n", "has no --hash"),
        (b"\xff\xfe\x00garbage", "is not a text file"),
        (None, "does not exist"),
        ("folder", "is not a file"),
    ],
)
def test_rebaseline_refuses_what_is_not_a_hashed_lock_of_optax_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], lock_text: Any, said: Any
) -> None:
    """rebaseline refuses, in one line and exit 2, what is not a hashed lock of optax: random bytes (no
    traceback, no gate-style report in reports/rebaseline), a missing file and a folder are each told what they
    are, not that they pin no optax; nothing is written."""
    from optax_gate.gate import rebaseline_flow
    from optax_gate.gate.inputs.options import EnvironmentOptions, RebaselineOptions

    lock = tmp_path / "lock.txt"
    if lock_text == "folder":
        lock.mkdir()
    elif isinstance(lock_text, bytes):
        lock.write_bytes(lock_text)
    elif lock_text is not None:
        lock.write_text(lock_text)
    env = EnvironmentOptions(project_root=tmp_path, baseline_lock=lock, python="python3", envs_dir=tmp_path / "envs")
    code = rebaseline_flow.rebaseline(RebaselineOptions(environment=env, lock=lock, move=False, out=tmp_path / "out"))
    err = capsys.readouterr().err
    assert code == 2 and said in err and "Traceback" not in err
    assert not (tmp_path / "out").exists() and not (tmp_path / "tests").exists(), "a refusal wrote something"


def test_rebaseline_names_what_it_could_not_accept_and_what_the_ledger_already_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    held = '[[moved]]\ncontract = "tests/contracts/test_a.py::test_held"\noptax = ">=0.2.8"\nfails = "x"\nwhy = "w"\n'
    code, entries, *_ = _rebaseline(
        tmp_path / "b",
        monkeypatch,
        {"tests/contracts/test_a.py::test_z": "error", "tests/contracts/test_a.py::test_held": "passed"},
        ledger_text=held,
    )
    assert code == 2 and [e.contract for e in entries] == ["tests/contracts/test_a.py::test_held"]
    summary = (tmp_path / "b" / "out" / "summary.md").read_text()
    assert "test_z" in summary and "1 already in it for this version and holding" in summary


#: The places that start pytest and do not pass the gate's baseline, and why none needs to.
_RUNS_WITHOUT_A_GATES_BASELINE = {
    "noxfile.py": "./noxw -s tests and gpu-parity run the contracts at the pinned baseline: the installed optax is the "
    "baseline",
    "src/optax_gate/mutants/__main__.py": "the mutants run at the pinned baseline: the installed optax is the baseline",
    "src/optax_gate/gate/upstream/pytest_run.py": "runs optax's own shipped tests, which the ledger does not list",
    "src/optax_gate/gate/run/pytest_process.py": "starts the process runner.run describes (PytestCall.env), its "
    "variables taken from runner.baseline_variables (checked below)",
}


def test_every_runner_of_contracts_passes_the_gates_baseline_optax() -> None:
    """Each module that starts pytest either takes ``$OPTAX_GATE_BASELINE_OPTAX`` from
    ``runner.baseline_variables`` (a side, a matrix cell, a bisection's commit) or is
    listed above with the reason it runs at the baseline itself: a new runner must choose."""
    starts_pytest = re.compile(r"""["']-m["'],\s*["']pytest["']|^\s*["']pytest["'],\s*$""", re.MULTILINE)
    files = [ROOT / "noxfile.py", *sorted((ROOT / "src").rglob("*.py"))]
    runners = {
        str(f.relative_to(ROOT)): f.read_text(encoding="utf-8")
        for f in files
        if starts_pytest.search(f.read_text(encoding="utf-8"))
    }
    assert {"src/optax_gate/gate/run/pytest_process.py", "src/optax_gate/gate/bisect/probe.py"} <= set(runners)
    runner = (ROOT / "src/optax_gate/gate/run/runner.py").read_text(encoding="utf-8")
    assert "baseline_variables(" in runner and "pytest_process.PytestCall(" in runner
    assert set(_RUNS_WITHOUT_A_GATES_BASELINE) <= set(runners), (
        "a listed module no longer starts pytest: drop it from the list"
    )
    for name, text in runners.items():
        if name not in _RUNS_WITHOUT_A_GATES_BASELINE:
            assert "baseline_variables(" in text, (
                f"{name} starts pytest without runner.baseline_variables (the gate's baseline optax)"
            )
