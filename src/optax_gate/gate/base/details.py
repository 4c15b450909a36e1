"""A contract's failure detail in plain words (the numbers in it are read by ``optax_gate.gate.base.drift``).

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from optax_gate.gate.base.drift import NP_SCALAR, drift_kinds, drift_words, parse_drift, parse_ulp
from optax_gate.gate.base.plain_text import close_cut, number, shorten

DEFECT_PREFIX = "known upstream defect no longer reproduces"
#: The runner's words for an exception that escaped ``pytest.raises`` (``optax_gate.gate.run.outcomes``).
RAISED = re.compile(r"^raised (?P<got>[\w.]+) instead of (?P<want>[\w., ]+?)(?::\s*(?P<message>.*))?$")


def normalise(text: str) -> str:
    """A detail's pattern: numbers, quoted values, NumPy scalars and indices -> ``#``."""
    text = NP_SCALAR.sub("#", text or "")
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "#", text)
    text = re.sub(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?", "#", text)
    return re.sub(r"#(?:[\s,#]*#)*", "#", text)


def _value(text: str) -> str:
    """A repr in pytest's assertion text, in plain words: ``dtype('float32')``,
    ``<class 'jax.numpy.float32'>``, ``dtype(bfloat16)`` -> ``float32``/``bfloat16``."""
    text = close_cut(text.strip())
    if text.endswith(("]…", ")…", "'…")):  # a whole value, then a cut of what followed it
        text = text[:-1]
    text = re.sub(r"dtype\('?(\w+)'?\)|<class '(?:[\w.]+\.)?(\w+)'>", lambda m: m[1] or m[2], text)
    return NP_SCALAR.sub(r"\1", text)


def assertion_parts(detail: str) -> tuple[str, str] | None:
    """(got, expected) of pytest's rewritten ``assert GOT == EXPECTED`` text
    (the first difference of a sequence when pytest names one), or None."""
    m = re.search(r"(?:^|\s)assert (?P<expr>.*)", detail or "")
    if not m:
        return None
    # cut pytest's explanation: "+ where", its string diff ("'a' == 'b' - b + a"), "Full diff"
    expr = re.split(r" \+ (?:where|and) | \+ \S*…$| Use -v to get more diff| Full diff:|(?<=') - ", m["expr"])[0]
    at = re.search(r"At index (\d+) diff: (.+?) != (.+)$", expr)
    if at:
        return f"{_value(at[2])} at index {at[1]}", _value(at[3])
    eq = re.fullmatch(r"(.+?) == (.+?)", expr.strip())
    return (_value(eq[1]), _value(eq[2])) if eq else None


#: A parameter of a signature as a signature contract records it: ``('delta', 'KEYWORD_ONLY', 1.0)``.
_PARAMETER = re.compile(r"\('(\w+)', '([A-Z_]+)', (.*)\)")
#: ``inspect.Parameter`` kinds in words.
_KINDS = {
    "POSITIONAL_ONLY": "positional-only",
    "POSITIONAL_OR_KEYWORD": "positional or keyword",
    "KEYWORD_ONLY": "keyword-only",
    "VAR_POSITIONAL": "*args",
    "VAR_KEYWORD": "**kwargs",
}


def parameter_words(got: str, expected: str) -> str:
    """A signature contract's got/expected parameter in words, not as tuples ("got ('delta',
    'KEYWORD_ONLY', 1.0) at index 2, expected ('delta', 'POSITIONAL_OR_KEYWORD', 1.0)"): ``delta
    (parameter 3) is now keyword-only (was positional or keyword), default 1.0``; "" when the
    two are not such parameters."""
    at = re.fullmatch(r"(.*) at index (\d+)", got)
    g, e = _PARAMETER.fullmatch(at[1] if at else got), _PARAMETER.fullmatch(expected)
    if not g or not e:
        return ""
    where = f" (parameter {int(at[2]) + 1})" if at else ""
    kind = {k: _KINDS.get(k, k) for k in (g[2], e[2])}
    moved = []
    if g[1] != e[1]:
        moved.append(f"is now named {g[1]} (was {e[1]})")
    if g[2] != e[2]:
        moved.append(f"is now {kind[g[2]]} (was {kind[e[2]]})")
    known = "…" not in g[3] + e[3]  # a default an older report cut short is not compared
    if known and g[3] != e[3]:
        moved.append(f"now defaults to {g[3]} (was {e[3]})")
    return (
        f"{e[1]}{where} " + ", ".join(moved) + (f", default {g[3]}" if known and g[3] == e[3] and moved else "")
        if moved
        else ""
    )


#: Two recorded outcomes compared by a generated contract (``assert 'ok' ==
#: 'recompiled 1 time(s)'``: got, then the baseline's recorded value).
OUTCOME_PAIR = re.compile(r"(?:^|\s)assert '([^']*)' == '([^']*)'")


def _outcome_verb(value: str) -> tuple[str, str]:
    """A recorded outcome of a generated contract (``optax_gate.kit.surface.probe``)
    as (present, past) verb phrases: ``recompiled 1 time(s)`` -> ``recompiles``,
    ``recompiled 1 time``; ``eager step: ValueError`` -> ``raises ValueError
    (eager step)``; ``nonfinite: ...`` -> ``comes out non-finite``; another
    value quoted."""
    m = re.fullmatch(r"recompiled (\d+) time\(s\)", value)
    if m:
        return "recompiles", f"recompiled {m[1]} time{'s' if m[1] != '1' else ''}"
    m = re.fullmatch(r"(?:([\w ]+): )?([A-Za-z_][\w.]*(?:Error|Exception|Warning|Exit))", value)
    if m:
        where = f" ({m[1]})" if m[1] else ""
        return f"raises {m[2]}{where}", f"raised {m[2]}{where}"
    if value.startswith("nonfinite"):
        return "comes out non-finite", "came out non-finite"
    return f"gives {value!r}", f"gave {value!r}"


def outcome_change(got: str, expected: str) -> str:
    """Words for a recorded outcome that moved, direction first: ``('ok',
    'recompiled 1 time(s)')`` -> ``no longer recompiles (the baseline
    recompiled 1 time)``; ``('ok', 'ValueError')`` -> ``no longer raises
    ValueError``; ``('TypeError', 'ok')`` -> ``now raises TypeError (ok in the
    baseline)``."""
    if got == "ok":
        present, past = _outcome_verb(expected)
        if present.startswith("raises "):  # "no longer raises ValueError (eager step)": the past would say it again
            return f"no longer {present}"
        return f"no longer {present.split(' (')[0]} (the baseline {past})"
    if expected == "ok":
        return f"now {_outcome_verb(got)[0]} (ok in the baseline)"
    return f"now {_outcome_verb(got)[0]} (the baseline {_outcome_verb(expected)[1]})"


#: pytest's rewritten assertion without ``==`` (``assert False + where False =
#: bool(...)``), after the test's own message if any.
BARE_ASSERT = re.compile(r"^(?:AssertionError: )?(?P<said>.*?)(?:^|\s)assert (?P<expr>.*)$")


def pytest_words(detail: str) -> str:
    """pytest's text in a detail, read (see the module docstring); other text unchanged."""
    detail = " ".join((detail or "").split())
    m = re.match(r"(?:Failed: )?DID NOT RAISE (?:<class '(?:[\w.]+\.)?(\w+)'>|(\S+))", detail)
    if m:
        return f"did not raise {m[1] or m[2]}"
    m = re.match(
        r"(?:Failed: )?DID NOT WARN\. No warnings of type \((.*?),?\) were emitted\.(?: Emitted warnings: (.*?)\.?$)?",
        detail,
    )
    if m:
        emitted = m[2] if m[2] and m[2] != "[]" else ""
        return f"did not warn ({_value(m[1])})" + (f"; warned instead: {shorten(emitted, 80)}" if emitted else "")
    pair = OUTCOME_PAIR.search(detail)
    if pair:  # the test's own message before it repeats what the outcomes say
        return outcome_change(pair[1], pair[2])
    parts = assertion_parts(detail)
    if parts:
        said_at = re.match(r"(?:AssertionError: )?(.*?)\s*assert ", detail)
        if said_at is None:  # cannot be: detail is one line (joined above) and assertion_parts found "assert " in it
            raise AssertionError(f"no assert in {detail!r}")
        said = said_at[1]  # the test's own message, if short
        return (f"{said}: " if said and len(said) <= 80 else "") + (
            parameter_words(*parts) or f"got {parts[0]}, expected {parts[1]}"
        )
    bare = BARE_ASSERT.search(detail)
    if bare:  # ``assert False + where False = bool(Array(False...))``: pytest's introspection is not for a reader
        said = bare["said"].strip()
        if said:
            return shorten(said, 140)
        expr = re.split(r" \+ (?:where|and) ", bare["expr"])[0].strip()
        return (
            "the contract's check is false"
            if expr in ("False", "None", "0", "[]", "()", "")
            else f"the contract's check `{shorten(expr, 80)}` is false"
        )
    return re.sub(r" Use -v to get more diff\.?$", "", detail)


def defect_parts(row: Mapping[str, Any]) -> tuple[str, str, str]:
    """(id, reason, what happens now: the contract's failure detail) of a fixed
    row pinning a defect."""
    defect = row.get("defect") or ""
    ident, _, reason = defect.partition(": ")
    prefix = f"{DEFECT_PREFIX} ({defect}); now: "
    detail = row.get("detail") or ""
    return ident, reason, detail[len(prefix) :] if detail.startswith(prefix) else ""


def now_words(now: str) -> str:
    """What happens now that a pinned defect no longer reproduces, from the
    pinning contract's failure detail, in words."""
    parts = assertion_parts(now)
    if parts:
        return f"gives {parts[0]} where the defect gave {parts[1]}"
    m = re.match(r"(?:Failed: )?DID NOT RAISE", now or "")
    if m:
        return "no longer " + pytest_words(now).removeprefix("did not ")
    m = RAISED.match(now or "")
    if m:
        return f"raises {m['got']} instead of {m['want']}" + (f": {shorten(m['message'], 90)}" if m["message"] else "")
    m = re.match(r"([A-Za-z_][\w.]*(?:Error|Exception)): (.*)", now or "")
    if m:
        return f"raises {m[1]}: {shorten(m[2], 90)}"
    if not now.strip(" …") or ((bare := BARE_ASSERT.search(now)) and not bare["said"].strip()):
        return (
            "the pinned behaviour no longer holds"  # pytest's bare assert: its introspection says nothing to a reader
        )
    return shorten(pytest_words(now), 110)


def is_defect_fixed(row: Mapping[str, Any]) -> bool:
    """A pinned upstream defect that stopped reproducing (the contract now fails)."""
    return row.get("change") == "fixed" and bool(row.get("defect")) and row.get("candidate") in ("failed", "error")


def plain_detail(row: Mapping[str, Any]) -> str:
    """A contract row's detail in plain words (see the module docstring); the
    detail unchanged when no pattern applies."""
    detail = row.get("detail") or ""
    if is_defect_fixed(row):
        ident, reason, now = defect_parts(row)
        return f"{ident}: {reason}; now: {now_words(now)}"
    ulp = parse_ulp(detail)
    if ulp:
        start, end = ulp.span
        head = NP_SCALAR.sub(r"\1", detail[:start])
        words = (
            f"{ulp.what}: element ({ulp.index}) is {ulp.actual!r}, expected {ulp.expected!r}: "
            f"off by {number(ulp.error)} (relative {number(ulp.relative)}; worst {number(ulp.worst_ulps)} ULP "
            f"of {ulp.dtype}), "
            f"allowed {ulp.ulps} ULP of {ulp.dtype} = {number(ulp.bound)}"
        )
        return head + words + detail[end:]
    leaves = parse_drift(detail)
    if leaves:
        return drift_words(leaves)
    if detail.startswith("was: "):
        return "was: " + pytest_words(detail[len("was: ") :])
    return pytest_words(detail)


def outcome_words(row: Mapping[str, Any]) -> str:
    """The ``baseline → candidate`` cell: outcomes, or what they mean: a pinned
    defect that stopped reproducing, a snapshot that drifted (and what)."""
    if is_defect_fixed(row):
        return "defect no longer reproduces"
    b, c = row.get("baseline"), row.get("candidate")
    if row.get("kind") == "snapshot" and b == "passed" and c in ("failed", "error"):
        leaves = parse_drift(row.get("detail") or "")
        if leaves:
            return f"drift: {drift_kinds(leaves)}"
        if parse_ulp(row.get("detail") or "") or (row.get("detail") or "").startswith("snapshot drift of values"):
            return "drift: value beyond budget"
        return (
            "drift from the baseline's record"  # a snapshot that stops matching drifted; it never reads passed → failed
        )
    return f"{b if b is not None else 'did not run'} → {c if c is not None else 'did not run'}"
