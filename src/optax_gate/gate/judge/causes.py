"""One upstream cause, one finding: findings joined across APIs, evidence kinds and report sections
(``docs/findings.md``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from optax_gate.gate.base import model
from optax_gate.gate.base.corner_words import TRANSFORMATION_OUTCOME, long_dtype
from optax_gate.gate.base.details import RAISED, defect_parts, is_defect_fixed, normalise, pytest_words
from optax_gate.gate.base.drift import ITEMSIZE, corner_name, is_recorded_message, nonfinite_words
from optax_gate.gate.base.plain_text import named_list
from optax_gate.gate.judge import cause_words
from optax_gate.gate.judge.findings import (
    ORDER,
    X64_PREFIX,
    contracts_words,
    corner_move,
    group,
    row_cause,
    state_field,
    subject,
    test_name,
)

#: The dtypes a corner's recorded state summary lists (``ok params bfloat16 state bfloat16,int32``).
_CORNER_STATE = re.compile(r"\bstate ([\w,]+)")


#: The dotted name a failure says is missing: ``No module named 'optax.monte_carlo'``,
#: ``module 'optax' has no attribute 'monte_carlo'``, ``cannot import name 'x' from 'optax.y'``.
_MISSING = (
    re.compile(r"No module named '(?P<name>[\w.]+)'"),
    re.compile(r"module '(?P<module>[\w.]+)' has no attribute '(?P<attr>\w+)'"),
    re.compile(r"cannot import name '(?P<attr>\w+)' from '(?P<module>[\w.]+)'"),
)
#: Changes a merge may join (``new`` and ``gone`` say where a contract ran, not what it found).
_MERGED = ("broken", "changed", "fixed")


def missing_name(detail: str) -> str:
    """The dotted name a failure detail says does not exist (see :data:`_MISSING`), or ""."""
    for pattern in _MISSING:
        m = pattern.search(detail or "")
        if m:
            return m["name"] if "name" in m.groupdict() else f"{m['module']}.{m['attr']}"
    return ""


def _failure(text: str) -> str:
    """A failure's pattern for comparing two of them: pytest's words, numbers
    and quoted values replaced, the runner's ``raised X instead of Y``
    reduced to ``X: message``, cut to 80 characters."""
    text = pytest_words(text or "")
    m = RAISED.match(text)
    if m:
        text = f"{m['got']}: {m['message'] or ''}"
    return normalise(text)[:80]


#: A finding's section (``model.FindingPart``'s ``section``).
Section = Literal["contracts", "surface", "dependencies", "warnings"]


def _section(f: Mapping[str, Any]) -> Section:
    section: Section = f.get("section", "contracts")
    return section


def _names(f: Mapping[str, Any]) -> list[str]:
    """The APIs (contract findings) or public paths (API surface) a finding concerns."""
    return list(f.get("apis") or [f["api"]])


def _causes(f: model.Finding, rows: Mapping[str, model.ContractRow], removed: set[str]) -> list[tuple[Any, ...]]:
    """The upstream causes a finding is evidence of (see the module docstring):
    ``("removed", name)``, ``("defect-now", api, failure)``, ``("api", api)``."""
    if f["change"] not in _MERGED:
        return []
    keys: list[tuple[Any, ...]] = []
    names = _names(f)
    mine = [rows[c] for c in f["contracts"] if c in rows]
    if _section(f) == "contracts":
        gone = {missing_name(r.get("detail") or "") for r in mine}
        if len(gone) == 1 and "" not in gone:
            keys.append(("removed", gone.pop()))
        if f.get("key") == "defect" or any(is_defect_fixed(r) for r in mine):
            now = {_failure(defect_parts(r)[2]) for r in mine if is_defect_fixed(r)}
            keys += [("defect-now", api, n) for api in names for n in now if n]
        elif mine and f["change"] in ("broken", "changed"):
            failures = {_failure(r.get("detail") or "") for r in mine}
            if len(failures) == 1:
                failure = failures.pop()
                keys += [("defect-now", api, failure) for api in names]
    elif _section(f) == "surface" and f["cause"].startswith("removed"):
        for name in removed:
            if all(n == name or n.startswith(name + ".") for n in names):
                keys.append(("removed", name))
    elif _section(f) == "warnings":
        keys += [("removed", name) for name in removed if re.search(rf"\b{re.escape(name)}\b", f["cause"])]
    if _section(f) == "contracts":
        keys += list(dict.fromkeys(k for r in mine for k in behaviour_keys(r)))
    if len(names) == 1 and _section(f) in ("contracts", "surface"):
        keys.append(("api", names[0]))
    return keys


#: A value drift's arrays (``outcomes.values_drift``): ``snapshot drift of values: `x64_result` 2 of 2 elements …``.
_VALUES = re.compile(r"`(\w+)` \d+ of \d+ elements")


def _error_key(message: str) -> str:
    """An error message's first 40 characters for ``error-now``: its words
    only (quotes, the recording's cut "…", numbers and quoted values, case and
    punctuation aside: a corner recording writes ``: `` as `` - ``, a shape
    ``(5,)`` is ``(1, 3)`` elsewhere); "" for a message too short to tell
    one check from another."""
    text = normalise((message or "").strip().strip("'\"").removesuffix("…"))
    text = re.sub(r"[^a-z#]+", " ", text.lower()).strip()
    return text[:40] if len(text) >= 20 else ""


def _corner_state_dtypes(value: str) -> set[str]:
    """The dtypes of the optimizer state a corner's record lists: a wrapper corner's ``state
    bfloat16,int32``, a transformation corner's ``s bf16x5,i32x1`` (short names made long; the injected
    grid's ``h``, its hyperparameters, is not the state's leaves per parameter)."""
    m = TRANSFORMATION_OUTCOME.fullmatch(value or "")
    if m:
        return {
            long_dtype(part.rpartition("x")[0]) if part.rpartition("x")[0] else part
            for part in m[5].split(",")
            if part != "none"
        }
    return set(",".join(_CORNER_STATE.findall(value or "")).split(","))


def behaviour_keys(row: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """The behaviour causes one differing contract row is evidence of (see
    the module docstring): ``("dtype-now", api, dtype)`` for each dtype the
    API's results now come out in; ``("params-nonfinite", "fewer" | "more")``;
    ``("corner-moved", corner, old, new)`` for each corner whose outcome moved
    (numbers replaced); ``("values", api, output)`` for each array of a value
    drift (``x64_`` dropped: the same output under x64); ``("variant-moved",
    api, old, new)`` for a bfloat16/complex64 ``init_update`` outcome that
    moved; ``("error-now", message)`` for an error raised before and now
    raised with that message (an exception that escaped ``pytest.raises``
    expecting another, a corner's recorded message that changed:
    :func:`_error_key`); [] for other rows."""
    if row.get("change") not in _MERGED or is_defect_fixed(row):
        return []
    key, evidence = row_cause(row, True)
    kind, api = key[0], row["api"]
    now: list[str] = []
    keys: list[tuple[Any, ...]] = []
    if kind == "state-dtype":
        now = [new for _, new in key[1]]
    elif kind == "numeric" and key[2]:
        now = [key[2]]
    elif kind == "dtype":
        now = list(key[1])
    elif kind == "raises" and _error_key(evidence["message"] or ""):
        keys.append(("error-now", _error_key(evidence["message"])))
    elif kind == "corner":
        for leaf in evidence:
            if is_recorded_message(leaf.path):  # an error before and after, with another message: the new check's
                if "absent" not in (leaf.old, leaf.new) and _error_key(leaf.new):
                    keys.append(("error-now", _error_key(leaf.new)))
                continue
            if leaf.cut:
                continue
            old, new = (_corner_state_dtypes(v) for v in (leaf.old, leaf.new))
            now += sorted(d for d in new - old if d in ITEMSIZE)
            keys.append(("corner-moved", corner_name(leaf.path), *corner_move(leaf.old, leaf.new)))
    elif kind == "dtype-variant":
        keys += [("variant-moved", api, leaf.old, leaf.new) for leaf in evidence if not leaf.cut]
    elif (kind == "nonfinite" and key[1] == ("nan_param",) and key[2] != "other") or (
        kind == "edge-hyper"
        and key[2] != "other"
        and all(leaf.path.partition("=0/")[2].partition("/")[0] == "nan_inf_params" for leaf in evidence)
    ):
        return [("params-nonfinite", key[2])]
    elif kind == "message" and (row.get("detail") or "").startswith("snapshot drift of values: "):
        keys += [("values", api, name.removeprefix(X64_PREFIX + "_")) for name in _VALUES.findall(row["detail"])]
    return [("dtype-now", api, d) for d in dict.fromkeys(now)] + list(dict.fromkeys(keys))


def _split_removed(found: list[model.Finding], removed: set[str]) -> list[model.Finding]:
    """An API surface finding "removed: N names" whose names fall under
    several removed modules named by contract failures: one finding per such
    module (and one for the rest), so that each joins its own cause."""
    out = []
    for f in found:
        names = _names(f)
        if _section(f) != "surface" or not f["cause"].startswith("removed") or len(names) < 2:
            out.append(f)
            continue
        groups: dict[str, list[str]] = {}
        for n in names:
            under = next((m for m in sorted(removed, key=len) if n == m or n.startswith(m + ".")), "")
            groups.setdefault(under, []).append(n)
        if len(groups) == 1:
            out.append(f)
            continue
        for _, part in sorted(groups.items(), key=lambda g: g[0] == ""):
            piece: model.Finding = {
                **f,
                "apis": part,
                "api": part[0] if len(part) == 1 else f"{len(part)} names",
                "cause": f"removed: {named_list(part)}",
            }
            if len(part) == 1:  # one name: named as a single surface row is
                del piece["apis"]
            piece["text"] = f"broken API surface {piece['api']}: {piece['cause']}"
            out.append(piece)
    return out


def _part(f: model.Finding, rows_of: Mapping[str, model.ContractRow]) -> model.FindingPart:
    """What a joined finding keeps of one of its findings: change, section,
    cause in words, contract count, names; ``pattern``: its rows' failure
    pattern (:func:`_failure`; a fixed defect: what happens now) when they
    share one, else ""; ``gone``: every row says a name does not exist."""
    where = {"surface": "API surface: ", "warnings": "warning: ", "dependencies": "dependency: "}.get(_section(f), "")
    mine = [rows_of[c] for c in f["contracts"] if c in rows_of]
    patterns = {_failure(defect_parts(r)[2] if is_defect_fixed(r) else r.get("detail") or "") for r in mine}
    behaviours = [k for r in mine for k in behaviour_keys(r)]
    return {
        "change": f["change"],
        "section": _section(f),
        "cause": where + f["cause"],
        "contracts": len(f["contracts"]),
        "names": _names(f),
        "pattern": patterns.pop() if len(patterns) == 1 else "",
        "gone": bool(mine) and all(missing_name(r.get("detail") or "") for r in mine),
        "params_nonfinite": bool(behaviours) and all(k[0] == "params-nonfinite" for k in behaviours),
    }


def _params_nonfinite_text(direction: str, rows: list[model.ContractRow]) -> str:
    """One sentence for the ``params-nonfinite`` records of a joined finding:
    which outputs a NaN or inf parameter reaches fewer (more) of, and in which
    generated records: ``"fewer non-finite outputs when a parameter is NaN or
    inf: the update and the state entries `e_g`, `e_x` (records `nan_param`,
    `learning_rate=0` and `weight_decay=0` with nan inf params)"``."""
    records, hypers, fields = [], [], []
    for row in rows:
        key, evidence = row_cause(row, True)
        if key[0] == "nonfinite":
            records.append("`nan_param`")
        elif key[0] == "edge-hyper":
            for leaf in evidence:
                name, _, rest = leaf.path.partition("=0/")
                hypers.append(name)
                output = rest.partition("/")[2]
                if output.startswith("state/"):
                    fields.append(state_field(output.removeprefix("state/")))
    hypers = sorted(set(hypers))
    if hypers:
        records.append(" and ".join(f"`{h}=0`" for h in hypers) + " with nan inf params")
    state = f" and the state entries {named_list(sorted(set(fields)))}" if fields else ""
    return (
        f"{nonfinite_words(direction)} when a parameter is NaN or inf: the update{state} (records "
        f"{', '.join(dict.fromkeys(records))})"
    )


def _join(
    group: list[model.Finding], keys: set[tuple[Any, ...]], rows_of: Mapping[str, model.ContractRow]
) -> model.Finding:
    """One finding of several (``group``, in report order) of one cause;
    ``rows_of``: the report's contract rows by id."""
    parts = [p for f in group for p in (f.get("parts") or [_part(f, rows_of)])]
    for p in parts:  # in a joined line a defect is named, its reason is in its row
        m = re.match(r"known upstream defect `([^`]*)` no longer reproduces \(.*\); now (.*)$", p["cause"])
        if m:
            p["cause"] = f"known upstream defect `{m[1]}` no longer reproduces; now {m[2]}"
    contract = [f for f in group if _section(f) == "contracts"]
    changes: dict[str, int] = {}
    for f in contract:
        for kind, n in (f.get("changes") or {f["change"]: len(f["contracts"])}).items():
            changes[kind] = changes.get(kind, 0) + n
    names = list(dict.fromkeys(n for f in group for n in _names(f)))
    apis = sorted({n for f in contract for n in _names(f)}) or names
    defect = next((p for p in parts if p["cause"].startswith("known upstream defect")), None)
    now_kind = [k for k in keys if k[0] == "defect-now"]
    severity = min((ORDER.index(p["change"]) for p in parts), default=0)
    change = ORDER[severity]
    removed = sorted({k[1] for k in keys if k[0] == "removed"}, key=len)
    if defect is not None and now_kind and all(p["change"] != "fixed" or p is defect for p in parts):
        # a known defect whose behaviour changed into another failure: one finding saying both; broken where
        # the new failure breaks a contract (it leads then: what the team's code meets now), else changed
        said_defect = re.match(r"known upstream defect `([^`]*)`", defect["cause"])
        if said_defect is None:
            raise AssertionError("a defect part's cause is findings._text's `known upstream defect `<id>` ...`")
        ident = said_defect[1]
        now = defect["cause"].rsplit("; now ", 1)[-1]
        if changes.get("broken"):
            change = "broken"
            cause = f"now {now}, where the baseline had the known upstream defect `{ident}` (it no longer reproduces)"
        else:
            change = "changed"
            cause = f"known upstream defect `{ident}` no longer reproduces; it now {now}"
        others = [
            p["cause"] for p in parts if p is not defect and not (p["pattern"] and p["pattern"] == defect["pattern"])
        ]
    elif removed:
        ids = [c for f in group if _section(f) == "contracts" for c in f["contracts"]]
        failing = [c for c in ids if c in rows_of and missing_name(rows_of[c].get("detail") or "")]
        errors = sorted(
            {
                e
                for c in failing
                for e in re.findall(
                    r"\b(ModuleNotFoundError|ImportError|AttributeError)\b", rows_of[c].get("detail") or ""
                )
            }
        ) or ["an error"]
        said = [f"importing or calling it raises {'/'.join(errors)}"]
        gone = [n for p in parts if p["section"] == "surface" for n in p["names"]]
        if gone:
            said.append(f"API surface: {len(gone)} name{'s' if len(gone) != 1 else ''} removed")
        cause = f"`{removed[0]}` is gone from the candidate: " + "; ".join(said)
        others = [
            p["cause"]
            for p in parts
            if not p["gone"] and not (p["section"] == "surface" and p["cause"].startswith("API surface: removed"))
        ]
    elif any(k[0] == "params-nonfinite" for k in keys) and all(
        p["params_nonfinite"] or p["section"] != "contracts" for p in parts
    ):
        direction = next(k[1] for k in keys if k[0] == "params-nonfinite")
        mine = [rows_of[c] for f in group if _section(f) == "contracts" for c in f["contracts"] if c in rows_of]
        cause = _params_nonfinite_text(direction, mine)
        others = [p["cause"] for p in parts if not p["params_nonfinite"]]
    else:
        cause = (
            parts[0]["cause"]
            if parts[0]["change"] == change
            else next(p["cause"] for p in parts if p["change"] == change)
        )
        others = [p["cause"] for p in parts if p["cause"] != cause]
    cause = cause_words.joined([cause, *others])
    ids = [c for f in contract for c in f["contracts"]]
    order = list(dict.fromkeys(test_name(c)[0] for c in ids))  # the rows of one test together, as group() keeps them
    ids.sort(key=lambda c: order.index(test_name(c)[0]))
    tests: list[list[Any]] = [[name, sum(test_name(c)[0] == name for c in ids)] for name in order]
    merged: model.Finding = {
        **group[0],
        "change": change,
        "apis": apis if contract else names,
        "cause": cause,
        "contracts": ids,
        "tests": tests,
        "parts": parts,
        "changes": changes,
        "causes": sorted({"/".join(map(str, k)) for k in keys}),
    }
    merged["section"] = "contracts" if contract else _section(group[0])
    merged["api"] = (
        (merged["apis"][0] if len(merged["apis"]) == 1 else f"{len(merged['apis'])} APIs")
        if contract
        else group[0]["api"]
    )
    merged["key"] = "merged"
    if any("your_code" in f for f in group):
        merged["your_code"] = list(dict.fromkeys(w for f in group for w in f.get("your_code") or []))
    if any("your_code_not_scanned" in f for f in group):
        merged["your_code_not_scanned"] = list(
            dict.fromkeys(w for f in group for w in f.get("your_code_not_scanned") or [])
        )
    if any("your_code_notes" in f for f in group):
        merged["your_code_notes"] = {k: v for f in group for k, v in (f.get("your_code_notes") or {}).items()}
    n = len(merged["contracts"])
    listed = ", ".join(f"{name} ×{k}" if k > 1 else name for name, k in tests)
    merged["text"] = f"{subject(merged['apis'])}: {cause}" + (f" ({contracts_words(merged)}: {listed})" if n else "")
    if any(f.get("bisect") != group[0].get("bisect") for f in group):  # several bisections: their entries, once each
        merged["bisect"] = [
            e
            for i, f in enumerate(group)
            for e in f.get("bisect") or []
            if e not in [x for g in group[:i] for x in g.get("bisect") or []]
        ]
    return merged


def merge(found: list[model.Finding], rows: list[model.ContractRow]) -> list[model.Finding]:
    """One finding per upstream cause, across evidence kinds and APIs (see the
    module docstring, "One cause, one finding"): findings that share a cause
    (:func:`_causes`) are joined, transitively, into the place of the first;
    ``parts`` of the joined finding keeps each one's change, section and cause.
    The findings are renumbered from 1. ``rows``: the report's contracts."""
    by_id = {r["id"]: r for r in rows}
    removed = {missing_name(r.get("detail") or "") for r in rows if r.get("change") in _MERGED} - {""}
    found = _split_removed(found, removed)
    keys = [_causes(f, by_id, removed) for f in found]
    defects = {
        k for f, ks in zip(found, keys, strict=False) if f.get("key") == "defect" for k in ks if k[0] == "defect-now"
    }
    keys = [[k for k in ks if k[0] != "defect-now" or k in defects] for ks in keys]  # only a defect's failure joins
    owner: dict[tuple[Any, ...], int] = {}
    parent = list(range(len(found)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, ks in enumerate(keys):  # the causes first
        for k in ks:
            if k[0] == "api":
                continue
            if k in owner:
                a, b = root(owner[k]), root(i)
                parent[max(a, b)] = min(a, b)
            else:
                owner[k] = i
    # then one API's findings, where each is still of that API alone: a value drift of one loss is not
    # folded into a finding of 23 APIs that share another cause with that loss
    apis: dict[int, set[str]] = {}
    for i, f in enumerate(found):
        apis.setdefault(root(i), set()).update(_names(f))
    alone: dict[tuple[Any, ...], list[int]] = {}  # the groups of that API alone, per key
    for i, ks in enumerate(keys):
        for k in ks:
            if k[0] == "api" and apis[root(i)] == {k[1]}:
                alone.setdefault(k, []).append(i)
    for members in alone.values():
        for i in members[1:]:
            a, b = root(members[0]), root(i)
            parent[max(a, b)] = min(a, b)
    groups: dict[int, list[int]] = {}
    for i in range(len(found)):
        groups.setdefault(root(i), []).append(i)
    out = []
    for first, members in sorted(groups.items()):
        if len(members) == 1:
            out.append(found[first])
            continue
        shared = [
            k for k in {k for i in members for k in keys[i]} if sum(k in keys[i] for i in members) > 1
        ]  # the keys that joined them
        out.append(_join([found[i] for i in members], set(shared), by_id))
    scoped = any("your_code" in f for f in out)  # --usage: the findings touching the team's code stay first
    out.sort(key=lambda f: (scoped and not f.get("your_code"), _section(f) != "contracts", ORDER.index(f["change"])))
    for number, f in enumerate(out, 1):
        f["number"] = number
    return out


def of_report(rows: list[model.ContractRow], candidate_ran: bool = True) -> list[model.Finding]:
    """The findings of a report's contract rows: :func:`group` (one per failure
    pattern, across APIs), then :func:`merge` (one per upstream cause)."""
    return merge(group(rows, candidate_ran), rows)
