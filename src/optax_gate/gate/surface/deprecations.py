"""Whether a function or class is deprecated, read statically (for the ``deprecated`` rows of the API surface
diff, ``optax_gate.gate.surface.public_api``).

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path
from typing import Any

CATEGORIES = ("DeprecationWarning", "FutureWarning", "PendingDeprecationWarning")
_DIRECTIVE = re.compile(r"^\s*\.\.\s+deprecated::?\s*(.*)$", re.MULTILINE)


@functools.lru_cache(maxsize=256)
def _module_tree(path: str) -> ast.Module | None:
    try:
        return ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return None


def _node(obj: Any) -> ast.AST | None:
    """The ``def`` / ``class`` node of ``obj`` in its file (by line)."""
    tree = _module_tree(str(obj.filepath)) if getattr(obj, "filepath", None) else None
    if tree is None or obj.lineno is None:
        return None
    for node in ast.walk(tree):
        if (
            isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and node.name == obj.name
            and (node.lineno == obj.lineno or any(d.lineno == obj.lineno for d in node.decorator_list))
        ):
            return node
    return None


def _last_name(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _warn_calls(body: ast.AST) -> list[str]:
    """One phrase per deprecation warning raised in ``body``."""
    found: list[str] = []

    def visit(node: ast.AST, conditional: bool) -> None:
        if isinstance(node, ast.Call) and _last_name(node.func) == "warn":
            category = (
                node.args[1]
                if len(node.args) > 1
                else next((k.value for k in node.keywords if k.arg == "category"), None)
            )
            if category is not None and _last_name(category) in CATEGORIES:
                message = node.args[0] if node.args else None
                text = ""
                if isinstance(message, ast.Constant) and isinstance(message.value, str):
                    text = f": {message.value[:120]}"
                elif isinstance(message, ast.JoinedStr):  # an f-string: its literal parts
                    text = (
                        ": "
                        + "".join(
                            v.value for v in message.values if isinstance(v, ast.Constant) and isinstance(v.value, str)
                        )[:120]
                    )
                found.append(f"warns {_last_name(category)}{' under a condition' if conditional else ''}{text}")
        for child in ast.iter_child_nodes(node):
            visit(child, conditional or isinstance(node, (ast.If, ast.IfExp)))

    visit(body, False)
    return found


def reason(obj: Any) -> str | None:
    """Why the griffe function or class ``obj`` reads as deprecated, or None."""
    for decorator in getattr(obj, "decorators", None) or []:
        text = str(decorator.value)
        if text.split("(", 1)[0].rsplit(".", 1)[-1] == "deprecated":
            return f"@{text[:160]}"
    doc = obj.docstring.value if getattr(obj, "docstring", None) else ""
    directive = _DIRECTIVE.search(doc or "")
    if directive:
        return f".. deprecated:: {directive.group(1).strip()}".strip()
    node = _node(obj)
    if isinstance(node, ast.ClassDef):
        node = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    if node is None:
        return None
    found = _warn_calls(node)
    return found[0] if found else None
