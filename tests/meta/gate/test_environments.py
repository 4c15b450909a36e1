"""The environment folder is keyed by what a lock installs, not by its comments.

A candidate lock is compiled in each run's own folder; uv names that folder in
its ``# via -r`` comments. Were the folder keyed by the lock's bytes, every gate
run would build a new candidate environment with an empty compilation cache.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from optax_gate.gate.install import environments

PINS = """\
jax==0.12.0.1 \\
    --hash=sha256:{h}
    # via -r {via}
numpy==2.5.5 \\
    --hash=sha256:{h}
    # via
    #   -r {via}
    #   jax
"""


def _lock(tmp_path: Path, name: str, via: str, h: str = "ab" * 32) -> Path:
    path = tmp_path / name
    path.write_text(PINS.format(via=via, h=h))
    return path


def test_locks_differing_only_in_comments_share_a_folder(tmp_path: Path) -> None:
    a = _lock(tmp_path, "a.txt", "reports/gate/runs/20261130T033828Z-fba873/candidate-lock.in")
    b = _lock(tmp_path, "b.txt", "candidate-lock.in")
    assert environments.digest(a) != environments.digest(b)
    assert environments.folder_for(tmp_path, a) == environments.folder_for(tmp_path, b)


def test_a_changed_hash_or_version_is_another_folder(tmp_path: Path) -> None:
    a = _lock(tmp_path, "a.txt", "candidate-lock.in")
    b = _lock(tmp_path, "b.txt", "candidate-lock.in", h="cd" * 32)
    c = tmp_path / "c.txt"
    c.write_text(a.read_text().replace("numpy==2.5.5", "numpy==2.5.6"))
    folders = {environments.folder_for(tmp_path, p) for p in (a, b, c)}
    assert len(folders) == 3


def test_compile_lock_names_the_input_relative_to_its_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """uv is run beside the input and given its bare name, so the lock's
    ``# via -r`` comments never carry the run folder's path."""
    seen: dict[str, Any] = {}

    def fake_run(stage: Any, cmd: Any, timeout: Any, cwd: Any = None) -> Any:
        seen.update(cmd=cmd, cwd=cwd)
        Path(cmd[cmd.index("-o") + 1]).write_text("jax==0.12.0.1\n")
        return ""

    monkeypatch.setattr(environments, "uv", lambda: "uv")
    monkeypatch.setattr(environments, "run_stage", fake_run)
    run_folder = tmp_path / "runs" / "20261130T000000Z-abcdef"
    run_folder.mkdir(parents=True)
    req_in = run_folder / "candidate-lock.in"
    req_in.write_text("jax==0.12.0.1\n")
    prefs = tmp_path / "requirements-lock.txt"
    prefs.write_text("jax==0.11.2\n")
    out = environments.compile_lock(req_in, run_folder / "candidate-lock.txt", prefs, ["jax"])
    assert out.read_text() == "jax==0.12.0.1\n"
    assert seen["cwd"] == run_folder
    inputs = [a for a in seen["cmd"] if a.endswith(".in")]
    assert inputs == ["candidate-lock.in"]


@pytest.fixture
def fake_uv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """uv replaced by a recorder: ``venv`` does what ``uv venv --clear`` does to
    the folder (empties it, leaves a ``bin/python``); other commands do nothing.
    Returns the list of commands run; ``tmp_path`` holds a ``pyproject.toml``."""
    calls = []

    def fake_run(stage: Any, cmd: Any, timeout: Any, cwd: Any = None) -> Any:
        calls.append(cmd)
        if "venv" in cmd:
            folder = Path(cmd[-1])
            shutil.rmtree(folder, ignore_errors=True)
            (folder / "bin").mkdir(parents=True)
            (folder / "bin" / "python").write_text("")
        return ""

    monkeypatch.setattr(environments, "uv", lambda: "uv")
    monkeypatch.setattr(environments, "run_stage", fake_run)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "optax-gate"\n')
    return calls


def test_ensure_installs_bytecode_and_rebuilds_an_environment_without_it(tmp_path: Path, fake_uv: Any) -> None:
    """Packages are installed with their .pyc files (``--compile-bytecode``): with
    PYTHONDONTWRITEBYTECODE set, each pytest process would otherwise compile jax
    from source again. An environment recorded without them is built anew once."""
    calls = fake_uv
    lock = _lock(tmp_path, "lock.txt", "requirements.in")
    env = tmp_path / "env"
    environments.ensure(env, lock, "3.12", tmp_path)
    lock_installs = [c for c in calls if "--require-hashes" in c]
    assert len(lock_installs) == 1 and "--compile-bytecode" in lock_installs[0]

    calls.clear()
    environments.ensure(env, lock, "3.12", tmp_path)  # unchanged: only the project is reinstalled
    assert not [c for c in calls if "--require-hashes" in c]

    state = env / environments.STATE_FILE
    old = json.loads(state.read_text())
    del old["bytecode"]
    state.write_text(json.dumps(old))
    calls.clear()
    environments.ensure(env, lock, "3.12", tmp_path)
    assert [c for c in calls if "--require-hashes" in c]


def test_the_editable_project_is_reinstalled_only_when_its_pyproject_or_folder_changes(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "optax-gate"\n')
    env = tmp_path / "env"
    site = env / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    assert environments.project_install_needed(env, project)  # never installed
    environments.mark_project_installed(env, project)
    assert environments.project_install_needed(env, project)  # recorded, but no .pth: not really there
    (site / "__editable__.optax_gate-0.1.0.pth").write_text(str(project / "src"))
    assert not environments.project_install_needed(env, project)
    (project / "pyproject.toml").write_text(
        '[project]\nname = "optax-gate"\n[project.entry-points.pytest11]\nx = "y"\n'
    )
    assert environments.project_install_needed(env, project)  # new entry points
    environments.mark_project_installed(env, project)
    moved = tmp_path / "moved"
    project.rename(moved)
    assert environments.project_install_needed(env, moved)  # the .pth points at the old folder
    (env / environments.PROJECT_FILE).write_text("{not json")
    assert environments.project_install_needed(env, moved)


def test_the_gate_and_the_matrix_share_an_environment_built_from_their_own_venvs(tmp_path: Path, fake_uv: Any) -> None:
    """Each nox session has its own virtual environment (``.nox/gate``,
    ``.nox/matrix``); both are made from the same Python. Asking for the same
    lock from either must not rebuild the environment (a rebuild clears its
    folder, compilation cache included)."""
    import venv

    for name in ("gate", "matrix"):
        venv.EnvBuilder(with_pip=False).create(tmp_path / name)
    ids = {environments.interpreter(str(tmp_path / name / "bin" / "python")) for name in ("gate", "matrix")}
    assert len(ids) == 1 and ids.pop().split()[0].count(".") == 2
    assert environments.interpreter(str(tmp_path / "absent" / "python")) == str(tmp_path / "absent" / "python")

    calls = fake_uv
    lock = _lock(tmp_path, "lock.txt", "requirements.in")
    environments.ensure(tmp_path / "env", lock, str(tmp_path / "gate" / "bin" / "python"), tmp_path)
    calls.clear()
    environments.ensure(tmp_path / "env", lock, str(tmp_path / "matrix" / "bin" / "python"), tmp_path)
    assert not [c for c in calls if "venv" in c or "--require-hashes" in c]


def test_the_skip_check_and_the_build_find_uv_the_same_way_without_it_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """``python -m pytest tests/meta`` outside nox, uv not on PATH: the tests' skip check and the bisection's
    build both find uv through ``environments.uv`` (the one ``./noxw`` installed into ``.noxw/``), so a test
    that needs uv either runs with it or skips."""
    from tests.meta.support.gate_cli import uv_env
    from tests.meta.support.paths import ROOT

    installed = ROOT / ".noxw" / "venv" / "bin" / "uv"
    if not installed.exists():
        pytest.skip("./noxw has not installed uv into .noxw/ in this checkout")
    monkeypatch.setenv("PATH", "/nonexistent")
    assert environments.uv() == str(installed)
    assert uv_env() == {}
    assert "uv" in environments.run_uv("install", ["--version"], timeout=60)


def _site(folder: Path) -> Path:
    site = folder / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    return site


def test_bytecode_is_lent_only_for_a_source_file_the_donor_shares_on_disk(tmp_path: Path) -> None:
    """A ``.pyc`` is valid for a source file of the same size and modification
    time; one file linked into both environments (as uv links from its cache) is
    that, a copy with the same text is not proven so and gets none."""
    donor, env = _site(tmp_path / "donor"), _site(tmp_path / "env")
    for name in ("shared.py", "copied.py", "changed.py"):
        (donor / "pkg").mkdir(exist_ok=True)
        (donor / "pkg" / name).write_text("x = 1\n")
        (donor / "pkg" / "__pycache__").mkdir(exist_ok=True)
        (donor / "pkg" / "__pycache__" / f"{name[:-3]}.cpython-312.pyc").write_bytes(b"bytecode of " + name.encode())
    (env / "pkg").mkdir()
    os.link(donor / "pkg" / "shared.py", env / "pkg" / "shared.py")
    shutil.copy2(donor / "pkg" / "copied.py", env / "pkg" / "copied.py")
    (env / "pkg" / "changed.py").write_text("x = 2\n")
    (env / "pkg" / "new.py").write_text("y = 1\n")
    missing = environments.lend_bytecode(tmp_path / "donor", tmp_path / "env", "cpython-312")
    assert sorted(p.name for p in missing) == ["changed.py", "copied.py", "new.py"]
    assert sorted(p.name for p in (env / "pkg" / "__pycache__").iterdir()) == ["shared.cpython-312.pyc"]
    assert (env / "pkg" / "__pycache__" / "shared.cpython-312.pyc").read_bytes() == b"bytecode of shared.py"


def test_a_second_environment_borrows_bytecode_from_one_built_with_the_same_interpreter(
    tmp_path: Path, fake_uv: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first environment compiles everything (``--compile-bytecode``); the
    next, beside it and from the same base interpreter, installs without it,
    takes the donor's ``.pyc`` files and compiles only the rest."""
    calls = fake_uv
    lent: list[tuple[str, str, str]] = []
    compiled: list[Any] = []

    def lend_bytecode(donor: Path, env: Path, tag: str) -> list[Path]:
        lent.append((donor.name, env.name, tag))
        return [env / "x.py"]

    monkeypatch.setattr(environments, "interpreter", lambda python: "3.12.1 /usr")
    monkeypatch.setattr(environments, "lend_bytecode", lend_bytecode)
    monkeypatch.setattr(subprocess, "run", lambda cmd, **kw: compiled.append((cmd, kw.get("input"))))
    envs = tmp_path / "envs"
    first, second = envs / "a", envs / "b"
    environments.ensure(first, _lock(tmp_path, "one.txt", "requirements.in"), "3.12", tmp_path)
    assert "--compile-bytecode" in next(c for c in calls if "--require-hashes" in c) and not lent
    calls.clear()
    environments.ensure(second, _lock(tmp_path, "two.txt", "other.in", h="cd" * 32), "3.12", tmp_path)
    assert "--compile-bytecode" not in next(c for c in calls if "--require-hashes" in c)
    assert lent == [("a", "b", "cpython-312")]
    assert compiled and compiled[0][0][1:3] == ["-m", "compileall"] and compiled[0][1] == str(second / "x.py")
