"""Requirements of a commit's build that the candidate environment lacks.

An older commit may need a package the candidate's release dropped (optax
v0.2.6 imports ``chex``; the 0.2.8 environment has none). Those packages, and
only those, are installed into a folder of their own beside the commit's
build, resolved with the environment's own versions as constraints, so the
environment's packages are neither replaced nor copied: what the resolver
adds that the environment already has is removed again from that folder.
A requirement the environment meets with another version is left as it is
(only the bisected package is replaced). Cached by the set of requirements
and the environment's packages.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from optax_gate.gate.install.environments import uv

#: Run by the environment's interpreter on the commit's install folder: the
#: requirements (``Requires-Dist``, markers evaluated without extras) whose
#: distribution the environment does not have, as a JSON list.
_UNMET = r"""
import json, sys
from importlib import metadata
from collections.abc import Callable
from pathlib import Path
from packaging.requirements import Requirement
missing = set()
for info in Path(sys.argv[1]).glob("*.dist-info"):
    for line in (info / "METADATA").read_text(encoding="utf-8").splitlines():
        if line.startswith("Requires-Dist:"):
            req = Requirement(line.split(":", 1)[1].strip())
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                try:
                    metadata.version(req.name)
                except metadata.PackageNotFoundError:
                    missing.add(str(req))
print(json.dumps(sorted(missing)))
"""


class DepsFailure(Exception):
    """Something cannot be installed: uv's or Python's reason."""


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _tail(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in (proc.stderr or proc.stdout).strip().splitlines() if line.strip()]
    return " | ".join(([line for line in lines if line.startswith("error")] or lines[-3:])[:3])


def unmet(python: Path, folder: Path, timeout: float) -> list[str]:
    """The requirements of the distributions in ``folder`` that ``python``'s environment lacks."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [str(python), "-c", _UNMET, str(folder)], capture_output=True, text=True, timeout=timeout, env=env
    )
    if proc.returncode != 0:
        raise DepsFailure(f"its requirements cannot be read: {_tail(proc)}")
    names: list[str] = json.loads(proc.stdout.strip().splitlines()[-1])
    return names


def prune(folder: Path, present: set[str]) -> None:
    """Remove from ``folder`` every distribution named in ``present`` (by its RECORD)."""
    for info in folder.glob("*.dist-info"):
        name = _canonical(info.name.removesuffix(".dist-info").rsplit("-", 1)[0])  # NAME-VERSION.dist-info
        if name not in present:
            continue
        record = info / "RECORD"
        paths = (
            [line.split(",")[0] for line in record.read_text(encoding="utf-8").splitlines()] if record.exists() else []
        )
        for rel in paths:
            path = (folder / rel).resolve()
            if path.is_relative_to(folder.resolve()) and path.is_file():
                path.unlink()
        shutil.rmtree(info, ignore_errors=True)
    for empty in sorted((p for p in folder.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        if not any(empty.iterdir()):
            empty.rmdir()


class ListingFailure(DepsFailure):
    """The environment's installed packages could not be listed (``uv pip freeze``)."""


def install_beside(python: Path, names: list[str], root: Path, timeout: float) -> Path:
    """A folder under ``root`` with the distributions ``names`` for
    ``python``'s interpreter, resolved with the environment's own versions as
    constraints and pruned of them (:func:`prune`): never installed into the
    environment itself. Cached by (``names``, the environment's pins).

    Raises:
      ListingFailure: the environment's packages cannot be listed.
      DepsFailure: they cannot be resolved or installed with the environment's versions.
    """
    freeze = subprocess.run(
        [uv(), "pip", "freeze", "--python", str(python)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "UV_PYTHON_DOWNLOADS": "never"},
    )
    if freeze.returncode != 0:
        raise ListingFailure(f"the environment's packages cannot be listed: {_tail(freeze)}")
    pins = [line for line in freeze.stdout.splitlines() if "==" in line]
    key = hashlib.sha256(json.dumps([names, pins]).encode()).hexdigest()[:16]
    constraints = tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8")  # noqa: SIM115 (closed below, removed after the install)
    with constraints:
        constraints.write("\n".join(pins) + "\n")
    try:
        return install_into(
            root / key,
            python,
            ["-c", constraints.name, *names],
            timeout,
            after=lambda folder: prune(folder, {_canonical(pin.split("==", 1)[0]) for pin in pins}),
        )
    finally:
        os.unlink(constraints.name)


def install_missing(python: Path, folder: Path, cache_dir: Path, timeout: float) -> Path | None:
    """A folder with the requirements of ``folder``'s distributions that the
    environment lacks (None when it lacks none).

    Raises:
      DepsFailure: they cannot be resolved or installed with the environment's versions.
    """
    missing = unmet(python, folder, timeout)
    if not missing:
        return None
    try:
        return install_beside(python, missing, cache_dir / "deps", timeout)
    except ListingFailure:
        raise
    except DepsFailure as exc:
        raise DepsFailure(f"its missing requirements ({', '.join(missing)}) cannot be installed: {exc}") from None


def install_into(
    target: Path, python: Path, args: list[str], timeout: float, after: Callable[[Path], None] | None = None
) -> Path:
    """``uv pip install --target`` of ``args`` for ``python``'s interpreter,
    whole or not at all: into a fresh folder beside ``target``, ``after`` it,
    marked complete and renamed into place. An existing complete ``target``
    is returned as it is.

    Raises:
      DepsFailure: uv failed (its error line) or timed out.
    """
    if (target / ".complete").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{target.name[:24]}-", dir=target.parent))
    try:
        proc = subprocess.run(
            [uv(), "pip", "install", "--quiet", "--python", str(python), "--target", str(partial), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "UV_PYTHON_DOWNLOADS": "never", "UV_NO_PROGRESS": "1"},
        )
        if proc.returncode != 0:
            raise DepsFailure(_tail(proc))
        if after:
            after(partial)
        (partial / ".complete").write_text(" ".join(args) + "\n", encoding="utf-8")
        shutil.rmtree(target, ignore_errors=True)
        os.replace(partial, target)
    except subprocess.TimeoutExpired:
        raise DepsFailure(f"uv timed out after {timeout:.0f} s") from None
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return target
