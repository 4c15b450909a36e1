"""The README and the pages of ``docs/`` hold no dead link and no command that
does not exist: every relative link resolves (to a file, and to a heading of
it when it names one), every ``./noxw -s NAME`` names a nox session of
``noxfile.py``, and every option shown after ``./noxw -s gate --`` or
``./noxw -s matrix --`` is one that command accepts."""

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
