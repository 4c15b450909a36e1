"""Plain text helpers shared by every stage: numbers said briefly, lists named and joined, text cut where a reader can
follow it."""

from __future__ import annotations

import re


def number(x: float) -> str:
    """``x`` with two significant digits, exponent without padding: ``3.8e-9``."""
    text = f"{x:.2g}"
    return re.sub(r"e([+-])0*(\d)", lambda m: "e" + ("-" if m.group(1) == "-" else "") + m.group(2), text)


#: At most this many names are listed in a finding's line (its rows, or its
#: report section, name them all): contract findings across APIs and merged
#: API-surface findings alike.
NAMED = 10


def named_list(names: list[str]) -> str:
    """The first :data:`NAMED` names backticked, then how many more:
    ```a`, `b`, and 3 more``."""
    named = ", ".join(f"`{n}`" for n in names[:NAMED])
    return named + (f", and {len(names) - NAMED} more" if len(names) > NAMED else "")


def and_join(items: list[str]) -> str:
    """Items in a sentence: ``a``; ``a and b``; ``a, b and c``."""
    return " and ".join([", ".join(items[:-1]), items[-1]] if len(items) > 1 else items)


_CLOSE = {"(": ")", "[": "]", "{": "}"}


def _cut_points(text: str) -> list[tuple[int, str]]:
    """Where ``text`` may be cut without cutting a value: (index of a space,
    the brackets open there, closed in reverse), outside quotes, after a
    complete token (a space at depth 0, or after a ``,`` inside brackets)."""
    points, stack, quote = [], [], ""
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = ""
        elif ch in "'\"" and (i == 0 or not text[i - 1].isalnum()):  # an apostrophe inside a word opens nothing
            quote = ch
        elif ch in _CLOSE:
            stack.append(_CLOSE[ch])
        elif stack and ch == stack[-1]:
            stack.pop()
        elif ch == " " and (not stack or text[i - 1] == ","):
            points.append((i, "".join(reversed(stack))))
    return points


def cut(text: str, limit: int) -> str:
    """``text`` in at most about ``limit`` characters, never cut inside a
    value: at a space outside quotes and brackets, or after a complete
    element of a tuple or list, whose brackets are then closed
    (``expected ('delta', 'POSITIONAL_OR_KEYWORD', …)``), with an ellipsis.
    Text that fits is returned unchanged."""
    if len(text) <= limit:
        return text
    fits = [(i, closing) for i, closing in _cut_points(text) if i + 2 + len(closing) <= limit]
    if not fits:
        return text[: limit - 1].rstrip() + "…"
    i, closing = fits[-1]
    if closing:  # after an element's comma: the comma stays, the brackets close
        return text[:i] + " …" + closing
    return text[:i].rstrip(" ,;:") + "…"


def close_cut(value: str) -> str:
    """A value a older report cut inside a tuple or list (``('delta',
    'POSITIONAL_OR_KEYWORD', 1``) back to its last whole element, its brackets
    closed: ``('delta', 'POSITIONAL_OR_KEYWORD', …)``; a whole value unchanged."""
    depth = 0
    for ch in re.sub(r"'[^']*'|\"[^\"]*\"", "", value):
        depth += ch in "([{"
        depth -= ch in ")]}"
    if depth <= 0 and value.count("'") % 2 == 0:
        return value
    inside = [(i, closing) for i, closing in _cut_points(value) if closing]
    if not inside:
        return value + "…"
    i, closing = inside[-1]
    return value[:i] + " …" + closing


def shorten(text: str, limit: int = 140) -> str:
    """``text`` on one line, at most about ``limit`` characters, cut with
    :func:`cut` (never inside a quoted or bracketed value; a cut inside a
    tuple closes it: ``('delta', …)``)."""
    return cut(" ".join((text or "").split()), limit)
