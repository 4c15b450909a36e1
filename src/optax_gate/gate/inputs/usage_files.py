"""The files under ``--usage`` and their syntax trees, never failing open.

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import ast
import dataclasses
import errno
import io
import json
import os
import re
import stat
import tokenize
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from optax_gate.gate.base import model
from optax_gate.gate.inputs.typed_path import INVOKED_FROM

SUFFIXES = (".py", ".ipynb")
#: Folders never scanned for the team's code: environments, caches, reports.
SKIPPED_FOLDERS = ("site-packages", "__pycache__", "node_modules", "venv", "reports")
#: Cell magics whose body is Python: the magic line becomes ``pass`` and the rest is parsed.
PYTHON_CELL_MAGICS = ("%%time", "%%timeit", "%%capture", "%%prun")


#: How a notebook cell is named after its file: ``nb.ipynb:code cell 2 (cell 3 of the notebook)``.
CELL = ":code cell "


def cell_name(code: int, cell: int) -> str:
    """A notebook cell's name a reader finds either way: the ``code``-th code
    cell (markdown and raw cells not counted, as a reader of the code counts)
    and its place among all the notebook's cells (``cell``, as editors number them)."""
    return f"{CELL[1:]}{code} (cell {cell} of the notebook)"


@dataclasses.dataclass(frozen=True)
class NotScanned:
    """A file (``notebook.ipynb:code cell N (cell M of the notebook)`` for one cell, ``folder/`` for a
    folder) under ``--usage`` that was not scanned, and why. ``content``: its
    bytes when they could be read (for :func:`may_use`), else None."""

    path: str
    reason: str
    content: bytes | None = dataclasses.field(default=None, repr=False, compare=False)

    def to_json(self) -> model.NotScanned:
        """The entry as report.json lists it."""
        return {"path": self.path, "reason": self.reason}


@dataclasses.dataclass
class Parsed:
    """The scan of the ``--usage`` paths: ``trees`` per scanned file (display
    name -> ``[(tree, label prefix)]``), the files found and those not scanned."""

    trees: dict[str, list[tuple[ast.AST, str]]]
    found: int
    not_scanned: list[NotScanned]

    @property
    def scanned(self) -> int:
        """Files scanned whole (a notebook with a cell that does not parse is not)."""
        partial = {n.path.split(CELL, 1)[0] for n in self.not_scanned}
        return sum(1 for name in self.trees if name not in partial)


def may_use(entry: NotScanned, public_path: str) -> bool:
    """Whether ``entry`` (not scanned) can hold a use of ``public_path``: its
    last name as a whole word of the file's bytes (``adam`` is not in
    ``optax.adamax(1e-3)``, ``adamw``)."""
    if entry.content is None:
        return True
    name = public_path.rsplit(".", 1)[-1].encode("ascii", "replace")
    return re.search(rb"(?<![\w])" + re.escape(name) + rb"(?![\w])", entry.content) is not None


def user_folder() -> str:
    """The folder the user stood in when they started the gate (``$OPTAX_GATE_INVOKED_FROM``, which
    ``./noxw`` exports; ``optax_gate.gate.inputs.typed_path``), else the current folder: the files of the scan
    are named relative to it."""
    return os.path.abspath(os.environ.get(INVOKED_FROM) or os.getcwd())


def display_name(path: Path, base: str) -> str:
    """``path`` named for the report: relative to ``base`` (the user's folder), ``../`` steps included
    when it lies outside, so a name is never absolute and never ambiguous between ``--usage`` paths
    (``src/train.py``, not ``train.py`` of ``--usage src``)."""
    return Path(os.path.relpath(os.path.abspath(path), base)).as_posix()


def _files(paths: Iterable[Path], base: str | None = None) -> tuple[list[tuple[Path, str]], list[NotScanned]]:
    """``(file, display name)`` of every ``.py`` / ``.ipynb`` under ``paths``,
    sorted, and the folders that could not be listed. Names are
    :func:`display_name` relative to ``base`` (default :func:`user_folder`)."""
    paths = [Path(p) for p in paths]
    base = base or user_folder()
    out: list[tuple[Path, str]] = []
    problems: list[NotScanned] = []
    for root in paths:
        if not root.is_dir():
            out.append((root, display_name(root, base)))
            continue
        found: list[Path] = []
        seen = {os.path.realpath(root)}

        def unreadable(exc: OSError, root: Path = root) -> None:
            problems.append(
                NotScanned(
                    display_name(Path(exc.filename or root), base) + "/",
                    f"unreadable folder: {(exc.strerror or str(exc)).lower()}",
                )
            )

        for folder, dirs, files in os.walk(root, onerror=unreadable, followlinks=True):
            keep = []
            for d in sorted(dirs):
                real = os.path.realpath(os.path.join(folder, d))
                if d.startswith(".") or d in SKIPPED_FOLDERS or real in seen:
                    continue
                seen.add(real)
                keep.append(d)
            dirs[:] = keep
            found += [Path(folder) / f for f in files if f.endswith(SUFFIXES)]
        out += [(f, display_name(f, base)) for f in sorted(found)]
    return out, problems


def holds_code(folder: Path) -> bool:
    """Whether ``folder`` holds a ``.py`` or ``.ipynb`` file the scan would find (or a subfolder it
    cannot list: that may hold one)."""
    files, problems = _files([folder])
    return bool(files or problems)


def read_file(path: Path) -> bytes | str:
    """The bytes of ``path``, or the reason they cannot be read (a named pipe, a device or a socket is
    not read at all: reading a pipe waits for a writer that never comes)."""
    try:
        if path.exists() and not path.is_file():
            return f"not a regular file ({_kind(path)})"
        return path.read_bytes()
    except OSError as exc:
        if path.is_symlink() and exc.errno == errno.ELOOP:
            return "symlink loop"
        if path.is_symlink() and exc.errno == errno.ENOENT:
            return f"dangling symlink (to {os.readlink(path)})"
        if isinstance(exc, PermissionError):
            return "unreadable: permission denied"
        return f"unreadable: {(exc.strerror or str(exc)).lower()}"


def _syntax(exc: SyntaxError) -> str:
    return f"syntax error at line {exc.lineno}: {exc.msg}" if exc.lineno else f"syntax error: {exc.msg}"


def _tree(code: str) -> ast.AST | str:
    """The syntax tree of ``code``, or why it has none."""
    try:
        return ast.parse(code)
    except SyntaxError as exc:
        return _syntax(exc)
    except (ValueError, RecursionError, MemoryError) as exc:  # null bytes; code nested too deep for the parser
        return f"cannot parse: {type(exc).__name__}: {exc}"


def _python(name: str, data: bytes) -> list[tuple[ast.AST, str]] | NotScanned:
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except SyntaxError as exc:  # an unknown coding cookie, or bytes not utf-8 in the first two lines
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as undecodable:
            return NotScanned(name, f"undecodable bytes: not utf-8 at byte {undecodable.start}", data)
        return NotScanned(name, _syntax(exc), data)
    except UnicodeDecodeError as exc:
        return NotScanned(name, f"undecodable bytes: not {exc.encoding} at byte {exc.start}", data)
    tree = _tree(text)
    return NotScanned(name, tree, data) if isinstance(tree, str) else [(tree, f"{name}:")]


def _cell_code(cell: dict[str, Any]) -> str | None:
    src = cell.get("source", "")
    text = "".join(src) if isinstance(src, list) else src
    return text if isinstance(text, str) else None


def _python_line(line: str) -> str:
    """A notebook line with its IPython magic or shell command made Python of
    the same indentation (``!pip install x`` under an ``if`` -> ``pass``;
    ``files = !ls`` -> ``files = None``), so the cell parses and its line
    numbers stay."""
    stripped = line.lstrip()
    indent = line[: len(line) - len(stripped)]
    if stripped.startswith(("%", "!")):
        return indent + "pass"
    assigned = _SHELL_ASSIGNMENT.match(stripped)
    return f"{indent}{assigned.group(1)} = None" if assigned else line


def _python_lines(lines: list[str]) -> list[str]:
    """:func:`_python_line` of each line; a magic or shell line that ends in a
    backslash goes on in the next line (IPython joins them: ``!pip install \\``
    then ``    optax``), so each continuation line becomes ``pass`` too, at the
    first line's indentation. A Python line's own backslash is left to Python."""
    out: list[str] = []
    indent: str | None = None  # the indentation of the magic line being continued; None when none is
    for line in lines:
        if indent is not None:
            out.append(indent + "pass")
        else:
            out.append(_python_line(line))
            if out[-1] != line:  # a magic or shell line
                indent = line[: len(line) - len(line.lstrip())]
        if not line.rstrip().endswith("\\"):
            indent = None
    return out


_SHELL_ASSIGNMENT = re.compile(r"([A-Za-z_]\w*)\s*=\s*[!%]")


def _kind(path: Path) -> str:
    mode = path.stat().st_mode
    return (
        "a named pipe"
        if stat.S_ISFIFO(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "a folder"
        if stat.S_ISDIR(mode)
        else "not a file"
    )


def _notebook(name: str, data: bytes) -> tuple[list[tuple[ast.AST, str]], list[NotScanned]]:
    """A notebook's code cells: IPython magics and shell lines become Python
    (:func:`_python_line`) so line numbers stay those of the cell."""
    if not data.strip():  # an empty notebook (a new one, never saved) holds no code: it uses nothing
        return [], []
    try:
        nb = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return [], [NotScanned(name, f"undecodable bytes: not utf-8 at byte {exc.start}", data)]
    except json.JSONDecodeError as exc:
        return [], [NotScanned(name, f"not a JSON notebook: {exc.msg} (line {exc.lineno}, column {exc.colno})", data)]
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        return [], [NotScanned(name, "not a notebook: no list of cells (nbformat 4)", data)]
    trees, problems = [], []
    code_cells = 0
    for i, cell in enumerate(cells, start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        code_cells += 1
        where, text = f"{name}:{cell_name(code_cells, i)}", _cell_code(cell)
        if text is None:
            problems.append(NotScanned(where, "not a notebook cell: its source is not text", data))
            continue
        lines = text.splitlines()
        magic = lines[0].split()[0] if lines and lines[0].startswith("%%") and lines[0].split() else ""
        if magic and magic not in PYTHON_CELL_MAGICS:
            problems.append(NotScanned(where, f"cell magic {magic}: not Python", text.encode("utf-8", "replace")))
            continue
        code = "\n".join(_python_lines(lines))
        tree = _tree(code)
        if isinstance(tree, str):
            problems.append(NotScanned(where, tree, text.encode("utf-8", "replace")))
        else:
            trees.append((tree, f"{where}:"))
    return trees, problems


def parse(paths: Iterable[Path], base: Path | None = None) -> Parsed:
    """Find and parse every ``.py`` / ``.ipynb`` file under ``paths`` (files or
    folders). Never raises for a file: each one is parsed or listed in
    ``not_scanned`` with its reason (see the module docstring)."""
    files, not_scanned = _files(paths, os.path.abspath(base) if base is not None else None)
    trees: dict[str, list[tuple[ast.AST, str]]] = {}
    for path, name in files:
        data = read_file(path)
        if isinstance(data, str):  # a symlink to nothing holds no code (Python cannot import or run it either)
            not_scanned.append(
                NotScanned(name, data, b"" if data == "symlink loop" or data.startswith("dangling symlink") else None)
            )
            continue
        try:
            if path.suffix == ".ipynb":
                parts, problems = _notebook(name, data)
                not_scanned += problems
                if parts or not problems:
                    trees[name] = parts
            else:
                result = _python(name, data)
                if isinstance(result, NotScanned):
                    not_scanned.append(result)
                else:
                    trees[name] = result
        except Exception as exc:  # fail closed: a file the scanner trips on is listed, never dropped
            not_scanned.append(NotScanned(name, f"scanner error: {type(exc).__name__}: {exc}", data))
    return Parsed(trees, len(files), not_scanned)
