"""Differing contracts grouped into findings, one per failure pattern, each said in words (``docs/findings.md``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from optax_gate.gate.base import model
from optax_gate.gate.base.corner_words import (
    SHARDED_OUTCOME,
    TRANSFORMATION_OUTCOME,
    corner_gloss,
    long_dtype,
    outcome_words,
)
from optax_gate.gate.base.details import RAISED, defect_parts, is_defect_fixed, normalise, now_words, pytest_words
from optax_gate.gate.base.drift import (
    DTYPE,
    EPS,
    NONFINITE_CLASSES,
    Ulp,
    corner_name,
    is_recorded_message,
    nonfinite_direction,
    nonfinite_leaves,
    nonfinite_words,
    parse_drift,
    parse_ulp,
    recorded_message,
    state_cost,
)
from optax_gate.gate.base.literals import one_of
from optax_gate.gate.base.plain_text import named_list, number, shorten

#: A finding's change (``model.Finding``'s ``change``).
FindingChange = Literal["broken", "changed", "fixed", "new", "gone"]
ORDER: tuple[FindingChange, ...] = ("broken", "changed", "fixed", "new", "gone")


#: Where the subject of a dtype failure's own words ends (``update of the bfloat16 leaf``: ``update``).
_PREPOSITION = re.compile(r"\s+(?:of|after|at|in|for|under|with)\s+")
_WANT_GOT = re.compile(rf"(?P<what>[^:]*): expected (?P<want>{DTYPE}), got (?P<got>.*)")
_OUTCOMES = re.compile(r"(?:AssertionError: )?assert '([^']*)' == '([^']*)'")
_STANDARD = {"broken": ("passed", "failed"), "fixed": ("failed", "passed")}  # outcomes a change implies


#: Outputs of the generated loss edge-input snapshot
#: (``tests/contracts/test_surface_loss_edges.py``): a drift of these keys is
#: about a loss at an edge input, not about the optimizer state.
LOSS_EDGE_OUTPUTS = ("loss_grad", "loss_value")
#: Keys of the generated dtype variants of ``init_update``
#: (``tests/contracts/test_surface_dtypes.py``): about the update of a
#: bfloat16, float16, float64 or complex64 PyTree, not about the optimizer state
#: (``optax_gate.kit.surface.probe.VARIANT_DTYPES``).
DTYPE_VARIANTS = ("init_update_bfloat16", "init_update_float16", "init_update_float64", "init_update_complex64")
#: Keys of the generated edge-hyperparameter snapshot
#: (``optax_gate.kit.surface.edges``): ``<hyperparameter>=0/<input class>[/updates
#: or /state/<entry>]``, about which outputs come out non-finite, not about the
#: optimizer state's structure (an entry absent from a record is finite).
EDGE_KEY = re.compile(r"^\w+=0/\w+(?:/.*)?$")
#: Key prefix of the generated x64 snapshots (``tests/contracts/test_surface_x64.py``):
#: a schedule's or loss's output under ``jax_enable_x64``, not optimizer state.
X64_PREFIX = "x64"
#: The skip reason of ``test_surface_sweep.py::test_known`` for a public name
#: the surface tables do not know (outside the baseline).
NOT_CONTRACTED = "new, not contracted"
#: What a contract's skip reason says when the API it pins does not exist in that
#: environment (``tests/contracts/test_microbatching.py`` at an optax without
#: ``optax.microbatching``): skipped there and run in the other reads ``new``
#: (or ``gone``), not ``changed`` (``optax_gate.gate.judge.compare``).
ABSENT_API = "is absent in this optax"
#: What ``test_surface_sweep.test_known`` says before the reason no contract could be generated.
GENERATION_FAILED = "no contract could be generated:"


def state_field(slot: str) -> str:
    """The field of an optimizer state entry, indices dropped: ``[0].mu`` ->
    ``mu``, ``.inner_state[0].trace`` -> ``trace``, ``.acc_grads`` -> ``acc_grads``."""
    fields = re.findall(r"\.(\w+)", slot)
    return fields[-1] if fields else slot


def corner_cause(leaves: list[Any]) -> tuple[Any, ...] | None:
    """The ``corner`` cause of a drift of the corner-grid snapshots
    (``tests/contracts/test_surface_corners_*.py``: keys ``corner.<corner>[/<output>]``),
    grouped by the corners that moved and how the first of them moved
    (numbers aside: two APIs whose corner went ok -> TypeError and
    ValueError -> ok are two findings); None for another drift."""
    names = [corner_name(leaf.path) for leaf in leaves]
    if leaves and all(n is not None for n in names):
        first = leaves[0]  # the corner the finding's line shows (corner_text): how it moved, numbers aside
        return ("corner", tuple(sorted(str(n) for n in names)), *corner_move(first.old, first.new))
    return None


def corner_move(old: str, new: str) -> tuple[str, str]:
    """How a corner's outcome moved, numbers aside (:func:`outcome_pattern` of each). Two transformation
    corners' records (``ok u f32 |u| 0.1 u0 0.2 s f32x9,i32x2 h f32x5``) as their status and update dtypes,
    the new one with the state's and the hyperparameters' dtypes it gained (``s +bf16 h +bf16``), or lost
    where it gained none: sgd's state turning wholly bfloat16 and adam's partly are one move, whatever
    other leaves (a bool, a PRNG key) each state holds, and whether both sides were finite or both not."""
    a, b = TRANSFORMATION_OUTCOME.fullmatch(old or ""), TRANSFORMATION_OUTCOME.fullmatch(new or "")
    if not (a and b):
        return outcome_pattern(old), outcome_pattern(new)

    def dtypes(text: str | None) -> set[str]:
        return {part.rpartition("x")[0] or part for part in (text or "none").split(",") if part != "none"}

    moved = []
    for field, group in (("s", 5), ("h", 6)):
        gained, lost = dtypes(b[group]) - dtypes(a[group]), dtypes(a[group]) - dtypes(b[group])
        if gained or lost:
            moved.append(f"{field} {'+' + ','.join(sorted(gained)) if gained else '-' + ','.join(sorted(lost))}")
    # ok -> ok and non-finite -> non-finite are one move (the dtypes gained say it); ok -> non-finite another
    was, now = (a[1], b[1]) if a[1] != b[1] else ("=", "=")
    return f"{was} u {a[2]}", " ".join([f"{now} u {b[2]}", *moved])


#: A transformation corner's move as :func:`corner_move` says it: status, update dtypes, dtypes gained or lost.
_MOVE = re.compile(r"\S+ u \S+((?: [sh] [+-]\S+)+)")


def corner_lead(move: str) -> str:
    """What a transformation corner's move changes, in words, where its dtypes moved (:func:`corner_move`'s
    new side): ``= u f32 s +bf16 h +bf16`` -> ``the optimizer state now holds bfloat16 leaves, and the
    hyperparameters are now bfloat16``; "" for another move."""
    m = _MOVE.fullmatch(move or "")
    if not m:
        return ""
    words = []
    for field, sign, dtypes in re.findall(r" ([sh]) ([+-])(\S+)", m[1]):
        names = " and ".join(long_dtype(d) for d in dtypes.split(","))
        if field == "s":
            words.append(f"the optimizer state {'now holds' if sign == '+' else 'no longer holds'} {names} leaves")
        else:
            words.append(f"the hyperparameters {'are now' if sign == '+' else 'are no longer'} {names}")
    return ", and ".join(words)


def corner_text(evidence: list[Any]) -> str:
    """A corner drift in words: the first corner (glossed where its name is shorthand: :func:`corner_gloss`), its
    outcome in the baseline and now, and which more differ (named, not said to differ alike)."""
    leaf = evidence[0][0]
    old, new = (
        "not recorded" if v == "absent" else recorded_message(v) if is_recorded_message(leaf.path) else outcome_words(v)
        for v in (leaf.old, leaf.new)
    )
    others = [str(corner_name(other.path)) for other in evidence[0][1:]]
    more = f" (other corners differing too: {named_list(others)})" if others else ""
    name = str(corner_name(leaf.path))
    gloss = corner_gloss(name)
    gloss = f" ({gloss})" if gloss else ""
    return f"at corner `{name}`{gloss} the outcome differs: {old} in the baseline, {new} now{more}"


def _size(ulp: Ulp) -> str:
    """The narrower dtype whose rounding the worst error matches (``float32``
    for float64 results off by about 1e-8), or "" when none."""
    narrower = [
        d
        for d in ("float32", "float16", "bfloat16")
        if EPS[d] > EPS.get(ulp.dtype, 1.0) and ulp.worst_relative <= EPS[d]
    ]
    return narrower[0] if narrower else ""


def _direction(leaves: list[Any]) -> str:
    """fewer / more / other non-finite outputs over every leaf of a drift
    (``drift.nonfinite_direction``); mixed directions are "other". A value
    the row's detail cut short (``absent…``, ``outcomes.MESSAGE_LIMIT``) says
    no direction."""
    found = {nonfinite_direction(leaf.old, leaf.new) for leaf in leaves if not leaf.cut} or {"other"}
    return found.pop() if len(found) == 1 else "other"


def row_cause(row: Mapping[str, Any], candidate_ran: bool) -> tuple[tuple[Any, ...], Any]:
    """(grouping key, parsed evidence) of one differing contract. The key
    holds no API: contracts of several APIs with one key are one finding."""
    change, detail = row["change"], row.get("detail") or ""
    if (
        change == "new" and NOT_CONTRACTED in detail
    ):  # a public name no contract could be generated for (test_surface_sweep)
        why = detail.partition(GENERATION_FAILED)[2].strip().partition(" (")[0]
        return ("new-uncontracted", why), None  # one cause across APIs with the same reason
    if change in ("new", "gone"):
        return (change, "" if candidate_ran or change == "new" else "*"), None
    if is_defect_fixed(row):
        return ("defect", defect_parts(row)[0]), defect_parts(row)
    if change == "fixed":
        return ("was", normalise(detail)), detail.removeprefix("was: ")
    leaves = parse_drift(detail)
    if leaves and all(leaf.path in NONFINITE_CLASSES for leaf in leaves):
        return ("nonfinite", tuple(sorted(leaf.path for leaf in leaves)), _direction(leaves)), leaves
    if leaves and all(leaf.path in LOSS_EDGE_OUTPUTS for leaf in leaves):
        return ("loss-edge", tuple(sorted(leaf.path for leaf in leaves))), leaves
    if leaves and all(leaf.path in DTYPE_VARIANTS for leaf in leaves):
        return (
            "dtype-variant",
            tuple(sorted(leaf.path for leaf in leaves)),
            tuple(sorted((outcome_pattern(leaf.old), outcome_pattern(leaf.new)) for leaf in leaves)),
        ), leaves
    corner = corner_cause(leaves)  # before the edge keys: a range key ``factor=0/error`` reads as one too
    if corner:
        return corner, leaves
    if leaves and all(EDGE_KEY.match(leaf.path) for leaf in leaves):
        return ("edge-hyper", tuple(sorted(leaf.path for leaf in leaves)), _direction(leaves)), leaves
    if leaves and all(leaf.path.startswith(X64_PREFIX) for leaf in leaves):
        return ("x64", tuple(sorted(leaf.path for leaf in leaves))), leaves
    if leaves:
        moved = [leaf for leaf in leaves if None not in leaf.dtypes and leaf.dtypes[0] != leaf.dtypes[1]]
        if moved:  # by dtype pair and by state field: `acc_grads` and `hyperparams` moving alike are two changes
            return (
                "state-dtype",
                tuple(sorted({leaf.dtypes for leaf in moved})),
                tuple(sorted({state_field(leaf.slot) for leaf in moved})),
            ), leaves
        reshaped = tuple(sorted(normalise(leaf.path) for leaf in leaves if leaf.shapes[0] != leaf.shapes[1]))
        if reshaped:
            return ("state-shape", reshaped), leaves
        return ("state-value", tuple(sorted(normalise(leaf.path) for leaf in leaves))), leaves
    ulp = parse_ulp(detail)
    if ulp:
        return ("numeric", ulp.dtype, _size(ulp)), ulp
    m = _WANT_GOT.search(detail)
    if m:
        got = tuple(sorted(set(re.findall(DTYPE, m["got"])) - {m["want"]}))
        if got:
            return ("dtype", got), m
    m = RAISED.match(detail)
    if m:
        return ("raises", m["want"], row.get("kind") == "negative"), m
    words = pytest_words(detail)
    bare = bool(
        re.match(r"(?:AssertionError: )?assert ", detail)
    )  # pytest's bare assert: the pattern alone says little
    # two recorded outcomes compared (``assert 'ok' == 'ValueError'``): the expected one is part of the
    # cause, or 'ok' where 'ValueError' was expected and 'ok' where a recompilation was would read as one
    outcomes = _OUTCOMES.match(detail)
    return (
        "message",
        row.get("baseline"),
        row.get("candidate"),
        normalise(words),
        test_name(row["id"])[0] if bare else "",
        outcomes.groups() if outcomes else (),
    ), words


def _subject(matches: list[re.Match[str]]) -> str:
    """What came out in the wrong dtype, from the details' own words."""
    names: dict[str, str] = {}  # the noun, singular -> how it is said
    for m in matches:
        root = re.match(r"\s*\['([^']+)'\]", m["got"])
        head = _PREPOSITION.split(m["what"].strip(), maxsplit=1)[0]
        words = [w for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", head) if w not in ("AssertionError", "step", "leaf")]
        name = root[1] if root else " ".join(words)
        if not name:
            continue
        noun = name.split()[-1]
        key = noun.rstrip("s")
        if key in names and names[key] != name:  # two phrases about one noun: the noun alone, plural if either is
            name = key + "s" if noun.endswith("s") or names[key].endswith("s") else key
        names[key] = name
    return " and ".join(names.values()) or "results"


def _text(key: tuple[Any, ...], evidence: list[Any], rows: list[dict[str, Any]]) -> str:
    kind = key[0]
    if kind == "gone":
        return "did not run in the candidate"
    if kind == "new":
        return "runs only in the candidate"
    if kind == "new-uncontracted":
        why = f": {key[1]}" if key[1] else ""
        return (
            f"new, not contracted: public in the candidate, and no contract could be generated from its signature{why}"
        )
    if kind == "defect":
        ident, reason, now = evidence[0]
        return f"known upstream defect `{ident}` no longer reproduces ({reason}); now {now_words(now)}"
    if kind == "was":
        return f"passes now; failed in the baseline: {shorten(pytest_words(evidence[0]), 90)}"
    if kind == "state-dtype":
        costs = state_cost([leaf for leaves in evidence for leaf in leaves], name_dtypes=len(key[1]) > 1)
        pairs = ", ".join(f"{o} → {n}" for o, n in key[1])
        return f"optimizer state {pairs}: " + "; ".join(dict.fromkeys(costs))
    if kind == "state-shape":
        leaf = next(leaf for leaf in evidence[0] if leaf.shapes[0] != leaf.shapes[1])
        return f"optimizer state changes shape: `{leaf.path}` [{leaf.shapes[0]}] → [{leaf.shapes[1]}]"
    if kind == "nonfinite":
        leaf = evidence[0][0]
        more = f" and {len(evidence[0]) - 1} more input classes" if len(evidence[0]) > 1 else ""
        return (
            f"{nonfinite_words(key[2])}: `{leaf.path}`: update leaves {nonfinite_leaves(leaf.old)} non-finite in the "
            f"baseline, {nonfinite_leaves(leaf.new)} now{more}"
        )
    if kind == "loss-edge":
        leaf = evidence[0][0]
        more = " (and its gradient)" if len(evidence[0]) > 1 else ""
        return f"the loss differs at an edge input: `{leaf.path}` {leaf.old} → {leaf.new}{more}"
    if kind == "dtype-variant":
        leaf = evidence[0][0]
        return f"the update of a {leaf.path.rpartition('_')[2]} PyTree differs: {leaf.old} → {leaf.new}"
    if kind == "x64":
        leaf = evidence[0][0]
        more = f" (and {len(evidence[0]) - 1} more outputs)" if len(evidence[0]) > 1 else ""
        return f"under x64 the output differs: `{leaf.path}` {leaf.old} → {leaf.new}{more}"
    if kind == "corner":
        lead = corner_lead(key[-1])
        return f"{lead}: {corner_text(evidence)}" if lead else corner_text(evidence)
    if kind == "edge-hyper":
        leaf = evidence[0][0]
        name, _, rest = leaf.path.partition("=0/")
        inputs, _, output = rest.partition("/")
        old, new = ("none" if v == "absent" else v for v in (leaf.old, leaf.new))
        more = f" (and {len(evidence[0]) - 1} more outputs)" if len(evidence[0]) > 1 else ""
        if any(x.path.endswith("/updates") and x.old == "absent" for x in evidence[0]):
            # every edge records its updates: an added one is an edge the baseline's factory did not take
            return (
                f"with `{name}=0`, recorded in the candidate only: the baseline's factory has no `{name}` "
                f"(a parameter added, see the API surface); with {inputs.replace('_', ' ')}, "
                f"`{output or 'the update'}` "
                f"{new} now{more}"
            )
        shown = nonfinite_direction(leaf.old, leaf.new)  # the words match the output shown, whatever the others did
        if key[2] == "other" and shown != "other" and len(evidence[0]) > 1:
            more = f" (and {len(evidence[0]) - 1} more outputs, not all the same way)"
        return (
            f"with `{name}=0` and {inputs.replace('_', ' ')}, "
            f"{nonfinite_words(shown if key[2] == 'other' else key[2])}: "
            f"`{output or 'the update'}` {old} in the baseline, {new} now{more}"
        )
    if kind == "state-value":
        leaf = evidence[0][0]
        old, new = (leaf.old.partition("=")[2] or leaf.old), (leaf.new.partition("=")[2] or leaf.new)
        more = f" and {len(evidence[0]) - 1} more leaves" if len(evidence[0]) > 1 else ""
        return f"optimizer state holds other values: `{leaf.path}` {old} → {new}{more}"
    if kind == "numeric":
        dtype, size = key[1], key[2]
        lo, hi = min(u.ulps for u in evidence), max(u.ulps for u in evidence)
        allowed = f"{lo}" if lo == hi else f"{lo} to {hi}"
        return (
            f"{dtype} results {f'have {size}-sized errors: off' if size else 'are off'} by up to "
            f"{number(max(u.worst_relative for u in evidence))} relative = "
            f"{number(max(u.worst_ulps for u in evidence))} ULP of {dtype}, allowed {allowed} ULP"
        )
    if kind == "dtype":
        wanted = "/".join(dict.fromkeys(m["want"] for m in evidence))
        return f"{_subject(evidence)} come out {'/'.join(key[1])} instead of {wanted}"
    if kind == "raises":
        got = "/".join(sorted({m["got"] for m in evidence}))
        messages = [m["message"] for m in evidence if m["message"]]
        first = max(messages, key=messages.count, default="")  # the most common message
        what = "input checks now raise" if key[2] else "now raises"
        return f"{what} {got} instead of {key[1]}" + (f": {shorten(first, 90)}" if first else "")
    first = evidence[0]
    b, c = rows[0].get("baseline"), rows[0].get("candidate")
    drift = rows[0].get("kind") == "snapshot" and (b, c) == ("passed", "failed")  # the detail says what drifted
    again = (rows[0].get("detail") or "").startswith("fails differently")  # compare.py: both failed, another failure
    outcomes = "" if drift or again or _STANDARD.get(rows[0]["change"]) == (b, c) else f"{b} → {c}"
    props = [PROTOCOL_WORDS[p] for p in dict.fromkeys(_protocol_property(r["id"]) for r in rows) if p]
    where = f"at {'; '.join(props)}" if props else ""  # which call of the transformation, first
    return ": ".join(part for part in (where, outcomes, shorten(first)) if part)


#: The protocol properties of ``test_surface_transformations.py::test_protocol[<api>-<property>]``
#: (``optax_gate.kit.surface.probe.PROPERTIES``) in words: which call of the transformation a finding is about.
PROTOCOL_WORDS = {
    "init_update": "`init` then `update` on float32 params",
    "scan_carry": "the optimizer state carried through `jax.lax.scan`",
    "trajectory_finite": "three steps under `jax.lax.scan`",
    "jit_eager": "a jitted step against an eager one",
    "no_recompile": "a second jitted step",
    "none_leaf": "`update` with a `None` leaf in the params and gradients",
    "zero_grads_finite": "`update` with zero gradients",
    "unknown_kwarg": "`update(..., not_an_argument=1.0)`, an unknown keyword argument",
    "value_float": "`update(..., value=1.0)`, the loss as a Python float",
    "value_array": "`update(..., value=jnp.asarray(1.0))`, the loss as an array",
}


def _protocol_property(cid: str) -> str:
    """The protocol property a ``test_protocol[<api>-<property>]`` contract checks, or ""."""
    m = re.search(r"::test_protocol\[.*-(\w+)\]$", cid)
    return m[1] if m and m[1] in PROTOCOL_WORDS else ""


def test_name(contract_id: str) -> tuple[str, str]:
    """(test in plain words, parametrize id) of a pytest node id:
    ``test_multi_steps.py::test_trajectory_over_two_full_cycles[float64-k2]`` ->
    ``("trajectory over two full cycles", "float64-k2")``."""
    func = contract_id.rsplit("::", 1)[-1]
    name, _, params = func.partition("[")
    return name.removeprefix("test_").replace("_", " "), params.rstrip("]")


def subject(apis: list[str]) -> str:
    """Who a finding is about: ```optax.sgd```, or ``3 APIs (`a`, `b`, `c`)``
    (``plain_text.named_list``: at most ``plain_text.NAMED`` named)."""
    if len(apis) == 1:
        return f"`{apis[0]}`"
    return f"{len(apis)} APIs ({named_list(apis)})"


def group(rows: list[model.ContractRow], candidate_ran: bool = True) -> list[model.Finding]:
    """The findings of a report's contract rows.

    Args:
      rows: the report's ``contracts`` (``{"id", "api", "change", "detail",
        "defect", "baseline", "candidate", ...}``); unchanged rows are ignored.
      candidate_ran: False when the candidate did not run at all: its ``gone``
        contracts are then one finding for "every API".

    Returns:
      ``[{"number", "change", "api", "apis", "cause", "key", "contracts":
      [ids], "tests": [[plain test name, count]], "text"}]`` in report order
      (see the module docstring), numbered from 1. ``apis``: the APIs the
      finding concerns, sorted (every API of its rows); ``api``: the one API,
      ``"every API"``, or ``"N APIs"``. ``contracts`` lists the rows test by
      test (the rows of one test together, in the order of ``tests``).
    """
    groups: dict[tuple[str, tuple[Any, ...]], dict[str, Any]] = {}
    for row in rows:
        if row["change"] not in ORDER:
            continue
        key, evidence = row_cause(row, candidate_ran)
        g = groups.setdefault((row["change"], key), {"rows": [], "evidence": []})
        g["rows"].append(row)
        g["evidence"].append(evidence)
    made = []
    for (change, key), g in groups.items():
        apis = sorted({row["api"] for row in g["rows"]})
        api = "every API" if key[:2] == ("gone", "*") else apis[0] if len(apis) == 1 else f"{len(apis)} APIs"
        made.append((change, key, g, apis, api))
    made.sort(key=lambda m: (ORDER.index(m[0]), -len(m[2]["rows"]), m[3]))
    findings: list[model.Finding] = []
    for change, key, g, apis, api in made:
        tests: dict[str, int] = {}
        for row in g["rows"]:
            name = test_name(row["id"])[0]
            tests[name] = tests.get(name, 0) + 1
        order = list(tests)
        ordered = sorted(g["rows"], key=lambda r: order.index(test_name(r["id"])[0]))  # stable: rows keep their order
        cause = _text(key, g["evidence"], g["rows"])
        n = len(g["rows"])
        listed = ", ".join(f"{name} ×{k}" if k > 1 else name for name, k in tests.items())
        who = "`every API`" if api == "every API" else subject(apis)
        findings.append(
            {
                "number": len(findings) + 1,
                "change": one_of(change, ORDER, "finding change"),
                "api": api,
                "apis": apis,
                "cause": cause,
                "key": key[0],
                "contracts": [row["id"] for row in ordered],
                "tests": [[name, k] for name, k in tests.items()],
                "text": f"{who}: {cause} ({n} contract{'s' if n > 1 else ''} {change}: {listed})",
            }
        )
    return findings


def outcome_pattern(value: str) -> str:
    """A recorded outcome with its numbers replaced by ``#`` (dtype names kept:
    ``ok float32[] -0.9209`` -> ``ok float32[] #``; a run of numbers is one ``#``);
    a transformation corner's record with its leaf counts dropped (``s
    f32x9,i32x2 h bf16x5`` -> ``s f32,i32 h bf16``: the dtypes that moved, not
    how many leaves each API's state has);
    a sharded corner's record as ``ok sharded`` and its comparison with one
    device (its layouts and state counts are each API's own: nine APIs that
    stop raising under explicit sharding are one finding)."""
    m = SHARDED_OUTCOME.fullmatch(value or "")
    if m:  # layouts aside: one API's state has other leaves than another's
        return f"ok sharded {m[3] or ''}".strip()
    if TRANSFORMATION_OUTCOME.fullmatch(value or ""):  # leaf counts aside: adam's state has more leaves than sgd's
        value = re.sub(r"(?<=[a-z0-9>])x\d+(?=,|\s|$)", "", value)
    return re.sub(r"#(?:\s+#)+", "#", re.sub(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?!\w)", "#", value))


def heading(finding: Mapping[str, Any]) -> str:
    """A finding's change as its heading says it: ``changed, 1 broken`` for a
    finding headed by another change that holds broken contracts (a heading
    scanned for "broken" finds it), else the change itself."""
    broken = (finding.get("changes") or {}).get("broken", 0) if finding["change"] != "broken" else 0
    return f"{finding['change']}, {broken} broken" if broken else finding["change"]


def contracts_words(finding: Mapping[str, Any]) -> str:
    """``"3 contracts broken"``, or for a finding joining several changes
    ``"3 contracts: 2 broken, 1 fixed"``."""
    n = len(finding["contracts"])
    changes = finding.get("changes") or {}
    head = f"{n} contract{'s' if n > 1 else ''}"
    if len(changes) > 1:
        return head + ": " + ", ".join(f"{k} {c}" for c, k in sorted(changes.items(), key=lambda i: ORDER.index(i[0])))
    return f"{head} {finding['change']}"
