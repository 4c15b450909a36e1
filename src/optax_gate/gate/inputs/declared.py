"""The packages the team's own project declares, read from its ``pyproject.toml`` and ``requirements*.txt``
(never installed or run).

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

#: How many folders above a ``--usage`` path are searched for the project's root.
LEVELS = 4
_REQUIREMENTS = "requirements*.txt"


def _names(specs: Iterable[str]) -> list[str]:
    """Canonical names of PEP 508 requirement strings (an invalid one is skipped)."""
    out: list[str] = []
    for spec in specs:
        try:
            out.append(canonicalize_name(Requirement(spec).name))
        except (InvalidRequirement, TypeError):
            continue
    return out


def _pyproject(path: Path) -> dict[str, str]:
    """``{name: where}`` of a ``pyproject.toml``: ``where`` says the table
    (``pyproject.toml [project.optional-dependencies] test``)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return {}
    out: dict[str, str] = {}
    project = found if isinstance(found := data.get("project"), dict) else {}
    for name in _names(project.get("dependencies") or []):
        out.setdefault(name, f"{path.name} [project] dependencies")
    for table, key in (
        (project.get("optional-dependencies"), "project.optional-dependencies"),
        (data.get("dependency-groups"), "dependency-groups"),
    ):
        for group, specs in (table or {}).items() if isinstance(table, dict) else ():
            for name in _names(s for s in specs or [] if isinstance(s, str)):
                out.setdefault(name, f"{path.name} [{key}] {group}")
    return out


def _requirements(path: Path) -> dict[str, str]:
    """``{name: where}`` of a requirements file (``-r``/``-e`` lines and options skipped)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return {}
    specs = [re.split(r"\s+#", line.strip(), maxsplit=1)[0] for line in lines]
    return {name: path.name for name in _names(s for s in specs if s and not s.startswith(("-", "#")))}


def _folders(path: Path) -> list[Path]:
    """``path``'s folder and those above it, up to the project's root (see the module docstring)."""
    folder = path if path.is_dir() else path.parent
    out = []
    for _ in range(LEVELS + 1):
        out.append(folder)
        if (folder / "pyproject.toml").is_file() or (folder / ".git").exists() or folder.parent == folder:
            break
        folder = folder.parent
    return out


def packages(paths: Iterable[Path]) -> dict[str, str]:
    """``{canonical package name: where it is declared}`` for the project of
    the ``--usage`` ``paths`` (see the module docstring); empty when none is found."""
    out: dict[str, str] = {}
    seen: set[Path] = set()
    for path in paths:
        path = Path(path).absolute()
        below = sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith(".")) if path.is_dir() else []
        for folder in [*_folders(path), *below]:
            if folder in seen:
                continue
            seen.add(folder)
            found = [folder / "pyproject.toml"] if (folder / "pyproject.toml").is_file() else []
            found += sorted(p for p in folder.glob(_REQUIREMENTS) if p.is_file())
            for file in found:
                declared = _pyproject(file) if file.name == "pyproject.toml" else _requirements(file)
                for name, where in declared.items():
                    out.setdefault(name, f"{folder.name}/{where}" if folder in below else where)
    return out
