"""Each use of the team's code judged against the API surface diff: its call's arguments bound to both versions'
signatures (``--usage``).

Why the call-site matching is written by hand: no library binds a call *site*
(not a live call) to two static signatures. :func:`match` binds the call's
positional and keyword arguments to the baseline's and the candidate's
parameters the way Python does; the call breaks when binding fails in the
candidate only (too many positional arguments, a keyword that is no longer
accepted, a parameter now keyword-only, a new required parameter) or when a
positional argument lands on a different parameter. ``*args``/``**kwargs`` at
a call site make its binding unknown (reported as such, never as broken).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from optax_gate.gate.surface import public_api
from optax_gate.gate.surface.public_api import (
    KEYWORD_ONLY,
    POSITIONAL,
    POSITIONAL_ONLY,
    VAR_KEYWORD,
    VAR_POSITIONAL,
    Param,
)
from optax_gate.gate.team_code.usage import Use


def bind(
    params: tuple[Param, ...], positional: int, keywords: tuple[str, ...], partial: bool = False
) -> tuple[list[str], str]:
    """Bind a call (``positional`` arguments, then ``keywords``) to
    ``params`` like Python does. Returns the parameter name each positional
    argument lands on and the ``TypeError`` it raises ("" when it binds);
    ``partial``: a ``functools.partial``, whose later call may pass the required arguments it leaves out."""
    slots = [p for p in params if p.kind in (POSITIONAL_ONLY, POSITIONAL)]
    varpos = any(p.kind == VAR_POSITIONAL for p in params)
    varkw = any(p.kind == VAR_KEYWORD for p in params)
    landed = [p.name for p in slots[:positional]]
    if positional > len(slots):
        if not varpos:
            kw_only = [p.name for p in params if p.kind == KEYWORD_ONLY]
            why = f"; {', '.join(kw_only)} keyword-only" if kw_only else ""
            return landed, f"takes {len(slots)} positional argument(s) but {positional} were given{why}"
        landed += ["*" + next(p.name for p in params if p.kind == VAR_POSITIONAL)] * (positional - len(slots))
    by_name = {p.name: p for p in params}
    for k in keywords:
        p = by_name.get(k)
        if p is None or p.kind in (POSITIONAL_ONLY, VAR_POSITIONAL, VAR_KEYWORD):
            if not varkw:
                return landed, f"got an unexpected keyword argument '{k}'" if p is None else f"'{k}' is positional-only"
        elif k in landed:
            return landed, f"got multiple values for argument '{k}'"
    missing = [p.name for p in params if p.required and p.name not in landed and p.name not in keywords]
    if missing and not partial:
        return landed, f"missing required argument(s): {', '.join(missing)}"
    return landed, ""


def _longest(path: str, known: set[str]) -> str | None:
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        candidate = ".".join(parts[:cut])
        if candidate in known:
            return candidate
    return None


#: A site's verdict on a surface row, most severe first: the use raises or
#: binds differently; its binding cannot be read (``*args``/``**kwargs``);
#: the change touches it without breaking it (deprecated, a default it relies
#: on, another change); the change does not touch it.
SITE_VERDICTS = ("breaks", "cannot-tell", "affected", "unaffected")


def _site(row: dict[str, Any], where: str, sentence: str, verdict: str, note: str) -> None:
    row["uses"].append(f"{where}: {sentence}")
    row["sites"].append({"where": where, "verdict": verdict, "note": note})
    if verdict == "breaks":
        row["breaks"] = True


def match(
    uses: list[Use], rows: list[dict[str, Any]], old: dict[str, public_api.Entry], new: dict[str, public_api.Entry]
) -> None:
    """Attach to each surface row the team's sites it touches: ``row["uses"]``
    (one sentence per site), ``row["sites"]`` (per site ``{"where",
    "verdict", "note"}``: the verdict of binding the use to both signatures,
    one of :data:`SITE_VERDICTS`, and a few words for the findings, e.g.
    ``breaks: delta is keyword-only in the candidate`` or ``passes delta by
    keyword``) and ``row["breaks"]`` (True when one of them raises in the
    candidate). Rows are changed in place."""
    known = set(old) | set(new)
    by_path: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        r.setdefault("uses", [])
        r.setdefault("sites", [])
        r.setdefault("breaks", False)
        by_path.setdefault(r["path"], []).append(r)
    for u in uses:
        if u.how == "catch":  # an except clause: not a use of the API
            continue
        path = _longest(u.path, known)
        if path is None or path not in by_path:
            continue
        verb = {"import": "imports", "attribute": "uses", "annotation": "annotates with", "call": "calls"}[u.how]
        for r in by_path[path]:
            change = r["change"]
            if change == "deprecated":
                _site(
                    r, u.where, f"{verb} {u.path}; deprecated in the candidate ({r['new']})", "affected", "deprecated"
                )
            elif change in ("removed", "moved") and u.guarded:
                _site(
                    r,
                    u.where,
                    f"{verb} {u.path}, imported inside try/except ImportError; {change} in the candidate: "
                    "your fallback runs instead",
                    "affected",
                    f"{verb} it, imported under try/except ImportError: {change}, your fallback runs",
                )
            elif change in ("removed", "moved"):
                err = "ImportError" if u.how == "import" else "AttributeError"
                where_now = f" (now {r['new']})" if change == "moved" else ""
                _site(
                    r,
                    u.where,
                    f"{verb} {u.path}; {change} in the candidate{where_now} → {err}",
                    "breaks",
                    f"breaks: {change} → {err}",
                )
            elif (
                u.how == "call"
                and u.path == path
                and path in old
                and path in new  # an API on one side only: its row says so
                and (old_params := old[path].params) is not None
                and (new_params := new[path].params) is not None
            ):
                parent = old.get(path.rsplit(".", 1)[0])
                if parent is not None and parent.kind == "class" and u.positional:  # Class.method(instance, ...)
                    u = dataclasses.replace(u, positional=u.positional - 1)
                judge_call(u, r, old_params, new_params)
            elif change != "added":
                _site(
                    r,
                    u.where,
                    f"{verb} {u.path} ({change}: {r['old']} → {r['new']})",
                    "affected",
                    f"{verb} it: {change}",
                )


def judge_call(u: Use, row: dict[str, Any], old: tuple[Param, ...], new: tuple[Param, ...]) -> None:
    """Judge one call site ``u`` against an API surface ``row`` (a changed parameter), binding its arguments to
    the ``old`` and ``new`` parameters: the site, its verdict and words are added to the row's call sites."""
    change, param = row["change"], row["param"]
    n = u.positional
    how = f"with {n} positional argument{'' if n == 1 else 's'}" + (
        f" and keywords {', '.join(u.keywords)}" if u.keywords else ""
    )
    if u.positional is None or u.star_kwargs:
        _site(
            row,
            u.where,
            f"calls {u.path} with *args/**kwargs; cannot tell whether {change} of {param or row['old']} affects it",
            "cannot-tell",
            "cannot tell: *args/**kwargs",
        )
        return
    if change == "added":
        return
    old_landed, old_err = bind(old, u.positional, u.keywords, u.partial)
    new_landed, new_err = bind(new, u.positional, u.keywords, u.partial)
    own = (
        change not in ("parameter-reordered", "new-required-parameter", "default-changed", "default-removed") and param
    )
    if own and param not in old_landed and param not in u.keywords:  # a failure, if any, belongs to another row
        if change == "parameter-added":
            # the call gets the new parameter's default: whether that keeps the old behaviour, the signature cannot say
            # (MultiSteps' accumulator_dtype=jnp.float32 turns a bfloat16 accumulator float32)
            _site(
                row,
                u.where,
                f"calls {u.path} {how}; does not pass {param}: gets its default in the candidate ({row['new']})",
                "affected",
                f"does not pass {param}: gets its new default {row['new']}",
            )
        else:
            _site(
                row,
                u.where,
                f"calls {u.path} {how}; does not pass {param}, unaffected",
                "unaffected",
                f"does not pass {param}",
            )
    elif new_err and not old_err:
        _site(
            row,
            u.where,
            f"calls {u.path} {how}; {_because(row)} → TypeError ({new_err})",
            "breaks",
            f"breaks: {_because(row)}",
        )
    elif not new_err and not old_err and old_landed != new_landed:
        moved = "; ".join(
            f"argument {i + 1} binds to {b} instead of {a}"
            for i, (a, b) in enumerate(zip(old_landed, new_landed, strict=False))
            if a != b
        )
        _site(
            row,
            u.where,
            f"calls {u.path} {how}; {_because(row)} → {moved} (silently)",
            "breaks",
            f"breaks: {moved} (silently)",
        )
    elif change in ("default-changed", "default-removed") and param not in u.keywords and param not in new_landed:
        _site(
            row,
            u.where,
            f"calls {u.path} without {param}; relies on its default: {row['old']} → {row['new']}",
            "affected",
            f"relies on the default of {param}",
        )
    elif param and (param in u.keywords or param in new_landed):
        passed = "by keyword" if param in u.keywords else "positionally"
        _site(
            row,
            u.where,
            f"calls {u.path} {how}; passes {param} {passed}, unaffected",
            "unaffected",
            f"passes {param} {passed}",
        )
    elif param:
        _site(
            row,
            u.where,
            f"calls {u.path} {how}; does not pass {param}, unaffected",
            "unaffected",
            f"does not pass {param}",
        )
    else:
        _site(row, u.where, f"calls {u.path} {how}; unaffected", "unaffected", "unaffected")


def _because(row: dict[str, Any]) -> str:
    c, p = row["change"], row["param"]
    return {
        "keyword-only": f"{p} is keyword-only in the candidate",
        "positional-only": f"{p} is positional-only in the candidate",
        "parameter-removed": f"{p} was removed in the candidate",
        "parameter-renamed": f"{p} is renamed {row['new']} in the candidate",
        "new-required-parameter": f"{p} is a new required parameter in the candidate",
        "default-removed": f"{p} has no default in the candidate",
        "parameter-reordered": f"parameters reordered ({row['old']} → {row['new']})",
    }.get(c, f"{c} ({row['old']} → {row['new']})")
