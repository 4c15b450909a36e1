"""Default values of parameters, told statically (for the API surface diff,
``optax_gate.gate.surface.public_api``): a default written differently but equal by
value is no change.

:func:`constant` reads a default's source text as a literal
(``ast.literal_eval``) or, for a name or attribute chain (``EPS``,
``consts.TINY``), follows it through the package's static tree (griffe
objects, ``surface.StaticTree``: aliases, other modules, other constants) to
a module-level assignment of a literal. :func:`same_value` compares two
parameters by those values (``100`` equals ``100.0``; ``True`` never equals
``1``), and by their text when a value cannot be told. Nothing is imported.
"""

from __future__ import annotations

import ast
from typing import Any

import griffe


def literal(text: str) -> Any:
    """``ast.literal_eval`` of ``text``; raises ValueError when it is not a literal."""
    try:
        return ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as exc:
        raise ValueError(text) from exc


def constant(text: str, scope: Any, tree: Any, depth: int = 0) -> str | None:
    """The value (``repr``) of a default's source ``text`` read in the module
    ``scope``: a literal, or a name / attribute chain bound in the package to
    a module-level assignment of one (followed through aliases and other
    constants, at most 5 deep). None when it cannot be told statically."""
    try:
        return repr(literal(text))
    except ValueError:
        pass
    if tree is None or scope is None or depth > 5 or not all(part.isidentifier() for part in text.split(".")):
        return None
    head, _, rest = text.partition(".")
    bound = getattr(scope, "members", {}).get(head)
    if bound is None:
        return None
    start = bound.target_path if bound.is_alias else bound.path
    try:
        found = tree.lookup(f"{start}.{rest}" if rest else start)
        if found is not None and found.is_alias:
            found = tree.resolve(found)
    except griffe.GriffeError:  # griffe cannot follow it: not told statically
        return None
    if found is None or isinstance(found, str) or not found.is_attribute or found.value is None:
        return None
    return constant(str(found.value), found.parent, tree, depth + 1)


def same_value(a: Any, b: Any) -> bool:
    """Whether two defaults are equal by value (``100`` and ``100.0``; a literal
    and a named constant of the same value); a bool never equals a number."""
    if a.value is None or b.value is None:
        same: bool = a.default == b.default
        return same
    try:
        x, y = literal(a.value), literal(b.value)
    except ValueError:  # a repr that is no literal (inf, nan): compare the text
        same = a.value == b.value
        return same
    return isinstance(x, bool) == isinstance(y, bool) and x == y
