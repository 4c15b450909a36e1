"""A baseline other than the pinned one records its own snapshots and the
candidate compares with them (``optax_gate.gate.reuse.baseline_snapshots``, the
``original_datadir`` of ``tests/contracts/conftest.py``). The snapshot
module below is run by real pytest with pytest-regressions, in a copy of the
contracts' conftest; its value comes from ``$VALUE`` (the committed file
holds 0, the "pinned baseline")."""

import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from optax_gate.gate.inputs.options import EnvironmentOptions
from optax_gate.gate.reuse import baseline_snapshots
from optax_gate.gate.sides_prepare import Side

ROOT = Path(__file__).resolve().parents[3]
MODULE = """
import os
import pytest

pytestmark = pytest.mark.contract(api="optax.sgd", guide="meta test")


@pytest.mark.snapshot
def test_value(data_regression):
    data_regression.check({"value": int(os.environ["VALUE"])})
"""


@pytest.fixture
def project(tmp_path: Path) -> Any:
    pytest.importorskip("pytest_regressions")
    contracts = tmp_path / "proj" / "tests" / "contracts"
    (contracts / "test_snap").mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "contracts" / "conftest.py", contracts / "conftest.py")
    (contracts / "test_snap.py").write_text(MODULE)
    (contracts / "test_snap" / "test_value.yml").write_text("value: 0\n")  # recorded at the pinned baseline
    (tmp_path / "proj" / "pytest.ini").write_text("[pytest]\nmarkers =\n  contract\n  snapshot\n")
    return tmp_path / "proj"


def _pytest(project: Any, value: Any, snapshots: Any = None, record: Any = False) -> Any:
    env = {k: v for k, v in os.environ.items() if k not in (baseline_snapshots.SNAPSHOT_DIR, baseline_snapshots.RECORD)}
    env["VALUE"], env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = str(value), "1"
    if snapshots:
        env[baseline_snapshots.SNAPSHOT_DIR] = str(snapshots)
    if record:
        env[baseline_snapshots.RECORD] = "1"
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "pytest_regressions.plugin",
            "-p",
            "pytest_datadir.plugin",
            "tests/contracts/test_snap.py",
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_baseline_records_its_snapshots_and_the_candidate_compares_with_them(project: Any, tmp_path: Path) -> None:
    snapshots = tmp_path / "run" / "evidence" / baseline_snapshots.FOLDER
    committed = project / "tests" / "contracts" / "test_snap" / "test_value.yml"
    # the team's baseline computes 1: recorded into the run's folder, passes; the committed file is not written
    assert _pytest(project, 1, snapshots, record=True).returncode == 0
    assert (snapshots / "tests" / "contracts" / "test_snap" / "test_value.yml").read_text() == "value: 1\n"
    assert committed.read_text() == "value: 0\n"
    # a candidate that computes what the team's baseline computed passes; another value fails
    assert _pytest(project, 1, snapshots).returncode == 0
    failed = _pytest(project, 2, snapshots)
    assert failed.returncode == 1 and "value" in failed.stdout
    # without the folder the snapshot measures the distance from the pinned baseline (0), as before
    assert _pytest(project, 1).returncode == 1
    assert _pytest(project, 0).returncode == 0


def _side(label: Any, tmp_path: Path, record: Any = None) -> Any:
    return Side(label, tmp_path, tmp_path / "ck", {}, jax_env={"JAX": "1"}, record=record, cache_inputs={"k": 1})


def test_arrange_leaves_the_pinned_baseline_alone_and_sets_up_another(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "requirements-lock.txt").write_text("optax==0.2.6 \\\n    --hash=sha256:aa\n")
    same = tmp_path / "same.txt"
    same.write_text("# a comment\noptax==0.2.6 \\\n    --hash=sha256:aa\n")  # the same pins, other comments
    team = tmp_path / "team.txt"
    team.write_text("optax==0.2.8 \\\n    --hash=sha256:bb\n")
    said: list[str] = []
    env = EnvironmentOptions(project_root=root, baseline_lock=same, python="python", envs_dir=tmp_path / "envs")
    base, cand = _side("baseline", tmp_path), _side("candidate", tmp_path)
    assert baseline_snapshots.arrange(base, cand, env, tmp_path / "ev", said.append) is None
    assert base.jax_env == {"JAX": "1"} and base.cache_inputs == {"k": 1}

    env = dataclasses.replace(env, baseline_lock=team)
    base = _side("baseline", tmp_path, record={"from_cache": {"key": "x"}, "status": "ran"})
    base.cached["contracts/test_sgd.py"] = {"outcomes": {}}  # a module found in the cache (sides_prepare.look_up)
    folder = baseline_snapshots.arrange(base, cand, env, tmp_path / "ev", said.append)
    assert folder == (tmp_path / "ev" / baseline_snapshots.FOLDER).absolute() and folder.is_dir()
    assert base.record is None and base.cache_inputs is None  # the cached result holds no snapshots: run again
    assert base.cached == {}  # nor any module of it: a partly cached baseline would join results without its snapshots
    assert base.jax_env == {"JAX": "1", baseline_snapshots.SNAPSHOT_DIR: str(folder), baseline_snapshots.RECORD: "1"}
    assert cand.jax_env == {"JAX": "1", baseline_snapshots.SNAPSHOT_DIR: str(folder)}
    # given the folder, gate_flow runs the two sides one after the other: the candidate needs the baseline's files
    assert base.extra["snapshots"].startswith("evidence/snapshots-baseline")
