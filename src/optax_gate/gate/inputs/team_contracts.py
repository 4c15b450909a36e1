"""The team's own contracts where they live (``gate --contracts DIR``, repeatable): contract modules in the
team's repository, run beside ours.

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from optax_gate.gate.base.run_record import ContractResult
from optax_gate.gate.inputs import validate

PATTERN = "test_*.py"


def label(folder: Path) -> str:
    """The folder as the user typed it, without a trailing slash or ``./``."""
    text = (getattr(folder, "typed", "") or str(folder)).rstrip("/")
    return text[2:] if text.startswith("./") else text


def _modules(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob(PATTERN) if p.is_file() and "__pycache__" not in p.parts)


def _compile_error(folder: Path, module: Path) -> str | None:
    """``FOLDER/test_x.py:LINE: SyntaxError: MESSAGE`` when ``module`` does
    not compile (or cannot be read), else None; the module is not run."""
    where = f"{label(folder)}/{module.relative_to(folder).as_posix()}"
    try:
        compile(module.read_bytes(), where, "exec", dont_inherit=True)
    except SyntaxError as exc:  # also IndentationError and undecodable bytes ("(unicode error) ...")
        return f"{where}{f':{exc.lineno}' if exc.lineno else ''}: {type(exc).__name__}: {exc.msg}"
    except (ValueError, OSError) as exc:  # null bytes (older Pythons), an unreadable file
        return f"{where}: {type(exc).__name__}: {exc}"
    return None


def check(folders: Iterable[Path] | None) -> list[Path]:
    """The ``--contracts`` folders, checked; [] without any.

    Raises:
      validate.InvalidInput: a folder that does not exist, is a file, has
        no ``test_*.py`` module in it (or below it), or has one that does not
        compile (named ``FOLDER/test_x.py:LINE: SyntaxError: MESSAGE``).
    """
    out = []
    for folder in folders or []:
        if not folder.exists():
            raise validate.InvalidInput(f"--contracts {validate.shown(folder)} does not exist")
        if not folder.is_dir():
            raise validate.InvalidInput(f"--contracts {validate.shown(folder)} is not a folder")
        modules = _modules(folder)
        if not modules:
            raise validate.InvalidInput(f"--contracts {validate.shown(folder)} holds no contract module ({PATTERN})")
        for module in modules:
            error = _compile_error(folder, module)
            if error:
                raise validate.InvalidInput(
                    f"--contracts {validate.shown(folder)}: a contract module does not compile: {error}"
                )
        out.append(folder)
    return out


def pytest_args(folders: list[Path], project_root: Path) -> list[str]:
    """Arguments that add ``folders`` to a pytest run started in ``project_root``."""
    if not folders:
        return []
    root = Path(project_root).absolute()
    return ["-c", str(root / "pyproject.toml"), "--rootdir", str(root), *(str(Path(f).absolute()) for f in folders)]


def rename(contracts: dict[str, ContractResult], folders: list[Path], ours: str) -> dict[str, ContractResult]:
    """``contracts`` (id -> record) with the ids of the team's contracts
    (those not under ``ours``, e.g. ``tests/contracts``) prefixed with their
    folder's :func:`label` and marked ``team``; the first folder holding the
    module wins."""
    if not folders:
        return contracts
    out: dict[str, ContractResult] = {}
    for cid, rec in contracts.items():
        module = cid.split("::", 1)[0]
        owner = None if cid.startswith(ours + "/") else next((f for f in folders if (Path(f) / module).is_file()), None)
        if owner is None:
            out[cid] = rec
        else:
            out[f"{label(owner)}/{cid}"] = {**rec, "team": label(owner)}
    return out


def digest(folders: list[Path]) -> str:
    """SHA-256 over every file of ``folders`` (path inside its folder, bytes),
    in order; caches and compiled files left out."""
    h = hashlib.sha256()
    for i, folder in enumerate(folders):
        for path in sorted(
            p
            for p in Path(folder).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and not p.name.endswith((".pyc", ".obtained.yml"))
        ):
            h.update(f"{i}:{path.relative_to(folder).as_posix()}\0".encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def failing_at_baseline(baseline_contracts: dict[str, ContractResult]) -> list[str]:
    """Ids of the team's contracts that failed or errored in the baseline."""
    return sorted(
        cid for cid, rec in baseline_contracts.items() if rec.get("team") and rec.get("outcome") in ("failed", "error")
    )
