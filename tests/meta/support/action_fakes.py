"""A fake team repository and fake environments for the GitHub Action's entry script
(``python -m optax_gate.action``), outside GitHub: the team's own ``src/``, lock and two contracts; each side's
interpreter a script whose ``site-packages`` holds a tiny pure-Python ``optax`` (the candidate's ``scale`` doubles),
its contract run the real pytest with this project's plugin on the team's folder only."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from optax_gate.kit.environment import probe
from tests.meta.support.paths import LOCK, ROOT

TINY_OPTAX = {
    "baseline": "def scale(step_size):\n    return lambda g: [step_size * x for x in g]\n\n\n"
    "def clip(max_delta):\n    return lambda g: [max(-max_delta, min(max_delta, x)) for x in g]\n",
    "candidate": "def scale(step_size):\n    return lambda g: [2 * step_size * x for x in g]\n\n\n"
    "def clip(max_delta):\n    return lambda g: [max(-max_delta, min(max_delta, x)) for x in g]\n",
}

FAKE_PYTHON = """#!{python}
import json, os, sys, time
args = sys.argv[1:]
here = os.path.dirname(os.path.dirname(os.path.abspath(sys.argv[0])))
site = os.path.join(here, "lib", "python3.12", "site-packages")
if args[:2] == ["-m", "optax_gate.kit.environment.probe"]:
    print(json.dumps({{"versions": {{"python": "3.12.0", "optax": {version!r}}}, "import_error": None,
                      "import_warnings": [], "pytest_plugins": {plugins!r}}}))
elif args[:2] == ["-m", "optax_gate.kit.training.resume"]:
    os.makedirs(args[3], exist_ok=True)
    open(os.path.join(args[3], "meta.json"), "w").write("{{}}")
elif args[:2] == ["-m", "pytest"] and args[2] == "tests/contracts/multidevice":  # no multi-device contract here
    log = next(a.split("=", 1)[1] for a in args if a.startswith("--report-log="))
    open(os.environ["OPTAX_GATE_PROGRESS"], "w").write("0")
    while os.environ.get("OPTAX_GATE_GO") and not os.path.exists(os.environ["OPTAX_GATE_GO"]):
        time.sleep(0.01)
    open(log, "w").write(json.dumps({{"$report_type": "SessionFinish", "exitstatus": 0}}) + "\\n")
elif args[:2] == ["-m", "pytest"]:  # the real pytest, on the team's folders only, with the tiny optax
    os.environ["PYTHONPATH"] = os.pathsep.join([site, os.environ.get("PYTHONPATH", "")])
    rest = [a for a in args[2:] if a != "tests/contracts"]
    os.execv({python!r}, [{python!r}, "-m", "pytest", *rest])
else:
    sys.exit("fake python: unexpected " + " ".join(args))
"""

DRIVER = """
import os, sys
from pathlib import Path
os.environ["OPTAX_GATE_INVOKED_FROM"] = os.getcwd()  # as noxw does: the user's paths are read from the team's folder
os.chdir({root!r})
from optax_gate.gate.install import environments
from optax_gate.gate import cli
environments.ensure = lambda folder, lock, *a, **k: Path({fakes!r}["candidate" if Path(lock).name == "candidate-lock.txt" else "baseline"])
sys.exit(cli.main(["gate", "--cache-dir", {cache!r}, "--envs-dir", {envs!r}, *sys.argv[1:]]))
"""  # noqa: E501 (a script or page written out as it runs)

CONTRACTS = {
    "test_scale.py": '''import optax
import pytest

pytestmark = pytest.mark.contract(api="optax.scale", guide="team: src/teamapp/train.py halves the updates")


@pytest.mark.golden
def test_halves_the_update():
    """0.5 * [2, -4] = [1, -2], exact."""
    assert optax.scale(0.5)([2.0, -4.0]) == [1.0, -2.0]
''',
    "test_clip.py": '''import optax
import pytest

pytestmark = pytest.mark.contract(api="optax.clip", guide="team: src/teamapp/train.py clips at 1")


@pytest.mark.golden
def test_clips_at_max_delta():
    """[3, -0.5, -7] clipped at 1 is [1, -0.5, -1]."""
    assert optax.clip(1.0)([3.0, -0.5, -7.0]) == [1.0, -0.5, -1.0]
''',
}

TRAIN = "import optax\n\nshrink = optax.scale(0.5)\nbound = optax.clip(1.0)\n"


def fake_side(tmp_path: Path, side: str) -> Path:
    python = tmp_path / "envs" / side / "bin" / "python"
    python.parent.mkdir(parents=True)
    site = tmp_path / "envs" / side / "lib" / "python3.12" / "site-packages" / "optax"
    site.mkdir(parents=True)
    (site / "__init__.py").write_text(TINY_OPTAX[side])
    python.write_text(
        FAKE_PYTHON.format(
            python=sys.executable, version="0.2.6" if side == "baseline" else "0.2.8", plugins=probe.pytest_plugins()
        )
    )
    python.chmod(0o755)
    return python


def team_repo(tmp_path: Path, contracts: dict[str, str] = CONTRACTS) -> Path:
    team = tmp_path / "team"
    (team / "src" / "teamapp").mkdir(parents=True)
    (team / "src" / "teamapp" / "train.py").write_text(TRAIN)
    (team / "contracts").mkdir()
    for name, text in contracts.items():
        (team / "contracts" / name).write_text(text)
    shutil.copyfile(LOCK, team / "requirements-lock.txt")  # the team's own lock (a bump pull request changes it)
    subprocess.run(["git", "init", "-q", str(team)], check=True)
    return team


def action_env(tmp_path: Path, team: Path, **inputs: str) -> dict[str, str]:
    fakes = {side: str(fake_side(tmp_path, side)) for side in ("baseline", "candidate")}
    driver = DRIVER.format(root=str(ROOT), fakes=fakes, cache=str(tmp_path / "cache"), envs=str(tmp_path / "gate-envs"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INPUT_", "GITHUB_"))}
    env.update(
        {
            "OPTAX_GATE_ACTION_GATE": json.dumps([sys.executable, "-c", driver]),
            "GITHUB_WORKSPACE": str(team),
            "RUNNER_TEMP": str(tmp_path / "runner-temp"),
            "GITHUB_OUTPUT": str(tmp_path / "github-output"),
            "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
            "PYTHONPATH": str(ROOT / "src"),
            "INPUT_CANDIDATE_LOCK": "requirements-lock.txt",
            "INPUT_USAGE": "src",
            "INPUT_CONTRACTS": "contracts",
            "INPUT_SPEED": "false",
        }
    )
    env.update({f"INPUT_{k.upper()}": v for k, v in inputs.items()})
    return env


def run_action(tmp_path: Path, team: Path, **inputs: str) -> tuple[subprocess.CompletedProcess[str], dict[str, str]]:
    proc = subprocess.run(
        [sys.executable, "-m", "optax_gate.action", "gate"],
        cwd=team,
        env=action_env(tmp_path, team, **inputs),
        capture_output=True,
        text=True,
        timeout=120,
    )
    outputs = dict(line.split("=", 1) for line in (tmp_path / "github-output").read_text().splitlines())
    return proc, outputs
