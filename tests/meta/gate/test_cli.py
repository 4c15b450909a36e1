"""The gate's command line fails closed (``optax_gate.gate.cli``): bad inputs
answer within seconds with exit 2, the reason on stderr and in the report;
every run writes into its own folder, which becomes current only when whole."""

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from optax_gate.gate import cli, cli_parser
from optax_gate.gate.base.run_record import RunRecord
from optax_gate.gate.install import environments
from optax_gate.gate.reuse import results_cache
from optax_gate.gate.run import evidence, pytest_process, runner
from tests.meta.support.gate_cli import (
    FAKE_CONTRACTS,
    fake_gate,
    gate_cli,
    latest_report,
    not_judged_report,
    snapshot,
    uv_env,
    write_run,
)
from tests.meta.support.paths import LOCK, ROOT
from tests.meta.support.records import record


@pytest.mark.parametrize(
    ("candidate", "status", "verdict"),
    [
        (record(golden_a="passed"), 0, "pass"),
        (record(golden_a="failed"), 1, "fail"),
        (record("not-verified", "import failed: x"), 2, "not-verified"),
    ],
)
def test_compare_exit_status_matches_the_verdict(tmp_path: Path, candidate: Any, status: Any, verdict: Any) -> None:
    base = write_run(tmp_path / "b.json", record(golden_a="passed"))
    cand = write_run(tmp_path / "c.json", candidate)
    assert cli.main(["compare", base, cand, "--out", str(tmp_path / "out")]) == status
    assert json.loads((tmp_path / "out" / "report.json").read_text())["verdict"] == verdict
    assert (tmp_path / "out" / "report.md").read_text().startswith(f"# Optax upgrade gate: {verdict.upper()}")


def test_an_install_failure_is_reported_not_verified(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: Any, **kwargs: Any) -> None:
        raise environments.EnvironmentFailure("install", "no matching distribution for jaxlib==9.9")

    def resolved(req_in: Any, output: Any, *args: Any, **kwargs: Any) -> Any:
        shutil.copyfile(LOCK, output)
        return output

    monkeypatch.setattr(environments, "ensure", fail)
    monkeypatch.setattr(environments, "compile_lock", resolved)
    code = cli.main(["gate", "jaxlib==9.9", "--out", str(tmp_path), "--cache-dir", str(tmp_path / "cache")])
    report = not_judged_report(tmp_path)
    assert code == 2 and report["verdict"] == "not-verified"
    assert "install failed: no matching distribution for jaxlib==9.9" in report["reasons"][0]
    assert report["candidate_lock"]["sha256"] == environments.digest(LOCK)


def test_a_crash_of_the_gate_itself_is_not_verified_with_a_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def crash(*args: Any, **kwargs: Any) -> None:
        raise KeyError("bug")

    monkeypatch.setattr(runner, "run", crash)
    monkeypatch.setattr(environments, "ensure", lambda *a, **k: tmp_path / "python")
    monkeypatch.setattr(runner, "write_checkpoints", lambda *a, **k: "")
    code = cli.main(
        ["gate", "--candidate-lock", str(LOCK), "--out", str(tmp_path), "--cache-dir", str(tmp_path / "cache")]
    )
    report = not_judged_report(tmp_path)
    assert not (tmp_path / "report.json").exists(), "a crash's report (no contract judged) became report.json"
    assert code == 2 and report["reasons"][0].startswith("baseline not verified: gate error: KeyError")
    assert "the gate itself failed: KeyError" in capsys.readouterr().err


def test_specs_and_a_candidate_lock_together_are_refused(tmp_path: Path) -> None:
    assert cli.main(["gate", "optax==0.2.8", "--candidate-lock", str(LOCK), "--out", str(tmp_path)]) == 2
    assert not (tmp_path / "report.json").exists()


# --- bad inputs through the real command line: exit 2 within seconds, no traceback -------------------
def _write(path: Any, text: Any) -> Any:
    path.write_text(text)
    return str(path)


BAD_INPUTS: dict[str, tuple[Callable[[Path], list[str]], str]] = {
    "malformed spec": (lambda t: ["optax=>0.2"], "not a valid requirement: 'optax=>0.2'"),
    "unknown package": (
        lambda t: ["optx==0.2.8"],
        "the baseline does not require a package named 'optx' (did you mean optax?)",
    ),
    "missing path after --usage": (
        lambda t: ["--usage", "src", "notebooks"],
        "the baseline does not require a package named "
        "'notebooks'; pass --allow-extra to add a new package to the candidate; if it is a path: "
        "--usage notebooks (one path per --usage)",
    ),
    "candidate lock missing": (
        lambda t: ["--candidate-lock", str(t / "nope.txt")],
        "candidate lock {t}/nope.txt does not exist",
    ),
    "candidate lock empty": (
        lambda t: ["--candidate-lock", _write(t / "empty.txt", "# nothing\n")],
        "pins no package (empty lock file)",
    ),
    "candidate lock without hashes": (
        lambda t: ["--candidate-lock", _write(t / "bare.txt", "optax==0.2.8\n")],
        "optax==0.2.8 has no --hash",
    ),
    "baseline lock missing": (
        lambda t: ["--baseline-lock", str(t / "gone.txt")],
        "baseline lock {t}/gone.txt does not exist",
    ),
    # a helper gave README.md: the message offered `uv pip compile ... -o README.md`, which overwrites it
    "baseline lock is prose": (
        lambda t: ["--baseline-lock", _write(t / "README.md", "# Title\n\nBefore a team moves.\n")],
        "README.md is not a lock: no line pins a package as name==version with --hash",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_a_bad_input_answers_in_seconds_with_exit_2_and_the_reason(tmp_path: Path, case: Any) -> None:
    make_args, message = BAD_INPUTS[case]
    message = message.replace("{t}", str(tmp_path))
    out = tmp_path / "out"
    status, stdout, stderr, seconds = gate_cli(*make_args(tmp_path), out=out)
    assert status == 2, stdout + stderr
    assert message in stderr and "Traceback" not in stderr
    assert seconds < 10
    report = not_judged_report(out)
    assert report["verdict"] == "not-verified" and any(message in r for r in report["reasons"])
    assert len(report["reasons"]) == 1 and "\n" not in report["reasons"][0]  # one line, said once for both sides
    run = (out / evidence.NOT_JUDGED_LINK).resolve()
    assert not (run / "candidate-lock.txt").exists(), "no candidate lock may sit beside a report that had none"
    assert not (run / evidence.MARKER).exists()


def test_a_refused_run_writes_a_refusal_report_without_usage_notes(tmp_path: Path) -> None:
    team = tmp_path / "team"
    team.mkdir()
    (team / "bad.py").write_text("import optax\ndef f(:\n")  # not scanned: a note in a report of a run that ran
    out = tmp_path / "out"
    status, stdout, stderr, _seconds = gate_cli("optx==0.2.8", "--usage", str(team), out=out)
    assert status == 2 and "the baseline does not require a package named 'optx'" in stderr, stdout + stderr
    assert "writing the refusal report" in stderr and "comparing and writing the report" not in stderr
    report = not_judged_report(out)
    assert report["usage"] is None and not [n for n in report.get("notes", []) if "--usage" in n]
    assert "not scanned" not in (out / "not-judged.md").read_text()


def test_an_unknown_package_is_accepted_with_allow_extra() -> None:
    from optax_gate.gate.inputs import validate

    known = validate.lock_packages(LOCK, "baseline lock")
    assert "optax" in known and "ml-dtypes" in known  # transitive packages of the baseline may be moved too
    assert [r.name for r in validate.parse_specs(["rich==13"], known, allow_extra=True)] == ["rich"]


@pytest.mark.parametrize("kind", ["a file", "below a file"])
def test_an_unwritable_out_is_exit_2_without_a_traceback(tmp_path: Path, kind: Any) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    out = blocker if kind == "a file" else blocker / "reports"
    status, _stdout, stderr, seconds = gate_cli("optax==0.2.8", out=out)
    assert status == 2 and "Traceback" not in stderr and seconds < 10
    assert f"the output folder {out} (set with --out)" in stderr and "(no report written)" in stderr


@pytest.mark.skipif(uv_env() is None, reason="needs uv: run ./noxw once (it installs uv into .noxw/)")
def test_an_impossible_version_fails_resolution_before_the_baseline_runs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    status, _stdout, stderr, _seconds = gate_cli("optax==9.9.9", out=out, env=uv_env(), timeout=120)
    assert status == 2 and "the candidate cannot be resolved" in stderr and "Traceback" not in stderr
    assert "baseline: running the contracts" not in stderr
    report = not_judged_report(out)
    assert report["baseline"]["reason"] == "not run: the candidate could not be resolved"
    assert "optax" in report["candidate"]["reason"] and "9.9.9" in report["candidate"]["reason"]
    assert not ((out / evidence.NOT_JUDGED_LINK).resolve() / "candidate-lock.txt").exists()


def test_help_explains_every_option_and_the_exit_statuses() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "optax_gate", "gate", "--help"], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0
    for option in ("--candidate-lock", "--allow-extra", "--keep", "--out", "--baseline-lock", "--timeout"):
        assert option in proc.stdout
    assert "2  not verified" in proc.stdout and "1  fail" in proc.stdout and "0  pass" in proc.stdout


def test_a_complete_run_becomes_latest_with_readable_reports_and_its_own_lock(tmp_path: Path) -> None:
    proc = subprocess.run(fake_gate(tmp_path), cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "out"
    run = (out / "latest").resolve()
    assert run.parent == out / "runs" and not (run / evidence.MARKER).exists()
    assert (out / "report.md").read_text() == (run / "report.md").read_text()
    for name in ("report.md", "report.json"):
        assert stat.S_IMODE((run / name).stat().st_mode) & 0o044 == 0o044, f"{name} is not readable by others"
    assert (run / "candidate-lock.txt").read_bytes() == LOCK.read_bytes()
    assert latest_report(out)["candidate_lock"]["sha256"] == environments.digest(LOCK)
    for phase in ("checking the inputs", "baseline: running the contracts", "writing the report"):
        assert phase in proc.stderr
    for side in ("baseline", "candidate"):
        assert f"{side}: {FAKE_CONTRACTS}/{FAKE_CONTRACTS} contracts" in proc.stderr


def test_old_runs_are_pruned_to_keep(tmp_path: Path) -> None:
    for _ in range(4):
        assert subprocess.run(fake_gate(tmp_path, pause=0), cwd=ROOT, capture_output=True, timeout=60).returncode == 0
    runs = sorted((tmp_path / "out" / "runs").iterdir())
    assert len(runs) == 3 and (tmp_path / "out" / "latest").resolve() == runs[-1]


def test_sigint_at_a_random_moment_leaves_the_previous_complete_run_intact(tmp_path: Path) -> None:
    """Five interrupted runs (SIGINT at a random moment of the run, from its
    first progress line to 80 % of the time an uninterrupted run of the same
    command takes on this machine, measured first: a loaded machine and a
    cached baseline change that time): the previous complete run stays
    latest, byte for byte, and each interrupted folder stays marked
    incomplete."""
    import random

    out = tmp_path / "out"
    # --no-cache: both sides run their contracts in every attempt (a cached result leaves nothing to interrupt)
    cmd = fake_gate(tmp_path, pause=0.1, tests=12, extra=["--no-cache"])
    assert subprocess.run(cmd, cwd=ROOT, capture_output=True, timeout=60).returncode == 0
    timed = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert timed.stderr is not None
    timed.stderr.readline()
    start = time.monotonic()
    assert timed.wait(timeout=60) == 0
    span = 0.8 * (time.monotonic() - start)
    latest = (out / "latest").resolve()
    complete = set((out / "runs").iterdir())
    before, report_before = snapshot(latest), (out / "report.md").read_text()
    rng = random.Random(9)
    for attempt in range(5):
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stderr is not None
        first = proc.stderr.readline()  # the gate is running (its first progress line), not still importing
        time.sleep(rng.uniform(0.0, span))
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=30)
        stderr = first + stderr
        if "now shows it" in stdout:  # a loaded machine: the run was complete and current before the signal came
            assert proc.returncode == 0, f"attempt {attempt}: a complete run exited {proc.returncode}: {stderr}"
            latest, complete = (out / "latest").resolve(), set((out / "runs").iterdir())
            before, report_before = snapshot(latest), (out / "report.md").read_text()
            continue
        assert proc.returncode == 2, f"attempt {attempt}: exit {proc.returncode}: {stderr}"
        assert "interrupted" in stderr and "Traceback" not in stderr
        assert (out / "latest").resolve() == latest, f"attempt {attempt}: an interrupted run became latest"
        assert snapshot(latest) == before and (out / "report.md").read_text() == report_before
        left = subprocess.run(
            ["pgrep", "-f", str(tmp_path / "fake-python")], capture_output=True, text=True
        ).stdout.split()
        assert not left, f"attempt {attempt}: contract processes outlived the interrupted gate: {left}"
        others = [p for p in (out / "runs").iterdir() if p not in complete]
        assert others and all((p / evidence.MARKER).exists() for p in others), (
            "an interrupted run is not marked incomplete"
        )


def test_a_signal_once_the_command_is_over_does_not_kill_the_process(tmp_path: Path) -> None:
    """Once the command is over the process's handlers only record a signal, so a Ctrl-C that comes as
    the gate finishes its report does not kill it by the signal (exit -2, no word): the exit status is
    the command's."""
    driver = (
        "import os, signal, sys, time\n"
        "from optax_gate.gate import cli\n"
        "status = cli.main(['compare', sys.argv[1], sys.argv[1], '--out', sys.argv[2]], process=True)\n"
        "os.kill(os.getpid(), signal.SIGINT)\n"
        "os.kill(os.getpid(), signal.SIGTERM)\n"
        "time.sleep(0.2)\n"
        "sys.exit(status)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", driver, str(tmp_path / "absent.json"), str(tmp_path / "out")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, (proc.returncode, proc.stderr[-2000:])


def test_the_process_ignores_signals_through_the_interpreters_tear_down(tmp_path: Path) -> None:
    """Once the command is over the entry point ignores SIGINT and SIGTERM, which the interpreter's
    tear-down keeps: at its end Python gives a signal with a Python handler its default action back, so a
    Ctrl-C just after the report is current would otherwise kill the gate with exit 130 and no word."""
    driver = (
        "import signal, sys\n"
        "from optax_gate.gate import cli\n"
        "sys.exit = lambda status: print('IGNORED', signal.getsignal(signal.SIGINT) is signal.SIG_IGN,\n"
        "                                  signal.getsignal(signal.SIGTERM) is signal.SIG_IGN, status)\n"
        "cli.entry(['compare', sys.argv[1], sys.argv[1], '--out', sys.argv[2]])\n"
    )
    said = tmp_path / "exit-status"  # the nox session reads it when a Ctrl-C reaches nox after the gate finished
    proc = subprocess.run(
        [sys.executable, "-c", driver, str(tmp_path / "absent.json"), str(tmp_path / "out")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, cli.EXIT_FILE: str(said)},
    )
    assert "IGNORED True True 2" in proc.stdout, (proc.stdout, proc.stderr[-2000:])
    assert said.read_text() == "2\n"

    assert cli.EXIT_FILE in results_cache.IGNORED_ENV  # where the status goes decides no outcome: no new cache key


def test_a_signal_while_the_run_is_made_current_waits_and_then_the_runs_own_status_is_the_exit(tmp_path: Path) -> None:
    """A signal during ``evidence.complete`` (the run's marker and links) waits until the run is
    complete and current; then the exit status is the run's own (0 here) and the words say so, never
    "interrupted: not verified … no report" beside a report that is current, and never a run left marked
    but not linked."""
    patch = (
        "from optax_gate.gate.run import evidence as _ev\n"
        "import os as _os, signal as _sig\n"
        "_replace = _os.replace\n"
        "def _late(src, dst):\n"
        "    if _ev.COMMITTING and not _ev.DEFERRED:\n"
        "        _os.kill(_os.getpid(), _sig.SIGINT)\n"
        "    return _replace(src, dst)\n"
        "_os.replace = _late\n"
    )
    cmd = fake_gate(tmp_path, pause=0, tests=4)
    assert "\ncli.entry(" in cmd[2]
    cmd[2] = cmd[2].replace("\ncli.entry(", "\n" + patch + "cli.entry(")
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-3000:])
    assert "came after the run was complete: verdict pass" in proc.stderr and "not verified" not in proc.stderr, (
        proc.stderr
    )
    out = tmp_path / "out"
    latest = (out / "latest").resolve()
    assert evidence.is_complete(latest) and (out / "report.md").read_text() == (latest / "report.md").read_text()


def test_ctrl_c_is_reported_as_sigint_even_when_nox_sends_sigterm_while_the_gate_stops(tmp_path: Path) -> None:
    """Ctrl-C under ./noxw: the terminal sends SIGINT to the whole process group (nox, the gate, its
    pytest processes), and nox sends the gate SIGTERM 0.3 s later if it has not ended. Here SIGTERM
    follows at once, so it reaches the gate while it is still stopping: the cause named is still the
    first signal, SIGINT, never "interrupted (SIGTERM)" (a later exception does not replace the
    first)."""
    cmd = fake_gate(tmp_path, pause=0.2, tests=20)
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    said = []
    assert proc.stderr is not None
    for line in proc.stderr:
        said.append(line)
        if "running the contracts" in line:
            break
    time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGINT)  # the terminal's Ctrl-C
    proc.send_signal(signal.SIGTERM)  # nox's shutdown_process, early
    _, stderr = proc.communicate(timeout=60)
    stderr = "".join(said) + stderr
    assert proc.returncode == 2 and "Traceback" not in stderr, stderr
    # the SIGTERM may reach the gate before or after it has said why it stops (a race of two processes):
    # either way the cause named is the first signal, Ctrl-C, never SIGTERM
    assert (
        "interrupted (SIGINT, Ctrl-C; then SIGTERM): not verified" in stderr
        or "interrupted (SIGINT, Ctrl-C): not verified" in stderr
    ), stderr
    assert "interrupted (SIGTERM" not in stderr, stderr
    # the folder is not kept for good: the next gate removes an incomplete folder whose process is gone
    assert (
        "marked INCOMPLETE, with the evidence gathered so far (its report, if written, is not current; the "
        "next gate that completes removes it)"
    ) in stderr, stderr


def test_an_interrupted_gate_says_that_not_judged_md_is_an_earlier_runs(tmp_path: Path) -> None:
    """After an interrupted gate, not-judged.md may still hold an earlier run's refusal while the console
    names only report.md: the interruption's line says that not-judged.md is an earlier run's, so it is not
    read as this run's."""
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "not-judged.md").write_text("# an earlier refusal\n")
    proc = subprocess.Popen(
        fake_gate(tmp_path, pause=0.2, tests=20),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    said = []
    assert proc.stderr is not None
    for line in proc.stderr:
        said.append(line)
        if "running the contracts" in line:
            break
    os.killpg(proc.pid, signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    stderr = "".join(said) + stderr
    assert (
        proc.returncode == 2 and f"({tmp_path / 'out' / 'not-judged.md'} is an earlier run's, not this one's)" in stderr
    ), stderr


def test_nox_gives_the_gate_time_to_stop_after_ctrl_c() -> None:
    """Under ./noxw, Ctrl-C makes nox wait 0.3 s for the gate, send SIGTERM, and (nox's default) SIGKILL
    0.2 s later: a gate still stopping its pytest processes then died without its "interrupted" line and
    its not-judged report. The noxfile's call of the gate (the tests run without nox installed, so
    its source is read) gives it ``GATE_STOP_S`` seconds after that SIGTERM."""
    import ast

    tree = ast.parse((ROOT / "noxfile.py").read_text())
    stop = next(
        node.value.value  # type: ignore[attr-defined]  # the assignment found by the condition below
        for node in tree.body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "GATE_STOP_S" for t in node.targets)
    )
    assert stop >= 10
    tool = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "_run_tool")
    calls = [
        node
        for node in ast.walk(tool)
        if isinstance(node, ast.Call)
        and getattr(node.func, "attr", "") == "run"
        and any(isinstance(a, ast.Constant) and a.value == "optax_gate" for a in node.args)
    ]
    assert calls and all(
        any(k.arg == "terminate_timeout" and getattr(k.value, "id", "") == "GATE_STOP_S" for k in call.keywords)
        for call in calls
    )


def test_a_warm_gate_takes_the_baseline_from_the_cache_and_runs_only_the_candidate(tmp_path: Path) -> None:
    runs = tmp_path / "pytest-runs"
    first = subprocess.run(fake_gate(tmp_path, pause=0), cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert first.returncode == 0 and "baseline: not taken from the cache" in first.stderr
    assert "contract module(s) stored in the cache" in first.stderr
    ran_first = runs.read_text().split()
    # another candidate (a lock with one more line): its results are not the baseline's
    other_lock = tmp_path / "other-lock.txt"
    other_lock.write_text(LOCK.read_text() + "# another candidate\n")
    second = subprocess.run(
        fake_gate(tmp_path, pause=0, lock=other_lock), cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert second.returncode == 0 and "baseline: from cache" in second.stderr, second.stderr
    ran_second = runs.read_text().split()[len(ran_first) :]
    assert all(name.startswith("candidate") for name in ran_second) and ran_second
    report = latest_report(tmp_path / "out")
    assert report["baseline"]["from_cache"]["key"] and "**from cache**" in (tmp_path / "out" / "report.md").read_text()
    assert ((tmp_path / "out" / "latest").resolve() / "checkpoints" / "meta.json").exists()
    third = subprocess.run(
        fake_gate(tmp_path, pause=0, extra=["--no-cache"]), cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert third.returncode == 0 and "from cache" not in third.stderr
    ran_third = runs.read_text().split()[len(ran_first) + len(ran_second) :]
    assert any(n.startswith("baseline") for n in ran_third) and any(n.startswith("candidate") for n in ran_third)


def test_an_unknown_gate_option_gets_the_gate_usage_and_a_close_match(capsys: pytest.CaptureFixture[str]) -> None:
    """``gate optax==0.2.8 --bogus-option`` prints the gate's own usage, not the top-level one, and a near
    option; exit 2."""
    from optax_gate.gate import cli_parser

    with pytest.raises(SystemExit) as stop:
        cli_parser.parse(["gate", "optax==0.2.8", "--contract", "x", "--bogus-option"])
    err = capsys.readouterr().err
    assert (
        stop.value.code == 2 and "usage: optax-gate gate" in err and "unrecognized arguments: --bogus-option" in err
    ), err
    with pytest.raises(SystemExit):
        cli_parser.parse(["gate", "--keepp", "3"])
    assert "did you mean --keep?" in capsys.readouterr().err


def test_a_pytest_process_started_while_the_gate_stops_is_stopped_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pytest process a side's worker thread starts just after the interruption killed the live ones is
    stopped too, at once: the thread may pass the "is the gate stopping?" check before the interruption,
    and the gate waits for that thread at exit."""
    import threading as threading_

    real = subprocess.Popen
    stopper: list[threading_.Thread] = []

    def popen_as_the_gate_stops(*args: Any, **kwargs: Any) -> Any:
        stopper.append(threading_.Thread(target=pytest_process.stop_all))
        stopper[0].start()
        time.sleep(0.2)  # stop_all has run (or waits for the process to be registered)
        return real(
            [sys.executable, "-c", "import time; time.sleep(30)"], **{k: v for k, v in kwargs.items() if k != "cwd"}
        )

    monkeypatch.setattr(subprocess, "Popen", popen_as_the_gate_stops)
    monkeypatch.setattr(pytest_process, "_STOP", threading_.Event())
    monkeypatch.setattr(pytest_process, "_LIVE", set())
    start = time.monotonic()
    part = pytest_process.run_pytest(
        pytest_process.PytestCall(Path(sys.executable), "x", "tests", ROOT, tmp_path), 60, None
    )
    assert (part is None or part.returncode < 0) and time.monotonic() - start < 10, (
        part,
        time.monotonic() - start,
    )  # killed
    stopper[0].join(5)


@pytest.mark.parametrize("content", [None, "not json", "[1, 2]", "{}", "folder"])
def test_compare_refuses_what_is_not_a_run_record_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: Any
) -> None:
    """compare of a missing file, a file that is not JSON, a JSON list, an empty object or a folder is an input
    the user can fix: exit 2, one line naming the file, no traceback, no report written."""
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    base.write_text(json.dumps(record({"a": "passed"})))
    if content == "folder":
        cand.mkdir()
    elif content is not None:
        cand.write_text(content)
    out = tmp_path / "out"
    assert cli.main(["compare", str(base), str(cand), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "the gate itself failed" not in err and str(cand) in err, err
    assert "run record" in err, err
    if content not in (None, "folder"):  # the refusal names the records compare reads, not only the parser's error
        assert "evidence/baseline.json or evidence/candidate.json" in err, err
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.parametrize("where", ["a file", "under /proc"])
def test_compare_refuses_an_out_it_cannot_write_before_comparing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: Any
) -> None:
    """A helper's try: ``compare --out`` naming a file (or a path under /proc) compared both records and then printed
    two tracebacks and "the gate itself failed"; the gate refuses the same ``--out`` in a second. Now compare does too:
    exit 2, one line, no traceback."""
    base = tmp_path / "base.json"
    base.write_text(json.dumps(record({"a": "passed"})))
    out = tmp_path / "taken"
    if where == "a file":
        out.write_text("not a folder")
    else:
        out = Path("/proc/optax-gate-out")
    assert cli.main(["compare", str(base), str(base), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "the gate itself failed" not in err, err
    assert f"the output folder {out} (set with --out)" in err and "(no report written)" in err, err


def test_compare_never_replaces_the_report_of_a_gate_output_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """compare has its own default --out and refuses a gate's output folder: writing its report over
    reports/gate/report.md would replace the links to the newest judged run."""
    base, cand = tmp_path / "base.json", tmp_path / "cand.json"
    base.write_text(json.dumps(record({"a": "passed"})))
    cand.write_text(json.dumps(record({"a": "failed"})))
    gate_out = tmp_path / "gate"
    (gate_out / "runs" / "r1").mkdir(parents=True)
    (gate_out / "runs" / "r1" / "report.md").write_text("# judged\n")
    (gate_out / "report.md").symlink_to("runs/r1/report.md")
    assert cli.main(["compare", str(base), str(cand), "--out", str(gate_out)]) == 2
    assert "gate output folder" in capsys.readouterr().err
    assert (gate_out / "report.md").is_symlink() and (gate_out / "report.md").read_text() == "# judged\n"
    assert cli_parser.parse(["compare", "a", "b"]).out.name == "compare"


@pytest.mark.parametrize(
    "argv, words",
    [
        (["gate", "--usage", ""], "--usage: must not be empty"),
        (["gate", "--out", " "], "--out: must not be empty"),
        (["gate", "--keep", "abc"], "--keep: must be at least 1, got abc"),
        (["gate", "--timeout", "soon"], "--timeout: must be a number of seconds greater than 0, got soon"),
    ],
)
def test_an_empty_path_or_a_word_for_a_number_is_refused_in_plain_words(
    argv: Any, words: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--usage ""`` scanned the current folder (264 files of the gate's own code) and the gate went on;
    ``--keep abc`` said "invalid check value" (the name of the validator, not of the option's meaning)."""
    with pytest.raises(SystemExit) as exc:
        cli_parser.parse(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert words in err and "check value" not in err, err


@pytest.mark.parametrize("option", ["--timeout", "--run-timeout", "--bisect-timeout", "--speed-budget"])
def test_an_infinite_number_is_refused(option: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """``--timeout inf`` is refused up front: a subprocess's timeout of inf overflows, late in the run."""
    with pytest.raises(SystemExit) as exc:
        cli_parser.parse(["gate", option, "inf"])
    assert exc.value.code == 2 and "got inf" in capsys.readouterr().err


def test_compare_reuses_the_team_run_of_the_gate_that_recorded_the_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``compare --team-run`` re-uses the run a --run gate recorded, so the verdict is about it again
    (compare has no --run, and re-judging with --usage only would say "cannot tell without --run"); without
    it the report says where that run is. A report of another candidate, or of a gate without --run, is
    refused in one line."""
    base = record(golden_a="passed")
    cand = record(golden_a="failed")
    base["versions"], cand["versions"] = {"optax": "0.2.6"}, {"optax": "0.2.8"}
    run = tmp_path / "runs" / "r1"
    (run / "evidence").mkdir(parents=True)
    b, c = write_run(run / "evidence" / "baseline.json", base), write_run(run / "evidence" / "candidate.json", cand)
    team = {
        "command": "python train.py",
        "run_dir": "/team",
        "outcome": "same",
        "reason": "",
        "runs": [],
        "compared": 5,
        "differing": 0,
        "first": None,
        "divergences": [],
        "causes": [],
        "sites": [],
        "raised_at": "",
        "affected": [],
    }
    gate_report: Any = {
        "verdict": "pass",
        "baseline": {"versions": {"optax": "0.2.6"}},
        "candidate": {"versions": {"optax": "0.2.8"}},
        "team_run": team,
    }
    (run / "report.json").write_text(json.dumps(gate_report))
    assert (
        cli.main(["compare", b, c, "--out", str(tmp_path / "plain")]) == 1
    )  # the broken contract is the team's: no evidence
    assert cli.main(["compare", b, c, "--team-run", str(run), "--out", str(tmp_path / "reused")]) == 0
    report = json.loads((tmp_path / "reused" / "report.json").read_text())
    assert (
        report["verdict"] == "pass"
        and report["team_run"]["outcome"] == "same"
        and report["findings"][0]["scope"] == "elsewhere"
    )
    assert "Your run computes the same" in (tmp_path / "reused" / "report.md").read_text()
    capsys.readouterr()
    other = {**gate_report, "candidate": {"versions": {"optax": "0.2.7"}}}
    (tmp_path / "other.json").write_text(json.dumps(other))
    (tmp_path / "norun.json").write_text(json.dumps({k: v for k, v in gate_report.items() if k != "team_run"}))
    (tmp_path / "list.json").write_text("[1, 2]")
    for given, words in (
        ("other.json", "optax 0.2.7 there, 0.2.8 here"),
        ("norun.json", "holds no team run"),
        ("missing.json", "cannot be read"),
        ("runs/r1/evidence/baseline.json", "is a run record, not a gate's"),
        ("list.json", "is not a gate's report.json"),
    ):
        assert cli.main(["compare", b, c, "--team-run", str(tmp_path / given), "--out", str(tmp_path / "x")]) == 2
        err = capsys.readouterr().err
        assert words in err and "Traceback" not in err, err
    assert not (tmp_path / "x").exists()
    # another team's recorded run of the same versions is never re-used as this team's
    for folder in ("team", "team/src", "other"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / "train.py").write_text("import optax\n")  # a --usage folder without code is refused
    team_b = ["--usage", str(tmp_path / "other")]
    assert cli.main(["compare", b, c, "--team-run", str(run), *team_b, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "ran `python train.py` in /team, which is not the code of --usage" in err, err
    gate_report["team_run"]["run_dir"] = str(tmp_path / "team")
    (run / "report.json").write_text(json.dumps(gate_report))
    for usage in ("team", "team/src"):  # the run's folder, or a folder in it
        assert (
            cli.main(
                [
                    "compare",
                    b,
                    c,
                    "--team-run",
                    str(run),
                    "--usage",
                    str(tmp_path / usage),
                    "--out",
                    str(tmp_path / usage / "out"),
                ]
            )
            == 0
        )


def test_a_compare_whose_lines_cannot_be_told_says_where_the_recorded_run_is(tmp_path: Path) -> None:
    """compare runs no code: its "cannot tell without --run" lines now point to the gate's recorded run
    (``--team-run REPORT``) when the gate that recorded the records ran one, else to a gate with --run."""
    from optax_gate.gate import compare_flow

    run = tmp_path / "runs" / "r1"
    (run / "evidence").mkdir(parents=True)
    finding = {"your_code_attribution": {"train.py:3": {"verdict": "cannot-tell", "why": "x", "calls": "y"}}}
    for team, words in (
        (None, "run the gate with --run"),
        ({"outcome": "same"}, f"add --team-run {run / 'report.json'}"),
    ):
        (run / "report.json").write_text(json.dumps({"team_run": team} if team else {}))
        report: Any = {"notes": [], "findings": [finding]}
        compare_flow.say_recorded_run(report, run / "evidence" / "baseline.json")
        assert len(report["notes"]) == 1 and words in report["notes"][0], report["notes"]
    report = {"notes": [], "findings": [{"your_code_attribution": {"a.py:1": {"verdict": "affected"}}}]}
    compare_flow.say_recorded_run(report, run / "evidence" / "baseline.json")
    assert report["notes"] == [] or "ran your command (--run)" in report["notes"][0]
    # compare of a --run gate's records names the recorded run, so its verdict is not read without it
    (run / "report.json").write_text(json.dumps({"team_run": {"outcome": "same"}}))
    for verdict, said in (("fail", True), ("not-verified", True), ("pass", False)):
        report = {"notes": [], "verdict": verdict, "findings": []}
        compare_flow.say_recorded_run(report, run / "evidence" / "baseline.json")
        assert bool(report["notes"]) is said and (
            not said or f"add --team-run {run / 'report.json'}" in report["notes"][0]
        ), report
    (run / "report.json").write_text("{}")  # a gate without --run: nothing to re-use
    report = {"notes": [], "verdict": "fail", "findings": []}
    compare_flow.say_recorded_run(report, run / "evidence" / "baseline.json")
    assert report["notes"] == []


def test_a_compare_of_swapped_run_records_says_they_look_swapped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A gate's records carry their label: ``compare candidate.json baseline.json`` (the two given the
    other way round) says so in the report and on stderr, since it reads the candidate's changes
    backwards and the baseline's own failures as the candidate's."""
    base, cand = record(golden_a="passed"), record(golden_a="failed")
    base.update(label="baseline", versions={"optax": "0.2.6", "jax": "0.11.2"})
    cand.update(label="candidate", versions={"optax": "0.2.8", "jax": "0.12.0.1"})
    b, c = write_run(tmp_path / "baseline.json", base), write_run(tmp_path / "candidate.json", cand)
    assert (
        cli.main(["compare", c, b, "--out", str(tmp_path / "swapped")]) == 2
    )  # compared as given (fixed), not verified
    out = capsys.readouterr().out  # the verdict's first reason, on the console
    assert "the run records look swapped" in out and "candidate record (optax 0.2.8, jax 0.12.0.1)" in out, out
    report = json.loads((tmp_path / "swapped" / "report.json").read_text())
    assert report["reasons"][0].startswith("the run records look swapped"), report["reasons"]  # first, not a note
    assert report["reasons"][0].endswith("every change in this report reads the other way round (broken as fixed)")
    assert "look swapped" in (tmp_path / "swapped" / "report.md").read_text()
    assert cli.main(["compare", b, c, "--out", str(tmp_path / "right")]) == 1
    assert "look swapped" not in capsys.readouterr().out
    right = json.loads((tmp_path / "right" / "report.json").read_text())
    assert not any("swapped" in n for n in right["notes"] + right["reasons"])
    # swapped records with --team-run are refused as swapped, and swapped records get no --team-run suggestion
    (tmp_path / "report.json").write_text(json.dumps({"team_run": {"outcome": "same"}}))
    assert cli.main(["compare", c, b, "--team-run", str(tmp_path / "report.json"), "--out", str(tmp_path / "t")]) == 2
    err = capsys.readouterr().err
    assert "the run records look swapped" in err and "another baseline" not in err and not (tmp_path / "t").exists(), (
        err
    )


def test_a_compare_started_elsewhere_finds_the_records_environment_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gate's records name their environments relative to the project (``.nox/gate-envs/…/site-packages``,
    ``requirements-lock.txt``): a compare started from another folder finds them from the project folder and
    compares the API surface and the dependencies."""
    from optax_gate.gate import compare_flow

    monkeypatch.chdir(tmp_path)
    given = RunRecord(
        "baseline", "ran", fields={"lock_file": "requirements-lock.txt", "site_packages": "no/such/site-packages"}
    )
    rec = compare_flow.located(given).fields
    assert rec.get("lock_file") == str(ROOT / "requirements-lock.txt") and (ROOT / "requirements-lock.txt").is_file()
    assert (
        rec.get("site_packages") == "no/such/site-packages"
    )  # found nowhere: as it is (the diff says why it was not made)
    (tmp_path / "requirements-lock.txt").write_text("")
    assert (
        compare_flow.located(RunRecord("baseline", "ran", fields={"lock_file": "requirements-lock.txt"})).fields.get(
            "lock_file"
        )
        == "requirements-lock.txt"
    )  # found here


def test_an_interrupted_command_tells_the_nox_session_it_was_interrupted(tmp_path: Path) -> None:
    """An interrupted command's status file says so (``2 interrupted``), and the nox session says
    "optax-gate was interrupted: not verified" (noxfile._run_tool), never "optax-gate had finished before
    the interruption reached it: exit 2" for a Ctrl-C during the contracts (exit 2, folder INCOMPLETE)."""
    driver = (
        "import sys\n"
        "from optax_gate.gate import cli, cli_parser\n"
        "def interrupted(*args):\n"
        "    raise KeyboardInterrupt\n"
        "cli_parser.compare_runs = interrupted\n"
        "cli.entry(['compare', sys.argv[1], sys.argv[1], '--out', sys.argv[2]])\n"
    )
    said = tmp_path / "exit-status"
    proc = subprocess.run(
        [sys.executable, "-c", driver, str(tmp_path / "a.json"), str(tmp_path / "out")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, cli.EXIT_FILE: str(said)},
    )
    assert proc.returncode == 2 and "interrupted" in proc.stderr, (proc.returncode, proc.stderr[-2000:])
    assert said.read_text() == "2 interrupted\n"
    noxfile = (ROOT / "noxfile.py").read_text()
    assert '"interrupted" not in said[1:]' in noxfile and "optax-gate was interrupted: not verified" in noxfile


@pytest.mark.parametrize(
    "args",
    [
        ["-s", "gate", "optax==0.2.8"],
        ["-s", "gate", "jax"],
        ["--session", "gate", "flax>=0.12"],
        ["-s", "gate", "optax==0.2.8", "--run", "python train.py"],
    ],
)
def test_noxw_says_to_put_a_requirement_after_the_double_dash(args: Any) -> None:
    """For ``./noxw -s gate optax==0.2.8`` (the ``--`` forgotten) noxw says
    what was meant, exit 2, before installing or running anything, instead of
    nox's "Sessions not found: optax==0.2.8" (exit 3) with no hint
    (issue 39)."""
    proc = subprocess.run(["bash", str(ROOT / "noxw"), *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert f"'{args[2]}' is not a session: it looks like a requirement" in proc.stderr
    import shlex

    suggested = proc.stderr.split("./noxw -s gate --", 1)[1].strip()
    assert shlex.split(suggested) == args[2:], suggested  # every argument kept, quoted so that it pastes as given


@pytest.mark.parametrize(
    "args",
    [
        ["-s", "gate", "--usage", "team"],
        ["-s", "gate", "--usage=team", "--out", "r", "optax==0.2.8"],
        ["-s", "compare", "a.json", "b.json", "--usage", "team"],
    ],
)
def test_noxw_says_where_an_option_of_the_gate_goes(args: Any) -> None:
    """``./noxw -s gate --usage team`` would reach nox, whose own --usage takes the path and looks for a
    session named ``team`` (exit 1, read as FAIL): noxw says the gate's arguments go after ``--``, exit 2."""
    proc = subprocess.run(["bash", str(ROOT / "noxw"), *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    option = next(a for a in args if a.startswith("--usage")).split("=")[0]
    assert (
        f"'{option}' is an option of the {args[1]}, not of nox: the {args[1]}'s arguments go after --:" in proc.stderr
    )
    import shlex

    suggested = proc.stderr.split(f"./noxw -s {args[1]} --", 1)[1].strip()
    assert shlex.split(suggested) == args[2:], suggested


def test_noxw_drops_the_double_dash_from_its_suggestion() -> None:
    """For ``./noxw -s gate optax==0.2.8 -- --usage DIR --out X`` noxw suggests ``./noxw -s gate -- optax==0.2.8
    --usage DIR --out X``, one ``--`` only: a second ``--`` would read --usage and --out as requirements."""
    import shlex

    proc = subprocess.run(
        ["bash", str(ROOT / "noxw"), "-s", "gate", "optax==0.2.8", "--", "--usage", "d", "--out", "x"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert shlex.split(proc.stderr.split("./noxw -s gate --", 1)[1].strip()) == [
        "optax==0.2.8",
        "--usage",
        "d",
        "--out",
        "x",
    ]


@pytest.mark.parametrize(
    "args, given, what",
    [
        (["-s", "rebaseline", "requirements-lock.txt"], "requirements-lock.txt", "an argument"),
        (["-s", "rebaseline", "--move", "requirements-lock.txt"], "--move", "an option"),
    ],
)
def test_noxw_says_where_the_rebaselines_lock_and_options_go(args: Any, given: Any, what: Any) -> None:
    """``./noxw -s rebaseline LOCK``, or ``--move`` before ``--``, would reach nox ("Sessions not found", exit 3, or
    nox's usage text): noxw says the arguments go after ``--``, exit 2, the suggestion ready to paste."""
    import shlex

    proc = subprocess.run(["bash", str(ROOT / "noxw"), *args], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 2, proc.stderr
    assert f"'{given}' is {what} of the rebaseline, not of nox" in proc.stderr
    assert shlex.split(proc.stderr.split("./noxw -s rebaseline --", 1)[1].strip()) == args[2:]


def test_noxw_finds_a_file_or_folder_given_before_the_double_dash_where_the_user_stands(tmp_path: Path) -> None:
    """From another folder, noxw finds a file or folder given before ``--`` where the user stands, as ``noxw -s
    rebaseline team-lock.txt`` (the file there, not in the project) or ``-s gate src`` (a folder), and says it is
    an argument of the session, not of nox (exit 2), instead of nox's "Sessions not found" (exit 3)."""
    (tmp_path / "team-lock.txt").write_text("x")
    (tmp_path / "team").mkdir()
    for args, given in ((["-s", "rebaseline", "team-lock.txt"], "team-lock.txt"), (["-s", "gate", "team"], "team")):
        proc = subprocess.run(
            ["bash", str(ROOT / "noxw"), *args], capture_output=True, text=True, timeout=60, cwd=tmp_path
        )
        assert proc.returncode == 2, proc.stderr
        assert f"'{given}' is an argument of the {args[1]}, not of nox" in proc.stderr


def test_an_interrupted_command_leaves_no_empty_out_folder_it_made(tmp_path: Path) -> None:
    """Ctrl-C after ``--out`` was made and before anything was written in it: the folders the command made
    are removed; a folder that existed before, or that holds anything, stays."""
    driver = (
        "import sys\n"
        "from pathlib import Path\n"
        "from optax_gate.gate import cli, cli_parser\n"
        "from optax_gate.gate.inputs import validate\n"
        "def interrupted(options, started):\n"
        "    validate.writable_folder(Path(sys.argv[2]))\n"
        "    validate.writable_folder(Path(sys.argv[3]))\n"
        "    (Path(sys.argv[3]) / 'kept.txt').write_text('written before the interruption')\n"
        "    raise KeyboardInterrupt\n"
        "cli_parser.compare_runs = interrupted\n"
        "cli.entry(['compare', sys.argv[1], sys.argv[1], '--out', sys.argv[2]])\n"
    )
    (tmp_path / "existing").mkdir()
    made, holding = tmp_path / "existing" / "new" / "out", tmp_path / "holding"
    proc = subprocess.run(
        [sys.executable, "-c", driver, str(tmp_path / "a.json"), str(made), str(holding)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "interrupted" in proc.stderr, (proc.returncode, proc.stderr[-2000:])
    assert not (tmp_path / "existing" / "new").exists() and (tmp_path / "existing").is_dir()
    assert (holding / "kept.txt").read_text() == "written before the interruption"


def test_a_ctrl_c_while_the_command_line_is_imported_is_an_interruption_not_a_traceback(tmp_path: Path) -> None:
    """Ctrl-C in the first half second of ``python -m optax_gate`` (still importing): exit 2 and one line, as
    every other interruption, and the nox session's status file says interrupted."""
    driver = (
        "import runpy, sys, types\n"
        "class Importing(types.ModuleType):\n"
        "    def __getattr__(self, name):\n"
        "        raise KeyboardInterrupt\n"
        "sys.modules['optax_gate.gate.cli'] = Importing('optax_gate.gate.cli')\n"
        "runpy.run_module('optax_gate', run_name='__main__')\n"
    )
    said = tmp_path / "exit-status"
    proc = subprocess.run(
        [sys.executable, "-c", driver],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, cli.EXIT_FILE: str(said)},
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, (proc.returncode, proc.stderr)
    assert "interrupted (SIGINT, Ctrl-C) while starting: not verified" in proc.stderr
    assert said.read_text() == "2 interrupted\n"
