"""A joined finding's cause in words, each thing said once: a pattern, an optimizer state entry, a corner's lead,
a dtype variant's move."""

from __future__ import annotations

import re

from optax_gate.gate.judge.findings import outcome_pattern


def _said_pattern(cause: str) -> str:
    """What a part's cause says, numbers and "(and N more …)" or "(other corners differing too: …)" aside: two
    schedules' ``base/int`` corners moving alike are said once in a joined line."""
    pattern = outcome_pattern(re.sub(r" \((?:and \d+ more |other corners differing too: )[^)]*\)", "", cause))
    return re.sub(r"#(?:[\s,]*#)*,?", "#", pattern)  # a shape (2,) says what (2, 3) says


def _state_once(causes: list[str]) -> list[str]:
    """Causes with each optimizer state entry said once: two ``state-dtype``
    parts of one dtype change (``optimizer state bfloat16 → float32: `.hyperparams` …``
    and ``…: `.inner_state[0].trace` …; `.hyperparams` …``) become one, in the
    place of the first."""
    out: list[str] = []
    entries: dict[str, list[str]] = {}
    for cause in causes:
        head, sep, rest = cause.partition(": ")
        if not (sep and head.startswith("optimizer state ") and " → " in head):
            out.append(cause)
            continue
        if head not in entries:
            entries[head] = []
            out.append(head)
        entries[head] += [e for e in rest.split("; ") if e not in entries[head]]
    return [f"{c}: {'; '.join(entries[c])}" if c in entries else c for c in out]


def _leads_once(causes: list[str]) -> list[str]:
    """Corner causes that open with the same move in words (``findings.corner_lead``: "the optimizer
    state now holds bfloat16 leaves: at corner …") said once: the first with its corner, the others
    counted ("and 2 more records moving so: at corner `inject=float16` …" no more)."""
    out: list[str] = []
    seen: dict[str, int] = {}
    for cause in causes:
        lead, sep, _rest = cause.partition(": at corner ")
        if not sep or not (lead.startswith("the optimizer state ") or lead.startswith("the hyperparameters ")):
            out.append(cause)
            continue
        if lead in seen:
            seen[lead] += 1
            continue
        seen[lead] = 0
        out.append(cause)
    return [
        f"{c} (and {seen[lead]} more record{'s' if seen[lead] > 1 else ''} of other APIs moving so)"
        if (lead := c.partition(": at corner ")[0]) in seen and seen[lead]
        else c
        for c in out
    ]


_VARIANT = re.compile(r"the update of a (\S+) PyTree differs: (.+)")


def _variants_once(causes: list[str]) -> list[str]:
    """Causes with each dtype variant's move said once: ``the update of a
    bfloat16 PyTree differs: ValueError → ok`` and the same of complex64
    become ``the update of a bfloat16 or complex64 PyTree differs:
    ValueError → ok``, in the place of the first."""
    moves: dict[str, list[str]] = {}
    out: list[tuple[bool, str]] = []  # (a variant's move, its text)
    for cause in causes:
        m = _VARIANT.fullmatch(cause)
        if not m:
            out.append((False, cause))
            continue
        if m[2] not in moves:
            moves[m[2]] = []
            out.append((True, m[2]))
        moves[m[2]].append(m[1])
    return [
        f"the update of a {' or '.join(dict.fromkeys(moves[c]))} PyTree differs: {c}" if move else c for move, c in out
    ]


def joined(causes: list[str]) -> str:
    """The causes of the findings joined into one (the first finding's first), each said once: the first of each
    pattern (numbers aside), then each state entry, corner lead and dtype variant's move once."""
    said = list({_said_pattern(c): c for c in reversed(causes)}.values())[::-1]  # the first of each pattern
    return "; ".join(_leads_once(_variants_once(_state_once(said))))
