"""Which mutant families must be proven again: each family's inputs digested and compared with the record of its
last proof (``proven.json`` beside this module, kept in the repository).

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import ast
import hashlib
import json
import sys
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from optax_gate.gate.base import atomic

#: The record of the last proof: family -> {"inputs": sha256 of its input files, "files": {path: hash}} (:func:`entry`).
RECORD = "src/optax_gate/mutants/proven.json"
#: Files every family's proof depends on, relative to the project root (a missing one counts as missing).
SHARED_FILES = (
    "pyproject.toml",
    "noxfile.py",
    "requirements-lock.txt",
    "tests/contracts/known_defects.toml",
    "tests/contracts/moved_behaviour.toml",
)
#: Modules every family's proof runs through (the check, the pytest plugins, the registry).
SHARED_MODULES = (
    "optax_gate.mutants",
    "optax_gate.mutants.__main__",
    "optax_gate.mutants.plugin",
    "optax_gate.pytest_plugin",
)


def module_file(name: str, root: Path) -> Path | None:
    """The file of this project's module ``name`` (``optax_gate.*`` under ``src/``, ``tests.*`` at the
    root), a package's ``__init__.py``; None for another module (optax, the standard library)."""
    parts = name.split(".")
    if parts[0] == "optax_gate":
        base = root / "src" / Path(*parts)
    elif parts[0] == "tests":
        base = root / Path(*parts)
    else:
        return None
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _module_name(path: Path, root: Path) -> str:
    rel = path.relative_to(root / "src" if path.is_relative_to(root / "src") else root).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, root: Path) -> set[Path]:
    """The files of this project's modules that ``path`` imports anywhere in its body (relative imports
    resolved), with the ``__init__.py`` of each package on the way."""
    tree = ast.parse(path.read_bytes(), filename=str(path))
    package = _module_name(path, root)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            names.append(base)
            names += [f"{base}.{alias.name}" for alias in node.names]  # a submodule, where it is one
    out: set[Path] = set()
    for name in names:
        parts = name.split(".")
        for k in range(1, len(parts) + 1):  # each package on the way runs its __init__
            found = module_file(".".join(parts[:k]), root)
            if found is not None:
                out.add(found)
    return out


def closure(start: Iterable[Path], root: Path) -> set[Path]:
    """``start`` and every project file it imports, transitively."""
    seen: set[Path] = set()
    todo = [p for p in start if p.suffix == ".py"]
    seen.update(start)
    while todo:
        path = todo.pop()
        for found in imported(path, root):
            if found not in seen:
                seen.add(found)
                todo.append(found)
    return seen


def inputs(area: str, contracts: str, mutant_modules: Iterable[str], root: Path) -> list[Path] | None:
    """The input files of family ``area`` (see the module docstring), sorted; None when one lies outside
    the project (a team's ``--contracts`` folder, whose proof is not recorded here).

    Args:
      area: the family's name.
      contracts: its contract module (``registry.AREAS``), relative to ``root`` or absolute.
      mutant_modules: the names of the modules that define its mutants (``sys.modules`` holds them).
      root: the project root.
    """
    root = root.resolve()
    module = (root / contracts).resolve()
    if not module.is_relative_to(root):
        return None
    start = {module}
    folder = module.parent
    while folder.is_relative_to(root / "tests"):  # the conftest.py and __init__.py files pytest loads on the way
        start.update(p for p in (folder / "conftest.py", folder / "__init__.py") if p.is_file())
        folder = folder.parent
    datadir = module.with_suffix("")
    if datadir.is_dir():
        start.update(p for p in datadir.rglob("*") if p.is_file())
    for name in (*mutant_modules, *SHARED_MODULES):
        loaded = sys.modules.get(name)  # a team's mutants file, loaded by its path
        file = module_file(name, root) or (
            Path(loaded.__file__).resolve() if loaded is not None and loaded.__file__ else None
        )
        if file is None or not file.is_relative_to(root):
            return None
        start.add(file)
    start.update(root / f for f in SHARED_FILES)
    return sorted(closure(start, root))


#: The ledgers of :data:`SHARED_FILES`, each read as the entries a family meets (:func:`contents`).
LEDGERS = ("tests/contracts/known_defects.toml", "tests/contracts/moved_behaviour.toml")
#: ``[tool.*]`` tables of ``pyproject.toml`` that configure tools no contract run starts (:func:`contents`).
NOT_RUN = ("ruff", "mypy")


def contents(files: Iterable[Path], root: Path) -> dict[Path, bytes | None]:
    """Each file's bytes as a family's proof depends on them (None: missing): a file's own bytes; a ledger of
    :data:`LEDGERS`, the entries the family can meet (see the module docstring), as sorted JSON; another TOML
    file (``pyproject.toml``), its parsed tables as sorted JSON, so that a comment changes nothing."""
    root = root.resolve()
    paths = list(files)
    out: dict[Path, bytes | None] = {p: p.read_bytes() if p.is_file() else None for p in paths}
    rels = {p.relative_to(root).as_posix() for p in paths}
    names = b"\n".join(
        b for p, b in out.items() if b is not None and p.relative_to(root).as_posix() not in LEDGERS
    ).decode("utf-8", "replace")
    for path in paths:
        rel, raw = path.relative_to(root).as_posix(), out[path]
        if path.suffix != ".toml" or raw is None:
            continue
        try:
            data = tomllib.loads(raw.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            continue  # counts whole
        if rel not in LEDGERS:  # another TOML file (pyproject.toml): its tables, without its comments and layout
            tool = data.get("tool")
            if isinstance(tool, dict):
                data = {**data, "tool": {k: v for k, v in tool.items() if k not in NOT_RUN}}
            out[path] = b"toml tables\0" + json.dumps(data, sort_keys=True, default=str).encode()
            continue
        if rel.endswith("known_defects.toml"):
            view: Any = {k: v for k, v in data.items() if k in names}
        else:  # in any order: rebaseline rewrites the ledger in its own
            met = [
                e
                for e in data.get("moved", [])
                if isinstance(e, dict) and str(e.get("contract", "")).partition("::")[0] in rels
            ]
            view = sorted(met, key=lambda e: json.dumps(e, sort_keys=True, default=str))
        out[path] = b"ledger entries\0" + json.dumps(view, sort_keys=True).encode()
    return out


def _digest(read: dict[Path, bytes | None], root: Path) -> str:
    h = hashlib.sha256()
    for path, data in read.items():
        h.update(path.relative_to(root.resolve()).as_posix().encode() + b"\0")
        h.update(b"\0missing\0" if data is None else data)
        h.update(b"\0")
    return h.hexdigest()


def _hashes(read: dict[Path, bytes | None], root: Path) -> dict[str, str]:
    return {
        path.relative_to(root.resolve()).as_posix(): "missing"
        if data is None
        else hashlib.sha256(data).hexdigest()[:16]
        for path, data in read.items()
    }


def digest(files: Iterable[Path], root: Path) -> str:
    """sha256 over each file's path relative to ``root`` and its :func:`contents` (a missing file as missing)."""
    return _digest(contents(files, root), root)


def file_hashes(files: Iterable[Path], root: Path) -> dict[str, str]:
    """Each file's path relative to ``root`` -> the first 16 hex digits of the sha256 of its :func:`contents`
    ("missing")."""
    return _hashes(contents(files, root), root)


def entry(files: list[Path], root: Path) -> dict[str, Any]:
    """A family's record: ``{"inputs": digest, "files": {path: hash}}``, each input read once."""
    read = contents(files, root)
    return {"inputs": _digest(read, root), "files": _hashes(read, root)}


def changed_inputs(recorded: dict[str, Any] | None, now: dict[str, Any]) -> list[str]:
    """The input files of a family that differ from its record (changed, new or gone; sorted); every file
    where there is no record."""
    old = (recorded or {}).get("files")
    old = old if isinstance(old, dict) else {}  # a record of an older form: every file
    new: dict[str, str] = now["files"]
    return sorted({f for f in new if old.get(f) != new[f]} | set(old) - set(new))


def read_record(root: Path) -> dict[str, dict[str, Any]]:
    """The record of the last proofs, family -> :func:`entry` ({} when there is none or it cannot be read:
    every family runs)."""
    try:
        data = json.loads((root / RECORD).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def write_record(root: Path, proven: dict[str, dict[str, Any]]) -> None:
    """Add (or replace) the entries of ``proven`` in the record, written atomically, one family a line
    (a proof moves that family's line in a diff)."""
    record = {**read_record(root), **proven}
    lines = [f" {json.dumps(area)}: {json.dumps(record[area], sort_keys=True)}" for area in sorted(record)]
    atomic.write_text(root / RECORD, "{\n" + ",\n".join(lines) + "\n}\n")
