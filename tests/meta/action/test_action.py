"""The GitHub Action's entry script (``python -m optax_gate.action``, what ``action.yml`` runs) on a fake team
repository and fake environments outside GitHub (``support/action_fakes.py``): the labels, the ids, the report, the
call sites and the outputs are the gate's own, in about two seconds."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from optax_gate.action import run as action_run
from tests.meta.support.action_fakes import CONTRACTS, action_env, fake_side, run_action, team_repo
from tests.meta.support.paths import ROOT


def test_a_team_repository_gets_a_report_naming_its_call_sites_and_its_two_contracts(tmp_path: Path) -> None:
    team = team_repo(tmp_path)
    proc, outputs = run_action(tmp_path, team)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert outputs["verdict"] == "fail" and outputs["exit-status"] == "1"
    report_md = Path(outputs["report"])
    report = json.loads(report_md.with_name("report.json").read_text())
    rows = {r["id"]: (r["api"], r["guide"], r["change"]) for r in report["contracts"]}
    assert rows == {
        "contracts/test_scale.py::test_halves_the_update": (
            "optax.scale",
            "team: src/teamapp/train.py halves the updates",
            "broken",
        ),
        "contracts/test_clip.py::test_clips_at_max_delta": (
            "optax.clip",
            "team: src/teamapp/train.py clips at 1",
            "unchanged",
        ),
    }
    scale = next(f for f in report["findings"] if f.get("api") == "optax.scale")
    assert scale["your_code"] == ["src/teamapp/train.py:3"]  # relative to the team's workspace, where the gate started
    text = report_md.read_text()
    assert "`src/teamapp/train.py:3`" in text and "contracts/test_scale.py::test_halves_the_update" in text
    summary = (tmp_path / "summary.md").read_text()
    assert summary.startswith("optax-gate: verdict **fail**, exit status 1") and "# Optax upgrade gate: FAIL" in summary
    assert (Path(outputs["report-folder"]) / "report.json").is_file()  # what the artifact step uploads


def test_a_team_contract_failing_in_the_baseline_is_not_verified_naming_it(tmp_path: Path) -> None:
    """A second folder of the team's (given by its absolute path) holds a contract that fails in the baseline."""
    fixed = (
        CONTRACTS["test_scale.py"]
        .replace("[1.0, -2.0]", "[2.0, -4.0]")
        .replace("test_halves_the_update", "test_doubles")
    )
    team = team_repo(tmp_path, {"test_clip.py": CONTRACTS["test_clip.py"]})
    shutil.copytree(team / "contracts", tmp_path / "ours")
    (tmp_path / "ours" / "test_clip.py").unlink()
    (tmp_path / "ours" / "test_scale.py").write_text(fixed)
    proc, outputs = run_action(tmp_path, team, contracts=f"contracts {tmp_path / 'ours'}")
    assert outputs["verdict"] == "not-verified" and proc.returncode == 2
    report = json.loads(Path(outputs["report"]).with_name("report.json").read_text())
    assert any("ours/test_scale.py::test_doubles" in r and "fail in the baseline" in r for r in report["reasons"]), (
        report["reasons"]
    )


BROKEN_MODULES = {  # a contract module that does not compile: its bytes, and what the refusal says after the folder
    "syntax": (
        b"import optax\n\n\ndef test_x(:\n    pass\n",
        ": a contract module does not compile: nothing/sub/test_broken.py:4: SyntaxError: invalid syntax",
    ),
    "undecodable": (
        b"import optax\nNAME = '\xff'\n",
        ": a contract module does not compile: nothing/sub/test_broken.py:2: SyntaxError: (unicode error) "
        "'utf-8' codec can't decode byte 0xff",
    ),
}


@pytest.mark.parametrize("case", ["missing", "empty", *BROKEN_MODULES])
def test_a_missing_empty_or_broken_contracts_folder_is_refused_before_anything_is_built(
    tmp_path: Path, case: Any
) -> None:
    team = team_repo(tmp_path)
    if case != "missing":
        (team / "nothing" / "sub").mkdir(parents=True)
        (team / "nothing" / "helpers.py").write_text("")
    if case in BROKEN_MODULES:
        (team / "nothing" / "test_fine.py").write_text(CONTRACTS["test_clip.py"])
        (team / "nothing" / "sub" / "test_broken.py").write_bytes(BROKEN_MODULES[case][0])
    proc, outputs = run_action(tmp_path, team, contracts="nothing")
    assert proc.returncode == 2 and outputs["verdict"] == "not-verified"
    why = {"missing": " does not exist", "empty": " holds no contract module (test_*.py)"}.get(case) or BROKEN_MODULES[
        case
    ][1]
    assert f"--contracts nothing (= {team / 'nothing'}){why}" in proc.stderr, proc.stderr
    assert not (tmp_path / "gate-envs").exists() and "running the contracts" not in proc.stderr


def test_a_refusal_after_a_judged_run_shows_the_refusal_while_the_folder_keeps_the_judged_report(
    tmp_path: Path,
) -> None:
    """docs/action.md: the ``report`` output, the job summary (and so the comment) show *this* run's report,
    a refusal included; the output folder's ``report.md`` keeps showing the last run that judged both sides."""
    team = team_repo(tmp_path)
    env = action_env(tmp_path, team)

    def action(**inputs: Any) -> Any:
        proc = subprocess.run(
            [sys.executable, "-m", "optax_gate.action", "gate"],
            cwd=team,
            capture_output=True,
            text=True,
            env={**env, **{f"INPUT_{k.upper()}": v for k, v in inputs.items()}},
            timeout=120,
        )
        return proc, dict(line.split("=", 1) for line in (tmp_path / "github-output").read_text().splitlines())

    proc, judged = action()
    assert proc.returncode == 1 and judged["verdict"] == "fail", proc.stdout + proc.stderr
    out = tmp_path / "runner-temp" / "optax-gate"
    judged_md = (out / "report.md").read_text()
    assert (
        Path(judged["report"]).read_text() == judged_md and Path(judged["report-folder"]) == (out / "latest").resolve()
    )
    (tmp_path / "summary.md").unlink()
    proc, refused = action(contracts="nothing")  # refused: the folder does not exist
    assert proc.returncode == 2 and refused["verdict"] == "not-verified" and refused["exit-status"] == "2"
    shown = Path(refused["report"])
    assert shown != Path(judged["report"]) and shown.parent == Path(refused["report-folder"])
    assert "does not exist" in shown.read_text() and shown.read_text().startswith("# Optax upgrade gate: NOT-VERIFIED")
    summary = (tmp_path / "summary.md").read_text()
    assert "# Optax upgrade gate: NOT-VERIFIED" in summary and "does not exist" in summary
    assert (out / "report.md").read_text() == judged_md, "the refusal replaced the judged run's report"
    assert f"{out / 'report.md'} still shows the run of" in proc.stdout and "(verdict fail)" in proc.stdout


def test_bad_inputs_of_the_action_are_exit_2_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    monkeypatch.setenv("GITHUB_OUTPUT", str(out))
    for name, value, said in (
        ("INPUT_FAIL_ON", "sometimes", "fail-on: expected one of broken, changed"),
        ("INPUT_SPEED", "yes", "speed: expected true or false"),
    ):
        monkeypatch.setenv(name, value)
        assert action_run.gate() == 2
        assert said in capsys.readouterr().err
        monkeypatch.delenv(name)
    assert out.read_text().count("exit-status=2") == 2


@pytest.mark.parametrize("runner_temp", [False, True])
def test_the_report_folder_is_optax_gate_in_the_workspace_outside_github(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runner_temp: Any
) -> None:
    """docs/action.md: outside GitHub (no ``RUNNER_TEMP``) the report goes to ``optax-gate/`` in the team's
    folder (teams may add it to .gitignore); in the action to ``$RUNNER_TEMP/optax-gate``, outside the workspace."""
    for name in [k for k in os.environ if k.startswith(("INPUT_", "GITHUB_", "RUNNER_"))]:
        monkeypatch.delenv(name)
    team = tmp_path / "team"
    team.mkdir()
    monkeypatch.chdir(team)
    if runner_temp:
        monkeypatch.setenv("RUNNER_TEMP", str(tmp_path / "runner-temp"))
    args_file = tmp_path / "gate-args.json"
    monkeypatch.setenv(
        "OPTAX_GATE_ACTION_GATE",
        json.dumps(
            [
                sys.executable,
                "-c",
                f"import json, sys; json.dump(sys.argv[1:], open({str(args_file)!r}, 'w')); sys.exit(2)",
            ]
        ),
    )
    assert action_run.gate() == 2
    args = json.loads(args_file.read_text())
    assert Path(args[args.index("--out") + 1]) == (tmp_path / "runner-temp" if runner_temp else team) / "optax-gate"


@pytest.mark.parametrize(
    ("summary", "fail_on", "status"),
    [
        ({"unchanged": 3, "fixed": 1}, "broken", 0),
        ({"unchanged": 3, "fixed": 1}, "changed", 1),
        ({"unchanged": 4, "fixed": 0}, "changed", 0),
    ],
)
def test_fail_on_changed_fails_a_pass_with_a_difference(summary: Any, fail_on: Any, status: Any) -> None:
    assert action_run.status_of(0, {"verdict": "pass", "summary": summary}, fail_on) == ("pass", status)
    assert action_run.status_of(2, None, fail_on) == ("not-verified", 2)


MUTANTS_FILE = """from optax_gate.mutants import family

mutant = family("team-tiny-scale", "test_scale.py")  # relative: read from this file's folder


@mutant("team-tiny-scale-{name}", "{what}")
def _(optax):
    orig = optax.scale
    return {{"scale": lambda step_size: orig({factor} * step_size)}}
"""


@pytest.mark.parametrize(("factor", "caught"), [(2, True), (1, False)])
def test_the_mutants_check_runs_a_team_folder_outside_the_project(tmp_path: Path, factor: Any, caught: Any) -> None:
    """``python -m optax_gate.mutants --contracts DIR``: the folder's ``*_mutants.py`` is found and its
    contracts run under each mutant; a mutant that changes nothing is a problem (the check can fail)."""
    team = team_repo(tmp_path, {"test_scale.py": CONTRACTS["test_scale.py"]})
    (team / "contracts" / "scale_mutants.py").write_text(
        MUTANTS_FILE.format(
            name="doubles" if caught else "same",
            what="doubles the step size" if caught else "changes nothing",
            factor=factor,
        )
    )
    site = fake_side(tmp_path, "baseline").parent.parent / "lib" / "python3.12" / "site-packages"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), str(ROOT / "src")]),
        "OPTAX_GATE_INVOKED_FROM": str(team),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "optax_gate.mutants", "--contracts", "contracts", "--area", "team-tiny-scale"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if caught:
        assert proc.returncode == 0 and "1 contracts, 1 mutants, 0 problems" in proc.stdout, proc.stdout + proc.stderr
    else:
        assert (
            proc.returncode == 1
            and "mutant team-tiny-scale-same (changes nothing) is caught by no contract" in proc.stdout
        )


def test_a_pass_without_a_readable_report_is_not_verified(tmp_path: Path) -> None:
    team = team_repo(tmp_path)
    env = {
        **action_env(tmp_path, team),
        "OPTAX_GATE_ACTION_GATE": json.dumps([sys.executable, "-c", "pass"]),
    }  # exit 0, no report
    proc = subprocess.run(
        [sys.executable, "-m", "optax_gate.action", "gate"],
        cwd=team,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "report.json cannot be read" in proc.stderr
    assert "verdict=not-verified\nexit-status=2\nreport=\n" in (tmp_path / "github-output").read_text()


def test_the_compilation_cache_key_starts_anew_with_a_new_jaxlib_and_not_for_an_optax_bump(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 42: the shared JAX compilation cache has its own actions/cache entry, keyed by the jaxlib
    versions (JAX's own key holds them): an Optax-only bump restores the last entry of the baseline's jaxlib."""
    for name in [k for k in os.environ if k.startswith(("INPUT_", "GITHUB_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("GITHUB_WORKSPACE", str(tmp_path))
    monkeypatch.setenv("GITHUB_RUN_ID", "77")
    (tmp_path / "base.txt").write_text(
        "jax==0.11.2 \\\n    --hash=sha256:aa\njaxlib==0.11.2 \\\n    --hash=sha256:bb\n"
    )
    (tmp_path / "cand.txt").write_text("jaxlib==0.12.0.1 \\\n    --hash=sha256:cc\noptax==0.2.8\n")
    monkeypatch.setenv("INPUT_BASELINE_LOCK", "base.txt")
    monkeypatch.setenv("INPUT_CANDIDATE", "optax==0.2.8")
    assert action_run.jax_cache_key("Linux") == (
        "jax-Linux-0.11.2-same-77-1",
        "jax-Linux-0.11.2-same-\njax-Linux-0.11.2-",
    )
    monkeypatch.setenv("INPUT_CANDIDATE", "optax==0.2.8 jax==0.12.0.1 jaxlib==0.12.0.1")
    assert action_run.jax_cache_key("Linux")[0] == "jax-Linux-0.11.2-0.12.0.1-77-1"
    monkeypatch.delenv("INPUT_CANDIDATE")
    monkeypatch.setenv("INPUT_CANDIDATE_LOCK", "cand.txt")
    key, restore = action_run.jax_cache_key("Linux")
    assert key == "jax-Linux-0.11.2-0.12.0.1-77-1" and restore.splitlines()[-1] == "jax-Linux-0.11.2-"
    monkeypatch.delenv("INPUT_BASELINE_LOCK")  # the action's own lock: optax 0.2.6 / jaxlib 0.11.2
    assert action_run.jax_cache_key("Linux")[0].startswith("jax-Linux-0.11.2-")
