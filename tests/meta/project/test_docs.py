"""The README and the pages of ``docs/`` hold no dead link and no command that
does not exist: every relative link resolves (to a file, and to a heading of
it when it names one), every ``./noxw -s NAME`` names a nox session of
``noxfile.py``, every option shown after ``./noxw -s gate --`` or
``./noxw -s matrix --`` is one that command accepts, and every module path the
module map and the contributor's guide name exists."""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path
from typing import Any

import pytest

from optax_gate.gate import cli_parser

ROOT = Path(__file__).resolve().parents[3]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
NOXW = re.compile(r"\./noxw\s+-s\s+([\w-]+)(?:\s+--\s+([^`\n]*))?")


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"`", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    return {_slug(m.group(1)) for m in re.finditer(r"(?m)^#{1,6}\s+(.+)$", page.read_text(encoding="utf-8"))}


def _sessions() -> set[str]:
    """Names of the nox sessions: each ``@nox.session``-decorated function, by its ``name=`` or its own name."""
    names: set[str] = set()
    for node in ast.walk(ast.parse((ROOT / "noxfile.py").read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef):
            for deco in node.decorator_list:
                if isinstance(deco, ast.Call) and ast.unparse(deco.func) == "nox.session":
                    given = [
                        str(k.value.value)
                        for k in deco.keywords
                        if k.arg == "name" and isinstance(k.value, ast.Constant)
                    ]
                    names.add(given[0] if given else node.name)
    return names


def _options(command: str) -> set[str]:
    sub = next(a for a in cli_parser.parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {s for action in sub.choices[command]._actions for s in action.option_strings}


def test_the_docs_exist_and_the_readme_links_each_page() -> None:
    assert len(PAGES) > 1, "no docs/ pages"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    unlinked = [p.name for p in PAGES[1:] if f"docs/{p.name}" not in readme]
    assert not unlinked, f"docs pages the README does not link: {unlinked}"


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_relative_link_resolves(page: Any) -> None:
    dead = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            dead.append(f"{target} (no such file)")
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            dead.append(f"{target} (no such heading)")
    assert not dead, f"{page.name}: dead links: {dead}"


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_every_command_shown_exists(page: Any) -> None:
    sessions, wrong = _sessions(), []
    for session, rest in NOXW.findall(page.read_text(encoding="utf-8")):
        if session not in sessions:
            wrong.append(f"./noxw -s {session}: no such session (sessions: {sorted(sessions)})")
        elif session in ("gate", "matrix") and rest:
            known = _options(session)
            wrong += [
                f"./noxw -s {session} -- {opt}: no such option"
                for opt in re.findall(r"(?<![\w-])--[a-z][\w-]*", re.sub(r'"[^"]*"', "", rest))
                if opt not in known
            ]  # not in a quoted CMD
    assert not wrong, f"{page.name}: {wrong}"


#: The pages that name the project's modules by their path: the module map and the contributor's guide.
MODULE_PAGES = [ROOT / "CONTRIBUTING.md", ROOT / "docs" / "architecture.md", ROOT / "docs" / "module-notes.md"]
#: Where a path of those pages may start: the project, ``src``, the package, its kit, its gate, the mutants, the
#: contract and meta test folders (``run/results_cache.RUN_MODULES`` is read under ``src/optax_gate/gate``).
PATH_BASES = [
    ROOT,
    ROOT / "src",
    ROOT / "src" / "optax_gate",
    ROOT / "src" / "optax_gate" / "kit",
    ROOT / "src" / "optax_gate" / "gate",
    ROOT / "src" / "optax_gate" / "mutants",
    ROOT / "tests" / "contracts",
    ROOT / "tests" / "meta",
]
PATH_TOKEN = re.compile(r"`([A-Za-z0-9_.][A-Za-z0-9_./-]*/[A-Za-z0-9_./-]*)`")
FILE_SUFFIXES = (".py", ".md", ".txt", ".yml", ".json", ".toml", ".in", ".svg", ".html", ".ipynb")


def _defines(module: Path, name: str) -> bool:
    """Whether ``module`` defines ``name`` at its top level (a function, a class or an assignment)."""
    for node in ast.parse(module.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return True
    return False


def _resolves(token: str) -> bool:
    """``token`` (``gate/report/table_cell.py``, ``reuse/results_cache.RUN_MODULES``, ``kit/corners``) names a
    file or folder under one of :data:`PATH_BASES`, and a ``.NAME`` after a module names one of its definitions."""
    path, name = token, None
    dotted = re.fullmatch(r"(.*/[a-z_0-9]+)\.([A-Za-z_]\w*)", token)
    if dotted and not token.endswith(FILE_SUFFIXES):
        path, name = dotted.group(1), dotted.group(2)
    for base in PATH_BASES:
        for found in (base / path, base / f"{path}.py"):
            if found.exists() and (name is None or (found.suffix == ".py" and _defines(found, name))):
                return True
    return False


@pytest.mark.parametrize("page", MODULE_PAGES, ids=lambda p: p.name)
def test_every_module_path_a_page_names_exists(page: Path) -> None:
    """A module, folder or ``module.NAME`` written as a path in backticks outside code blocks exists where the
    page says (a placeholder in capitals, ``gate/NAME``, or with ``<``, ``*``, ``{`` is not a path)."""
    text = re.sub(r"```.*?```", lambda m: "\n" * m.group(0).count("\n"), page.read_text(encoding="utf-8"), flags=re.S)
    dead = [
        f"{page.name}:{text[: m.start()].count(chr(10)) + 1}: `{m.group(1)}`"
        for m in PATH_TOKEN.finditer(text)
        if not any(c in m.group(1) for c in "<*{")
        and not re.search(r"(^|/)[A-Z]+(/|$)", m.group(1))
        and not _resolves(m.group(1).rstrip("/."))
    ]
    assert not dead, "paths that name no file, folder or definition: " + "; ".join(dead)
