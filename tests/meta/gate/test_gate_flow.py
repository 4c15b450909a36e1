"""The gate's flow (``optax_gate.gate.gate_flow.gate``): a side that cannot be
installed or imported stops the gate before the other side runs a contract;
refused runs do not push complete runs out of ``--keep``; inputs refused by
their options (``--timeout``, ``--keep``) and extras a package does not define."""

import json
import subprocess
import time
from pathlib import Path
from typing import Any, cast

import pytest

from optax_gate.gate import cli, cli_parser
from optax_gate.gate.base.progress import Progress
from optax_gate.gate.base.run_record import RunRecord
from optax_gate.gate.inputs import validate
from optax_gate.gate.inputs.options import EnvironmentOptions, GateOptions
from optax_gate.gate.install import environments, extras
from optax_gate.gate.run import evidence, pytest_process, runner
from tests.meta.support.gate_cli import gate_cli, uv_env
from tests.meta.support.late_phases import run_gate
from tests.meta.support.paths import LOCK, ROOT

PROBE_OK: Any = ({"python": "3.12", "optax": "0.2.6"}, None, [], {})


@pytest.mark.parametrize("stage", ["install", "import"])
@pytest.mark.parametrize("failing", ["baseline", "candidate"])
def test_a_side_that_cannot_install_or_import_stops_the_gate_before_any_contract_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], failing: Any, stage: Any
) -> None:
    built, ran = [], []

    def side_of(lock: Any) -> Any:
        return "candidate" if Path(lock).name == "candidate-lock.txt" else "baseline"

    def ensure(folder: Any, lock: Any, *args: Any, **kwargs: Any) -> Any:
        built.append(side_of(lock))
        if stage == "install" and side_of(lock) == failing:
            raise environments.EnvironmentFailure("install", "no matching distribution for optax==9.9.9")
        return tmp_path / side_of(lock) / "bin" / "python"

    def probe(python: Any) -> Any:
        if stage == "import" and python.parent.parent.name == failing:
            return {"python": "3.12"}, "ImportError: cannot import name 'nnx'", [], {}
        return PROBE_OK

    monkeypatch.setattr(environments, "ensure", ensure)
    monkeypatch.setattr(runner, "probe", probe)
    monkeypatch.setattr(runner, "write_checkpoints", lambda *a, **k: "")
    monkeypatch.setattr(pytest_process, "run_pytest", lambda *a, **k: ran.append(a[0].name))
    out = tmp_path / "out"
    code = cli.main(
        ["gate", "--candidate-lock", str(LOCK), "--out", str(out), "--cache-dir", str(tmp_path / "cache"), "--no-speed"]
    )
    other = "candidate" if failing == "baseline" else "baseline"
    assert code == 2
    assert ran == [], "a contract run started although one side cannot be installed or imported"
    if failing == "baseline" and stage == "install":
        assert built == ["baseline"], "the candidate was built although the baseline cannot be installed"
    report = json.loads((out / "not-judged.json").read_text())  # stopped before both sides ran: judged nothing
    assert not (out / "report.json").exists()
    cause = "install failed: no matching distribution" if stage == "install" else "import failed: ImportError"
    assert cause in report[failing]["reason"]
    assert report[other]["reason"] == f"not run: the {failing} could not be installed or imported"
    assert f"{failing} cannot be installed or imported, so the {other} is not run" in capsys.readouterr().err


def test_refused_runs_do_not_push_complete_runs_out_of_keep(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_gate(tmp_path, extra=["--keep", "1"]).returncode == 0
    complete = (out / evidence.LATEST).resolve()
    for _ in range(2):
        refused = run_gate(tmp_path, extra=["--keep", "1", "--usage", str(tmp_path / "missing")])
        assert refused.returncode == 2 and "does not exist" in refused.stderr
    assert (out / evidence.LATEST).resolve() == complete, "a refused run replaced the complete one as latest"
    refused = (out / evidence.NOT_JUDGED_LINK).resolve()
    assert (refused / evidence.NOT_JUDGED).read_text().startswith("refused: --usage")
    assert sorted((out / "runs").iterdir()) == sorted([complete, refused]), "a complete run was pruned for refused ones"
    assert run_gate(tmp_path, extra=["--keep", "1"]).returncode == 0
    assert sorted((out / "runs").iterdir()) == sorted([(out / evidence.LATEST).resolve(), refused])


@pytest.mark.parametrize(
    ("option", "value"), [("--timeout", "0"), ("--timeout", "-5"), ("--timeout", "nan"), ("--keep", "0")]
)
def test_a_time_limit_or_keep_below_one_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: Any, value: Any
) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["gate", "optax==0.2.8", option, value, "--out", str(tmp_path / "out")])
    assert exc.value.code == 2 and f"argument {option}: must be" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def _fake_wheel(extras_defined: Any) -> Any:
    def run_uv(stage: Any, args: Any, timeout: Any) -> Any:
        target = Path(args[args.index("--target") + 1])
        name, version = args[-1].split("==")
        info = target / f"{name}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
            + "".join(f"Provides-Extra: {e}\n" for e in extras_defined)
        )
        return ""

    return run_uv


def test_an_extra_the_package_does_not_define_is_refused_naming_the_defined_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(environments, "run_uv", _fake_wheel(["docs", "test"]))
    with pytest.raises(
        validate.InvalidInput, match=r"optax 0\.2\.6 defines no extra named 'examples' \(its extras: docs, test\)"
    ):
        extras.check(["jax==0.11.2", "optax[examples]==0.2.6"], LOCK, "python3")
    extras.check(["optax[Docs]==0.2.6"], LOCK, "python3")  # names compared as PEP 685 normalises them
    monkeypatch.setattr(environments, "run_uv", _fake_wheel([]))
    with pytest.raises(validate.InvalidInput, match=r"\(its extras: none\)"):
        extras.check(["optax[docs]"], LOCK, "python3")


@pytest.mark.skipif(uv_env() is None, reason="needs uv: run ./noxw once (it installs uv into .noxw/)")
def test_an_unknown_extra_is_refused_before_any_environment_is_built(tmp_path: Path) -> None:
    out = tmp_path / "out"
    status, _stdout, stderr, _seconds = gate_cli(
        "optax[examples]==0.2.6", "--envs-dir", str(tmp_path / "envs"), out=out, env=uv_env(), timeout=300
    )
    assert status == 2 and "defines no extra named 'examples' (its extras: " in stderr and "Traceback" not in stderr
    assert not (tmp_path / "envs").exists()
    run = (out / evidence.NOT_JUDGED_LINK).resolve()
    assert (run / evidence.NOT_JUDGED).exists() and not (run / "candidate-lock.txt").exists()
    assert "defines no extra named 'examples'" in json.loads((out / "not-judged.json").read_text())["reasons"][0]


def test_the_progress_total_is_known_once_for_both_pytest_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The single-device process collects 10 contracts, the multi-device one 4:
    every progress call says 14, and the multi-device contracts run only once
    the single-device process has ended (its go file)."""
    from optax_gate.gate.run import devices, outcomes

    calls, events = [], []

    def fake_pytest(call: Any, timeout: Any, on_progress: Any, stop: Any = None) -> Any:
        folder, env = call.folder, call.env
        if folder == devices.MULTIDEVICE_DIR:
            on_progress(0, 0)  # still collecting
            on_progress(0, 4)
            go = Path(env["OPTAX_GATE_GO"])
            deadline = time.monotonic() + 10
            while not go.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
            events.append("multi-device contracts run")
            on_progress(2, 4)
            return pytest_process.Part(folder, 0, "", outcomes.ReportLog(), (4, 4))
        time.sleep(0.2)  # collects longer than the multi-device process
        on_progress(0, 10)
        on_progress(6, 10)
        events.append("single-device process ended")
        return pytest_process.Part(folder, 0, "", outcomes.ReportLog(), (10, 10))

    monkeypatch.setattr(pytest_process, "run_pytest", fake_pytest)
    env = EnvironmentOptions(
        project_root=tmp_path, baseline_lock=tmp_path / "lock.txt", python="py", envs_dir=tmp_path, timeout=100
    )
    runner.run(Path("py"), "candidate", tmp_path, env, probed=PROBE_OK, on_progress=lambda d, t: calls.append((d, t)))
    assert events == ["single-device process ended", "multi-device contracts run"]
    assert calls and {t for _, t in calls} == {14}, calls
    assert calls[-1] == (14, 14) and [d for d, _ in calls] == sorted(d for d, _ in calls)


def test_a_later_pytest_process_writes_its_count_then_waits_for_its_go_file(tmp_path: Path) -> None:
    """The plugin's side of the fixed total (``$OPTAX_GATE_GO``), on a real pytest run."""
    import os
    import sys

    (tmp_path / "test_one.py").write_text(
        "import pathlib, pytest\nfrom optax_gate.kit import guides\n\n"
        "@pytest.mark.contract(api='optax.sgd', guide=guides.SGD_STEP)\n@pytest.mark.golden\n"
        f"def test_runs():\n    pathlib.Path({str(tmp_path / 'ran')!r}).write_text('x')\n"
    )
    count, go = tmp_path / "count", tmp_path / "go"
    env = {**os.environ, "OPTAX_GATE_PROGRESS": str(count), "OPTAX_GATE_GO": str(go)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_one.py"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not count.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert count.read_text().strip() == "1"
        time.sleep(1.0)
        assert proc.poll() is None and not (tmp_path / "ran").exists(), "the contracts ran before their go file"
        go.touch()
        output, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, output
    assert (tmp_path / "ran").exists()


def _help(*command: Any) -> Any:
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "optax_gate", *command, "--help"], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_help_has_no_rest_markup_and_every_command_says_its_exit_statuses() -> None:
    for command in ((), ("gate",), ("matrix",), ("compare",)):
        assert "``" not in _help(*command), f"reST markup in {command} --help"
    matrix = _help("matrix")
    assert "Discover the releases of optax" in matrix and "Exit status (matrix):" in matrix and "  2  " in matrix
    fail = _help("gate").split("  1  fail:", 1)[1].split("  2  ", 1)[0]
    for broken_row in (
        "--usage",
        "contracted API",
        "dependency removed",
        "--fail-on-new-deprecations",
        "--speed-budget",
    ):
        assert broken_row in fail, f"the exit status 1 line does not name {broken_row}"


def test_help_names_no_internal_module_and_explains_compare() -> None:
    for command in ((), ("gate",), ("matrix",), ("compare",)):
        assert "optax_gate." not in _help(*command), f"an internal module name in {command} --help"
    compare = _help("compare")
    assert (
        "Compare two run records" in compare
        and "Exit status (gate, compare):" in compare
        and "  2  not verified" in compare
    )


def test_gate_upstream_tests_hands_the_cross_run_both_sides_and_the_environment_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``gate --upstream-tests``: the cross-run gets both sides' site-packages and interpreters, the
    results cache's folder, the contract timeout and each side's JAX variables, and its section goes
    into the report; a side that did not run leaves it out."""
    from optax_gate.gate import assemble, gate_flow
    from optax_gate.gate.inputs import options as opts
    from optax_gate.gate.upstream import upstream_tests

    got: list[tuple[Any, Any, Any]] = []

    def cross_run(sites: Any, pythons: Any, options: Any, say: Any) -> dict[str, int]:
        got.append((sites, pythons, options))
        return {"x": 1}

    monkeypatch.setattr(upstream_tests, "cross_run", cross_run)
    monkeypatch.setattr(assemble, "with_upstream_tests", lambda report, section: report.update(upstream_tests=section))
    env = opts.EnvironmentOptions(
        project_root=tmp_path,
        baseline_lock=tmp_path / "lock.txt",
        python="py",
        envs_dir=tmp_path,
        cache_dir=tmp_path / "cache",
        timeout=77,
    )
    options = opts.GateOptions(
        environment=env,
        candidate=opts.CandidateOptions(),
        speed=opts.SpeedOptions(False, 3),
        scope=opts.ScopeOptions(),
        bisect=opts.BisectOptions(),
        team_run=opts.TeamRunOptions(),
        upstream_tests=True,
    )
    learned = gate_flow.Learned(pythons=(Path("b/python"), Path("c/python")), jax_envs=({"J": "b"}, {"J": "c"}))
    records = (
        RunRecord("baseline", "ran", fields={"site_packages": "b/site"}),
        RunRecord("candidate", "ran", fields={"site_packages": "c/site"}),
    )
    report: Any = {}
    gate_flow.upstream_cross_run(report, records, options, learned, Progress())
    ((sites, pythons, given),) = got
    assert sites == {"baseline": Path("b/site"), "candidate": Path("c/site")}
    assert pythons == {"baseline": Path("b/python"), "candidate": Path("c/python")}
    assert given == upstream_tests.CrossRunOptions(
        tmp_path / "cache", 77, {"baseline": {"J": "b"}, "candidate": {"J": "c"}}
    )
    assert report == {"upstream_tests": {"x": 1}}
    gate_flow.upstream_cross_run(
        report := cast(Any, {}), (RunRecord("baseline", "not-verified"), records[1]), options, learned, Progress()
    )
    assert report == {} and len(got) == 1


def test_run_without_usage_takes_the_teams_code_from_its_run_dir(tmp_path: Path) -> None:
    """With ``--run`` and no ``--usage`` the team's code is its --run-dir's folder, and the console says so:
    without a scan of its code every broken surface row would count, failing a team whose run is bit for bit
    the same for rows no line of its code uses (for example ``optax.monte_carlo`` removed, the losses'
    keyword-only arguments)."""
    from optax_gate.gate import gate_inputs

    team = tmp_path / "team"
    team.mkdir()
    (team / "train.py").write_text("import optax\ntx = optax.sgd(0.1)\n")
    said: list[str] = []
    args = cli_parser.parse(["gate", "optax==0.2.8", "--run", "python train.py", "--run-dir", str(team)])
    checked = gate_inputs.check_inputs(_gate_options(args), said.append)
    assert checked.usage == (team.resolve(),) and checked.usage_scan is not None and checked.usage_scan.scanned == 1
    assert any(
        s.startswith(f"your code, taken from --run-dir {team.resolve()} (no --usage given): 1 of 1 file(s) scanned")
        for s in said
    ), said
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "model.py").write_text("import optax\n")
    args = cli_parser.parse(
        ["gate", "optax==0.2.8", "--run", "python train.py", "--run-dir", str(team), "--usage", str(tmp_path / "other")]
    )
    assert gate_inputs.check_inputs(_gate_options(args), said.append).usage == (
        tmp_path / "other",
    )  # --usage given: it decides
    assert (
        gate_inputs.check_inputs(_gate_options(cli_parser.parse(["gate", "optax==0.2.8"])), said.append).usage_scan
        is None
    )


def _gate_options(args: Any) -> GateOptions:
    """The parsed ``gate`` command line's options (``cli.options`` gives each command's own kind)."""
    from optax_gate.gate import cli

    options = cli.options(args)
    assert isinstance(options, GateOptions)
    return options
