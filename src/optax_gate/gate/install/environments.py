"""Build and reuse the Python environments the contracts run in, with uv.

An environment lives in a folder named by its lock's pins digest and is rebuilt
only when what it was built from changes (a state file records the pins digest,
the base interpreter and that bytecode was installed): never merely because the
gate and the matrix, each from a nox session of its own, ask for it in turn. A
rebuild clears the folder, its compilation cache included.
Installs go through uv's cache, so a rebuilt environment mostly links files
already downloaded, and takes the bytecode of the files it shares with the
environment built last from the same interpreter (:func:`lend_bytecode`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

STATE_FILE = ".optax-gate-env.json"
#: Records the editable install of this project in an environment.
PROJECT_FILE = ".optax-gate-project.json"


class EnvironmentFailure(Exception):
    """An environment could not be resolved or installed.

    Attributes:
      stage: ``resolution`` or ``install``.
      message: the tool's own explanation (tail of its output).
    """

    def __init__(self, stage: str, message: str):
        super().__init__(f"{stage} failed: {message}")
        self.stage, self.message = stage, message


#: Where ``./noxw`` installs uv (with nox, from requirements-tools.txt) in this project's checkout.
NOXW_UV = Path(__file__).resolve().parents[4] / ".noxw" / "venv" / "bin" / "uv"


def uv() -> str:
    """Path of the ``uv`` executable: the one on PATH (``./noxw`` and nox put it
    there), else the one ``./noxw`` installed into this checkout's ``.noxw/``
    (a plain ``python -m pytest``); every caller (a build, a resolution, a
    test's skip check) finds it this one way.

    Raises:
      EnvironmentFailure: when neither exists (run ``./noxw`` once).
    """
    path = shutil.which("uv")
    if path is None and os.access(NOXW_UV, os.X_OK):
        path = str(NOXW_UV)
    if path is None:
        raise EnvironmentFailure(
            "install", "uv not found on PATH nor in .noxw/ (run ./noxw once); run the gate through ./noxw"
        )
    return path


def run_stage(stage: str, cmd: list[str], timeout: float, cwd: Path | None = None) -> str:
    """Run ``cmd`` (a uv step of stage ``stage``) without downloading Pythons; its standard output.

    Raises:
      EnvironmentFailure: it timed out or exited otherwise than 0 (the message ends with its output's last lines)."""
    env = {**os.environ, "UV_PYTHON_DOWNLOADS": "never", "UV_NO_PROGRESS": "1"}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise EnvironmentFailure(stage, f"timed out after {timeout:.0f} s: {' '.join(cmd[:4])} ...") from None
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-12:]
        raise EnvironmentFailure(
            stage,
            " | ".join(line.strip() for line in tail if line.strip())
            or f"{Path(cmd[0]).name} {cmd[1]} exited {proc.returncode}",
        )
    return proc.stdout


def run_uv(stage: str, args: list[str], timeout: float) -> str:
    """Run ``uv ARGS``; its standard output.

    Raises:
      EnvironmentFailure: ``stage``, with the tail of uv's output, when uv fails or times out.
    """
    return run_stage(stage, [uv(), *args], timeout)


#: The Python every environment is resolved for (JAX >= 0.11 needs 3.12).
PYTHON_VERSION = "3.12"


def compile_lock(
    requirements_in: Path, output: Path, preferences: Path, upgrade: list[str], timeout: float = 600
) -> Path:
    """Resolve ``requirements_in`` into a hash-pinned lock at ``output``, for :data:`PYTHON_VERSION`.

    ``preferences`` (the baseline lock) seeds the resolution: uv keeps the
    versions it finds there unless a requirement or ``upgrade`` moves them. The
    lock is compiled beside ``output`` and renamed into place only when the
    resolution succeeds, so ``output`` never holds a copy of the preferences.

    Raises:
      EnvironmentFailure: stage ``resolution`` when no set of versions fits.
    """
    output.parent.mkdir(parents=True, exist_ok=True)
    work = output.with_name(f".{output.name}.resolving").resolve()
    shutil.copyfile(preferences, work)
    # uv writes the input's path into the ``# via -r`` comments as it was given;
    # run it beside the input so they name ``candidate-lock.in``, not a run folder.
    cmd = [
        uv(),
        "pip",
        "compile",
        "--quiet",
        "--generate-hashes",
        "--no-header",
        "--python-version",
        PYTHON_VERSION,
        requirements_in.name,
        "-o",
        str(work),
    ]
    for name in upgrade:
        cmd += ["--upgrade-package", name]
    try:
        run_stage("resolution", cmd, timeout, cwd=requirements_in.parent)
        os.replace(work, output)  # only a resolved lock ever sits at ``output``
    finally:
        work.unlink(missing_ok=True)
    return output


def digest(lock: Path) -> str:
    """SHA-256 of a file's bytes, hex."""
    return hashlib.sha256(lock.read_bytes()).hexdigest()


def pins_digest(lock: Path) -> str:
    """SHA-256 (hex) of what a lock installs: its lines without comments, blank
    lines and surrounding spaces. Two locks that pin the same versions with the
    same hashes have the same pins digest whatever their ``# via`` comments say."""
    lines = [line.strip() for line in lock.read_text(encoding="utf-8").splitlines()]
    pins = "\n".join(line for line in lines if line and not line.startswith("#"))
    return hashlib.sha256(pins.encode("utf-8")).hexdigest()


def folder_for(envs_dir: Path, lock: Path) -> Path:
    """The environment folder of a lock file, named by its pins digest: the gate
    and the matrix share an environment, and its compilation cache, whenever
    they install the same pins, run after run."""
    return envs_dir / pins_digest(lock)[:16]


def interpreter(python: str) -> str:
    """What an environment built with ``python`` depends on: its version and
    base installation (``3.12.1 /usr/local``), the same
    whether ``python`` is that installation or any virtual environment made
    from it (the gate's and the matrix's nox sessions each have their own).
    Falls back to ``python`` itself when it cannot be run."""
    try:
        proc = subprocess.run(
            [python, "-c", "import platform, sys; print(platform.python_version(), sys.base_prefix)"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return python
    return proc.stdout.strip() if proc.returncode == 0 and proc.stdout.strip() else python


def ensure(path: Path, lock: Path, python: str, project_root: Path, timeout: float = 1200) -> Path:
    """Make ``path`` an environment with exactly ``lock`` installed, plus this
    project (editable, no dependencies); reuse it when the lock is unchanged.

    Args:
      path: folder of the environment.
      lock: hash-pinned requirements file.
      python: interpreter to build it with (path or version).
      project_root: folder holding this project's ``pyproject.toml``.

    Returns:
      the environment's Python executable.

    Raises:
      EnvironmentFailure: stage ``install`` when uv cannot build it.
    """
    exe = path / "bin" / "python"
    # --compile-bytecode: with PYTHONDONTWRITEBYTECODE set, a package installed
    # without its .pyc files is compiled from source by every process anew.
    state: dict[str, Any] = {"pins_sha256": pins_digest(lock), "python": interpreter(python), "bytecode": True}
    state_path = path / STATE_FILE
    fresh = not (exe.exists() and state_path.exists() and json.loads(state_path.read_text()) == state)
    if (
        fresh
    ):  # JAX's compilation cache is not in here: it is shared, in the gate's cache folder (compilation_cache.shared)
        run_stage("install", [uv(), "venv", "--quiet", "--clear", "--python", python, str(path)], timeout)
        donor = _donor(path, state["python"])
        run_stage(
            "install",
            [
                uv(),
                "pip",
                "install",
                "--quiet",
                "--python",
                str(exe),
                "--require-hashes",
                *([] if donor else ["--compile-bytecode"]),
                "-r",
                str(lock),
            ],
            timeout,
        )
        if donor and (missing := lend_bytecode(donor, path, _cache_tag(state["python"]))):
            # the rest compiled as uv compiles it; a file that does not compile is left as uv leaves it (not an error)
            subprocess.run(
                [str(exe), "-m", "compileall", "-q", "-j", "0", "-i", "-"],
                input="\n".join(map(str, missing)),
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
    if project_install_needed(path, project_root):
        run_stage(
            "install",
            [uv(), "pip", "install", "--quiet", "--python", str(exe), "--no-deps", "-e", str(project_root)],
            timeout,
        )
        mark_project_installed(path, project_root)
    if fresh:
        state_path.write_text(json.dumps(state))
    return exe


def _sites(env_folder: Path) -> list[Path]:
    return sorted(Path(env_folder).glob("lib/python*/site-packages"))


def _donor(path: Path, python_state: str) -> Path | None:
    """The environment built last beside ``path`` from the same base
    interpreter with its bytecode (:func:`lend_bytecode`); None when there is none."""
    found: tuple[float, Path] | None = None
    for sibling in path.parent.iterdir() if path.parent.is_dir() else ():
        state = sibling / STATE_FILE
        if sibling == path or not state.is_file():
            continue
        try:
            data = json.loads(state.read_text())
        except (OSError, ValueError):
            continue
        if (
            data.get("python") == python_state
            and data.get("bytecode")
            and (found is None or state.stat().st_mtime > found[0])
        ):
            found = (state.stat().st_mtime, sibling)
    return found[1] if found else None


def _cache_tag(python_state: str) -> str:
    """The bytecode tag of an interpreter described by :func:`interpreter` (``3.12.1 /usr`` -> ``cpython-312``)."""
    release = python_state.split()[0].split(".") if python_state else []
    return (
        f"cpython-{release[0]}{release[1]}"
        if len(release) >= 2 and all(x.isdigit() for x in release[:2])
        else sys.implementation.cache_tag
    )


def lend_bytecode(donor: Path, env_folder: Path, cache_tag: str = sys.implementation.cache_tag) -> list[Path]:
    """Link ``donor``'s bytecode of each source file the two environments
    share as one file on disk (uv links both from its cache: same device and
    inode, so the same bytes, size and modification time a ``.pyc`` is checked
    against) into ``env_folder``; the source files left without bytecode.

    Compiling every installed module (``uv pip install --compile-bytecode``)
    took 12.5 of the 13.2 s an environment of the baseline's lock took to
    build on the 2-core machine; an environment that differs from an earlier
    one in one package now compiles that package alone. A source file that is
    not the donor's own (another version, another copy) gets no ``.pyc`` from
    it. A ``.pyc`` is linked, not copied: Python replaces one by renaming a
    new file over it, never by writing into it."""
    missing = []
    for donor_site in _sites(donor):
        site = Path(env_folder) / donor_site.relative_to(donor)
        for source in site.rglob("*.py") if site.is_dir() else ():
            rel = source.relative_to(site)
            pyc_rel = rel.parent / "__pycache__" / f"{rel.stem}.{cache_tag}.pyc"
            if (site / pyc_rel).exists():
                continue
            theirs = donor_site / pyc_rel
            try:
                same = os.path.samestat(source.stat(), (donor_site / rel).stat()) and theirs.is_file()
            except OSError:
                same = False
            if not same:
                missing.append(source)
                continue
            (site / pyc_rel).parent.mkdir(exist_ok=True)
            try:
                os.link(theirs, site / pyc_rel)
            except OSError:
                shutil.copyfile(theirs, site / pyc_rel)
    return missing


def _project_state(project_root: Path) -> dict[str, str]:
    root = Path(project_root).resolve()
    return {"root": str(root), "pyproject_sha256": digest(root / "pyproject.toml")}


def project_install_needed(env_folder: Path, project_root: Path) -> bool:
    """Whether this project must be (re)installed, editable, into the environment.

    An editable install reads ``src/`` in place, so a change to the code needs
    no reinstall; what it fixes at install time comes from ``pyproject.toml``
    (entry points, package data) and the checkout's folder. The install is
    redone when either differs from the record (``PROJECT_FILE``), when the
    record is missing, or when the install's ``.pth`` file is gone. It took
    about 1.1 s each time on the 2-core machine (setuptools builds the
    editable wheel), once per environment per command.
    """
    record = Path(env_folder) / PROJECT_FILE
    if not record.exists() or not list(
        Path(env_folder).glob("lib/python*/site-packages/__editable__.optax_gate-*.pth")
    ):
        return True
    try:
        recorded: object = json.loads(record.read_text())
        return recorded != _project_state(project_root)
    except (OSError, ValueError):
        return True


def mark_project_installed(env_folder: Path, project_root: Path) -> None:
    """Record that this project is installed, editable, in the environment."""
    (Path(env_folder) / PROJECT_FILE).write_text(json.dumps(_project_state(project_root)))
