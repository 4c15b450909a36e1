"""Findings: the differing contracts of a gate report grouped by cause, for a
person who reads the first lines only.

A *finding* is the set of contracts with one change (``broken``, ``changed``,
``fixed``, ``new``, ``gone``) whose failure details share one cause, across
APIs: one upstream change that breaks nine losses is one finding listing the
losses, not nine. The cause is read from the detail's pattern
(``optax_gate.gate.base.details`` parses it and says it in words):

=================  ============================================================  =======================
cause              detail it recognises                                          grouped by
=================  ============================================================  =======================
``defect``         a pinned upstream defect that no longer reproduces            defect id
``numeric``        ``kit.tolerances.assert_close``'s message: ``element (i) is   dtype of the result and
                   a, expected e (error E, bound B = N ULP of DTYPE; worst       the size of the worst
                   error W ULP)``                                                error (``float32``-sized)
``dtype``          ``expected DTYPE, got ...: DTYPE``                            dtypes got instead
``raises``         an exception escaped ``pytest.raises`` expecting another      the type expected
                   (``raised TypeError instead of AssertionError: ...``,         (``negative`` contracts:
                   ``optax_gate.gate.run.outcomes``)                                 "input checks")
``nonfinite``      snapshot drift of the generated non-finite record only        the input classes
                   (``nan_param: '[''r3'']' -> none``)
``loss-edge``      snapshot drift of the generated loss edge-input record        the outputs (value,
                   (``loss_value: ok float32[2] .. -> non-finite ...``)          gradient)
``dtype-variant``  snapshot drift of the generated bfloat16/float16/float64/     the dtype and how the
                   complex64 ``init_update`` record                              outcome moved
``edge-hyper``     snapshot drift of the generated edge-hyperparameter record    the keys
                   (``weight_decay=0/nan_inf_params/updates: r1,r3 -> none``)
``x64``            snapshot drift of the generated x64 record of a schedule or   the outputs
                   loss (``x64_int32_steps: float32[10] finite -> ...``)
``corner``         snapshot drift of the corner grids (``corner.empty_leaf:      the corners, and how
                   raises ValueError -> ok float32[] 1``; :func:`corner_cause`)  the first moved
                                                                                 (numbers aside)
``state-dtype``    snapshot drift whose leaves changed dtype                     the (old, new) dtype
                   (``.acc_grads['bias']: bfloat16[2] -> float32[2]``)           pairs and the state fields
                                                                                 (``acc_grads``,
                                                                                 :func:`state_field`)
``state-shape``    snapshot drift whose leaves changed shape                     the leaf paths
``state-value``    snapshot drift of values only (``count: int32[]=0 ->          the leaf paths
                   int32[]=1``)
``message``        anything else                                                 the message with numbers,
                                                                                 quoted values and step or
                                                                                 leaf indices replaced by
                                                                                 ``#`` (pytest's bare
                                                                                 ``assert`` text: and the
                                                                                 test)
``new-uncontr.``   ``new, not contracted``: a public name that no table of the    one cause
                   generated surface contracts knows
``new``/``gone``   ran in only one environment                                   (one cause; "every API"
                                                                                 when the candidate did not
                                                                                 run at all)
=================  ============================================================  =======================

Parametrize ids never enter a key (they are in the contract id, not the
detail), so ``test_x[float16]`` and ``test_x[bfloat16]`` failing the same way
are one finding.

One upstream cause, one finding (:func:`merge`, :func:`of_report`). The
grouping above joins contracts that fail *the same way*; one upstream change
often fails in several ways, in several kinds of evidence (hand-written
contracts, the generated sweep, the API surface, the warnings). ``merge``
then joins, transitively, the findings that are evidence of one cause,
recognised as follows (``broken``/``changed``/``fixed`` findings only; ``new``
and ``gone`` say where a contract ran, not what changed):

==============  =============================================================  ===========================
cause           recognised by                                                  joins
==============  =============================================================  ===========================
``removed``     every row of a contract finding says one dotted name does not  the contract findings of
                exist (``No module named 'optax.monte_carlo'``, ``module       that name, the API surface
                'optax' has no attribute 'x'``, ``cannot import name 'x' from  rows ``removed`` at or under
                'optax.y'``)                                                   it (a "removed: N names"
                                                                               finding is split by such
                                                                               names first), a warning
                                                                               naming it
``defect-now``  a pinned upstream defect that no longer reproduces because     the defect's finding and
                the contract now fails otherwise, and a ``broken``/``changed``  that one: **one**
                finding of the same API failing the same way (the failures'    ``changed`` finding, "known
                patterns equal: pytest's words, numbers and quoted values      upstream defect X no longer
                replaced, ``raised X instead of Y`` read as ``X: message``)    reproduces; it now raises
                                                                               ValueError …", never broken
                                                                               and fixed at once
``dtype-now``   one API's results now come out in another dtype, read from     the findings of that API
                any of: a state entry's new dtype (``state-dtype``), an        saying that dtype (the
                error of that dtype's size (``numeric``: "float64 results      MultiSteps accumulator:
                have float32-sized errors"), a result's new dtype              its state snapshot, its
                (``dtype``), a dtype the state summary of a corner gains       float64 trajectories and
                (``corner``: ``state bfloat16,int32`` -> ``state               its wrapper corners)
                bfloat16,float32,int32``)
``corner-       one corner's outcome moving the same way (numbers aside):      all of them, across APIs:
moved``         ``base/int``: ``ok py float64 …`` -> ``ok float32 …``          three schedules' int step,
                                                                               the tree reductions' empty
                                                                               leaf (0.2.8)
``values``      a value drift of one API's output, in float32 and under x64    that API's findings of it
                (``result``, ``x64_result``)
``variant-     one API's bfloat16 and complex64 ``init_update`` outcomes       that API's findings of them
moved``         moving the same way (``ValueError`` -> ``ok``)
``error-now``   an error raised before, now raised with one message (its        all of them, across APIs:
                first 40 characters, numbers aside): an exception that          the losses' new input
                escaped ``pytest.raises`` expecting another, a corner's        checks (0.2.8: "Expected
                recorded error message                                         the input to have a dtype
                                                                               …", "Shape mismatch …") in
                                                                               the contracts and the
                                                                               corner grids
``params-      a non-finite parameter reaches fewer (or more) outputs: a      all of them, across APIs:
nonfinite``     ``nonfinite`` record of the ``nan_param`` class, an            one behaviour seen by two
                ``edge-hyper`` record of the ``nan_inf_params`` input, the     generated records (the
                direction the same                                             zero weight decay that no
                                                                               longer multiplies a NaN
                                                                               parameter, optax 0.2.8)
``api``         findings about one API only (a contract finding of one API,    all of them: one release's
                an API surface row of one public path)                         changes to one API are read
                                                                               as one change
==============  =============================================================  ===========================

Findings that concern several APIs are joined only through the keys above
that name a behaviour, not just an API, never through one of their APIs
(``api``): a cause shared by six losses stays apart from one loss's other
change. A joined line says each part's cause once: parts that say the same
but for their numbers (two schedules' ``base/int`` corners) are said once. A joined finding takes
the place of the first of its parts, and the most severe change of its parts
(``broken`` > ``changed`` > ``fixed``; ``changed`` for ``defect-now``); its
``parts`` keep each joined finding's change, section and cause, ``changes``
its contract rows per change, ``causes`` the keys that joined it; its line
says every part's cause once and counts the rows per change ("2 contracts:
1 broken, 1 fixed"). The ``api`` rule is a heuristic: two unrelated changes
to one API in one release read as one finding whose line names both. On the
723-contract optax 0.2.8 report (``tests/meta/data``): 12 findings → 8.

Findings are ordered broken, changed, fixed, new, gone, then
by the number of contracts (most first), then API. Each is one line:
``"`optax.MultiSteps`: <cause> (4 contracts broken: <tests>)"``, or for a cause
shared by several APIs ``"6 APIs (`optax.huber_loss`, …): <cause> (9 contracts
broken: <tests>)"``.
"""

from __future__ import annotations

import re
from typing import Any

from optax_gate.gate.base.details import (DTYPE, and_join, EPS, ITEMSIZE, NONFINITE_CLASSES, RAISED, Ulp, defect_parts, is_defect_fixed, is_recorded_message,
                                     named_list, nonfinite_direction, nonfinite_leaves, nonfinite_words, normalise, now_words, number, parse_drift, parse_ulp, pytest_words,
                                     recorded_message, shorten, state_cost)

ORDER = ("broken", "changed", "fixed", "new", "gone")
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
#: (``optax_gate.kit.surface_probe.VARIANT_DTYPES``).
DTYPE_VARIANTS = ("init_update_bfloat16", "init_update_float16", "init_update_float64", "init_update_complex64")
#: Keys of the generated edge-hyperparameter snapshot
#: (``optax_gate.kit.surface_edges``): ``<hyperparameter>=0/<input class>[/updates
#: or /state/<entry>]``, about which outputs come out non-finite, not about the
#: optimizer state's structure (an entry absent from a record is finite).
EDGE_KEY = re.compile(r"^\w+=0/\w+(?:/.*)?$")
#: Key prefix of the generated x64 snapshots (``tests/contracts/test_surface_x64.py``):
#: a schedule's or loss's output under ``jax_enable_x64``, not optimizer state.
X64_PREFIX = "x64"
#: Key prefix of the corner-grid snapshots (``optax_gate.kit.surface_corners``):
#: an API's outcome at one corner input (an empty leaf, a -inf logit in forward
#: mode, a wrapper's bfloat16 state through a scan), not optimizer state.
CORNER_PREFIX = "corner."
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


def corner_cause(leaves: list[Any]) -> tuple | None:
    """The ``corner`` cause of a drift of the corner-grid snapshots
    (``tests/contracts/test_surface_corners_*.py``: keys ``corner.<corner>[/<output>]``),
    grouped by the corners that moved and how the first of them moved
    (numbers aside: two APIs whose corner went ok -> TypeError and
    ValueError -> ok are two findings); None for another drift."""
    if leaves and all(leaf.path.startswith(CORNER_PREFIX) for leaf in leaves):
        first = leaves[0]  # the corner the finding's line shows (corner_text): how it moved, numbers aside
        return ("corner", tuple(sorted(leaf.path[len(CORNER_PREFIX):] for leaf in leaves)),
                _outcome_pattern(first.old), _outcome_pattern(first.new))
    return None


#: A transformation corner's recorded outcome (``optax_gate.kit.surface_corners.transformation_outcome``).
_TRANSFORMATION_OUTCOME = re.compile(r"(ok|non-finite) u (\S+) \|u\| (\S+) u0 (\S+) s (\S+)")


_KIND = r"(?:py \w+|\w+(?:\[[\d,]*\])?(?: weak)?)"
_NUMBER = r"(?:-?inf|nan|-?[\d.]+(?:e[-+]\d+)?)"
#: A schedule corner's record (``surface_corners.schedule_outcomes``): status, the results' kinds, a value per step.
_SCHEDULE_OUTCOME = re.compile(rf"(ok|non-finite) ({_KIND}(?:/{_KIND})*) ({_NUMBER}(?: {_NUMBER})*)")


def _schedule_words(value: str) -> str | None:
    """``ok py float 0.04 0.1 …`` -> ``ok (a Python float at steps 0, 1, …: 0.04, 0.1, …)``; None for
    another value (a tree corner's one value is no schedule's value per step)."""
    from optax_gate.kit.surface_corners import SCHEDULE_STEPS

    m = _SCHEDULE_OUTCOME.fullmatch(value)
    if not m or len(m[3].split()) != len(SCHEDULE_STEPS):
        return None

    def kind(text: str) -> str:
        if text.startswith("py "):  # a Python number, or NumPy's float64 scalar (a float subclass)
            return "a NumPy float64 scalar" if text == "py float64" else f"a Python {text[3:]}"
        name, weak = text.removesuffix(" weak"), text.endswith(" weak")
        return f"a {'weakly typed ' if weak else ''}{name} array"
    steps = ", ".join(map(str, SCHEDULE_STEPS))
    return f"{m[1]} ({' or '.join(kind(k) for k in m[2].split('/'))} at steps {steps}: {', '.join(m[3].split())})"


#: A sharded corner's record (``optax_gate.kit.surface_sharded.outcome``): update shardings, state counts, comparison.
_SHARDED_OUTCOME = re.compile(r"ok u ([\w,]+) s ([\w,]+)(?: (.+))?")


def _sharded_words(value: str) -> str | None:
    """``ok u rep,m,dm s dmx2,repx3 same`` -> ``ok (updates replicated / over
    model / over data x model; state: 2 leaves over data x model and 3 leaves
    replicated; the same values as on one device)`` (each letter the initial
    of a mesh axis, ``surface_sharded.AXIS_LETTERS``); None for another value."""
    from optax_gate.kit.surface_sharded import AXIS_LETTERS

    m = _SHARDED_OUTCOME.fullmatch(value)
    if not m:
        return None

    def where(spec: str) -> str:
        if spec == "rep":
            return "replicated"
        if spec == "1dev":
            return "on one device"
        return "over " + " x ".join(AXIS_LETTERS.get(d, "-" if d == "_" else d) for d in spec)
    updates = " / ".join(where(s) for s in m[1].split(",")) if m[1] != "none" else "none"
    counts = [c.rpartition("x") for c in m[2].split(",")] if m[2] != "none" else []
    state = and_join([f"{n} {'leaf' if n == '1' else 'leaves'} {where(spec)}" for spec, _, n in counts]) or "no leaves"
    compared = ("the values against one device under /one_device" if m[3] is None
                else "the same values as on one device" if m[3] == "same"
                else f"{m[3]} than on one device" if m[3].startswith("other ")
                else "on one device it raises " + m[3].removeprefix("1dev raises ") if m[3].startswith("1dev raises ")
                else m[3])
    return f"ok (updates {updates}; state: {state}; {compared})"


def outcome_words(value: str) -> str:
    """A corner's recorded shorthand in words. A transformation corner: ``ok
    u f32 |u| 0.03 u0 0.01 s f32x6,i32x1`` -> ``ok (updates float32, norm
    0.03, first entry 0.01; state: 6 float32 and 1 int32 leaves)``; a schedule
    corner: ``ok py float64 0.04 0.1 0.28 4e-06 4e-06`` -> ``ok (a NumPy
    float64 scalar at steps 0, 1, 2, 20, 21: 0.04, 0.1, 0.28, 4e-06,
    4e-06)`` (the steps: ``surface_corners.SCHEDULE_STEPS``); a sharded corner
    as :func:`_sharded_words` says. Any other value as it is."""
    from optax_gate.kit.surface_corners import SHORT_DTYPES
    m = _TRANSFORMATION_OUTCOME.fullmatch(value)
    if not m:
        return _schedule_words(value) or _sharded_words(value) or value
    long = {short: name for name, short in SHORT_DTYPES.items()}

    def dtypes(text: str) -> str:
        return "/".join(long.get(d, d) for d in text.split(","))
    counts = [c.rpartition("x") for c in m[5].split(",")] if m[5] != "none" else []
    each = [f"{n} {long.get(d, d)}" for d, _, n in counts]
    state = and_join(each)
    state = f"{state} leaves" if counts else "no leaves"
    return f"{m[1]} (updates {dtypes(m[2])}, norm {m[3]}, first entry {m[4]}; state: {state})"


def corner_text(evidence: list[Any]) -> str:
    """A corner drift in words: the first corner's outcome in the baseline and now, and how many more moved."""
    leaf = evidence[0][0]
    old, new = ("nothing" if v == "absent" else recorded_message(v) if is_recorded_message(leaf.path) else outcome_words(v)
                for v in (leaf.old, leaf.new))
    n = len(evidence[0]) - 1
    more = f" (and {n} more corner{'s' if n > 1 else ''})" if n else ""
    return f"at corner `{leaf.path[len(CORNER_PREFIX):]}` the outcome differs: {old} in the baseline, {new} now{more}"


def _size(ulp: Ulp) -> str:
    """The narrower dtype whose rounding the worst error matches (``float32``
    for float64 results off by about 1e-8), or "" when none."""
    narrower = [d for d in ("float32", "float16", "bfloat16") if EPS[d] > EPS.get(ulp.dtype, 1.0) and ulp.worst_relative <= EPS[d]]
    return narrower[0] if narrower else ""


def _direction(leaves: list[Any]) -> str:
    """fewer / more / other non-finite outputs over every leaf of a drift
    (``details.nonfinite_direction``); mixed directions are "other". A value
    the row's detail cut short (``absent…``, ``outcomes.MESSAGE_LIMIT``) says
    no direction."""
    found = {nonfinite_direction(leaf.old, leaf.new) for leaf in leaves if not leaf.cut} or {"other"}
    return found.pop() if len(found) == 1 else "other"


def row_cause(row: dict[str, Any], candidate_ran: bool) -> tuple[tuple, Any]:
    """(grouping key, parsed evidence) of one differing contract. The key
    holds no API: contracts of several APIs with one key are one finding."""
    change, detail = row["change"], row.get("detail") or ""
    if change == "new" and NOT_CONTRACTED in detail:  # a public name no contract could be generated for (test_surface_sweep)
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
        return ("dtype-variant", tuple(sorted(leaf.path for leaf in leaves)),
                tuple(sorted((_outcome_pattern(leaf.old), _outcome_pattern(leaf.new)) for leaf in leaves))), leaves
    if leaves and all(EDGE_KEY.match(leaf.path) for leaf in leaves):
        return ("edge-hyper", tuple(sorted(leaf.path for leaf in leaves)), _direction(leaves)), leaves
    if leaves and all(leaf.path.startswith(X64_PREFIX) for leaf in leaves):
        return ("x64", tuple(sorted(leaf.path for leaf in leaves))), leaves
    if corner_cause(leaves):
        return corner_cause(leaves), leaves
    if leaves:
        moved = [leaf for leaf in leaves if None not in leaf.dtypes and leaf.dtypes[0] != leaf.dtypes[1]]
        if moved:  # by dtype pair and by state field: `acc_grads` and `hyperparams` moving alike are two changes
            return ("state-dtype", tuple(sorted({leaf.dtypes for leaf in moved})),
                    tuple(sorted({state_field(leaf.slot) for leaf in moved}))), leaves
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
    bare = bool(re.match(r"(?:AssertionError: )?assert ", detail))  # pytest's bare assert: the pattern alone says little
    # two recorded outcomes compared (``assert 'ok' == 'ValueError'``): the expected one is part of the
    # cause, or 'ok' where 'ValueError' was expected and 'ok' where a recompilation was would read as one
    outcomes = _OUTCOMES.match(detail)
    return ("message", row.get("baseline"), row.get("candidate"), normalise(words),
            test_name(row["id"])[0] if bare else "", outcomes.groups() if outcomes else ()), words


def _subject(matches: list[re.Match]) -> str:
    """What came out in the wrong dtype, from the details' own words."""
    names = []
    for m in matches:
        root = re.match(r"\s*\['([^']+)'\]", m["got"])
        words = [w for w in re.findall(r"[A-Za-z_]+", m["what"]) if w not in ("AssertionError", "step", "leaf")]
        name = root[1] if root else (words[-1] if words else "")
        if name and name not in names and name + "s" not in names:
            names = [n for n in names if n != name.rstrip("s")] + [name]
    return " and ".join(names) or "results"


def _text(key: tuple, evidence: list[Any], rows: list[dict[str, Any]]) -> str:
    kind = key[0]
    if kind == "gone":
        return "did not run in the candidate"
    if kind == "new":
        return "runs only in the candidate"
    if kind == "new-uncontracted":
        why = f": {key[1]}" if key[1] else ""
        return f"new, not contracted: public in the candidate, and no contract could be generated from its signature{why}"
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
        return (f"{nonfinite_words(key[2])}: `{leaf.path}`: update leaves {nonfinite_leaves(leaf.old)} non-finite in the "
                f"baseline, {nonfinite_leaves(leaf.new)} now{more}")
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
        return corner_text(evidence)
    if kind == "edge-hyper":
        leaf = evidence[0][0]
        name, _, rest = leaf.path.partition("=0/")
        inputs, _, output = rest.partition("/")
        old, new = ("none" if v == "absent" else v for v in (leaf.old, leaf.new))
        more = f" (and {len(evidence[0]) - 1} more outputs)" if len(evidence[0]) > 1 else ""
        if any(x.path.endswith("/updates") and x.old == "absent" for x in evidence[0]):
            # every edge records its updates: an added one is an edge the baseline's factory did not take
            return (f"with `{name}=0`, recorded in the candidate only: the baseline's factory has no `{name}` "
                    f"(a parameter added, see the API surface); with {inputs.replace('_', ' ')}, `{output or 'the update'}` "
                    f"{new} now{more}")
        shown = nonfinite_direction(leaf.old, leaf.new)  # the words match the output shown, whatever the others did
        if key[2] == "other" and shown != "other" and len(evidence[0]) > 1:
            more = f" (and {len(evidence[0]) - 1} more outputs, not all the same way)"
        return (f"with `{name}=0` and {inputs.replace('_', ' ')}, {nonfinite_words(shown if key[2] == 'other' else key[2])}: "
                f"`{output or 'the update'}` {old} in the baseline, {new} now{more}")
    if kind == "state-value":
        leaf = evidence[0][0]
        old, new = (leaf.old.partition("=")[2] or leaf.old), (leaf.new.partition("=")[2] or leaf.new)
        more = f" and {len(evidence[0]) - 1} more leaves" if len(evidence[0]) > 1 else ""
        return f"optimizer state holds other values: `{leaf.path}` {old} → {new}{more}"
    if kind == "numeric":
        dtype, size = key[1], key[2]
        lo, hi = min(u.ulps for u in evidence), max(u.ulps for u in evidence)
        allowed = f"{lo}" if lo == hi else f"{lo} to {hi}"
        return (f"{dtype} results {f'have {size}-sized errors' if size else 'are off'}: off by up to "
                f"{number(max(u.worst_relative for u in evidence))} relative = "
                f"{number(max(u.worst_ulps for u in evidence))} ULP of {dtype}, allowed {allowed} ULP")
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
    return ": ".join(part for part in (outcomes, shorten(first)) if part)


def test_name(contract_id: str) -> tuple[str, str]:
    """(test in plain words, parametrize id) of a pytest node id:
    ``test_multi_steps.py::test_trajectory_over_two_full_cycles[float64-k2]`` ->
    ``("trajectory over two full cycles", "float64-k2")``."""
    func = contract_id.rsplit("::", 1)[-1]
    name, _, params = func.partition("[")
    return name.removeprefix("test_").replace("_", " "), params.rstrip("]")


def subject(apis: list[str]) -> str:
    """Who a finding is about: ```optax.sgd```, or ``3 APIs (`a`, `b`, `c`)``
    (``details.named_list``: at most ``details.NAMED`` named)."""
    if len(apis) == 1:
        return f"`{apis[0]}`"
    return f"{len(apis)} APIs ({named_list(apis)})"


def group(rows: list[dict[str, Any]], candidate_ran: bool = True) -> list[dict[str, Any]]:
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
    groups: dict[tuple, dict[str, Any]] = {}
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
    findings = []
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
        findings.append({
            "number": len(findings) + 1, "change": change, "api": api, "apis": apis, "cause": cause, "key": key[0],
            "contracts": [row["id"] for row in ordered], "tests": [[name, k] for name, k in tests.items()],
            "text": f"{who}: {cause} ({n} contract{'s' if n > 1 else ''} {change}: {listed})",
        })
    return findings


def of_report(rows: list[dict[str, Any]], candidate_ran: bool = True) -> list[dict[str, Any]]:
    """The findings of a report's contract rows: :func:`group` (one per failure
    pattern, across APIs), then :func:`merge` (one per upstream cause)."""
    return merge(group(rows, candidate_ran), rows)


# ---------------------------------------------------------------- one upstream cause, one finding

#: The dotted name a failure says is missing: ``No module named 'optax.monte_carlo'``,
#: ``module 'optax' has no attribute 'monte_carlo'``, ``cannot import name 'x' from 'optax.y'``.
_MISSING = (re.compile(r"No module named '(?P<name>[\w.]+)'"),
            re.compile(r"module '(?P<module>[\w.]+)' has no attribute '(?P<attr>\w+)'"),
            re.compile(r"cannot import name '(?P<attr>\w+)' from '(?P<module>[\w.]+)'"))
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


def _section(f: dict[str, Any]) -> str:
    return f.get("section", "contracts")


def _names(f: dict[str, Any]) -> list[str]:
    """The APIs (contract findings) or public paths (API surface) a finding concerns."""
    return list(f.get("apis") or [f["api"]])


def _causes(f: dict[str, Any], rows: dict[str, dict[str, Any]], removed: set[str]) -> list[tuple]:
    """The upstream causes a finding is evidence of (see the module docstring):
    ``("removed", name)``, ``("defect-now", api, failure)``, ``("api", api)``."""
    if f["change"] not in _MERGED:
        return []
    keys: list[tuple] = []
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


#: The dtypes a corner's recorded state summary lists (``ok params bfloat16 state bfloat16,int32``).
_CORNER_STATE = re.compile(r"\bstate ([\w,]+)")


def _outcome_pattern(value: str) -> str:
    """A recorded outcome with its numbers replaced by ``#`` (dtype names kept:
    ``ok float32[] -0.9209`` -> ``ok float32[] #``; a run of numbers is one ``#``);
    a sharded corner's record as ``ok sharded`` and its comparison with one
    device (its layouts and state counts are each API's own: nine APIs that
    stop raising under explicit sharding are one finding)."""
    m = _SHARDED_OUTCOME.fullmatch(value or "")
    if m:  # layouts aside: one API's state has other leaves than another's
        return f"ok sharded {m[3] or ''}".strip()
    return re.sub(r"#(?:\s+#)+", "#", re.sub(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?!\w)", "#", value))


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


def behaviour_keys(row: dict[str, Any]) -> list[tuple]:
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
    keys: list[tuple] = []
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
            old, new = (set(",".join(_CORNER_STATE.findall(v)).split(",")) for v in (leaf.old, leaf.new))
            now += sorted(d for d in new - old if d in ITEMSIZE)
            keys.append(("corner-moved", leaf.path[len(CORNER_PREFIX):], _outcome_pattern(leaf.old), _outcome_pattern(leaf.new)))
    elif kind == "dtype-variant":
        keys += [("variant-moved", api, leaf.old, leaf.new) for leaf in evidence if not leaf.cut]
    elif kind == "nonfinite" and key[1] == ("nan_param",) and key[2] != "other":
        return [("params-nonfinite", key[2])]
    elif (kind == "edge-hyper" and key[2] != "other"
          and all(leaf.path.partition("=0/")[2].partition("/")[0] == "nan_inf_params" for leaf in evidence)):
        return [("params-nonfinite", key[2])]
    elif kind == "message" and (row.get("detail") or "").startswith("snapshot drift of values: "):
        keys += [("values", api, name.removeprefix(X64_PREFIX + "_")) for name in _VALUES.findall(row["detail"])]
    return [("dtype-now", api, d) for d in dict.fromkeys(now)] + list(dict.fromkeys(keys))


def _split_removed(found: list[dict[str, Any]], removed: set[str]) -> list[dict[str, Any]]:
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
            piece = {**f, "apis": part, "api": part[0] if len(part) == 1 else f"{len(part)} names",
                     "cause": f"removed: {named_list(part)}"}
            if len(part) == 1:  # one name: named as a single surface row is
                del piece["apis"]
            piece["text"] = f"broken API surface {piece['api']}: {piece['cause']}"
            out.append(piece)
    return out


def _part(f: dict[str, Any], rows_of: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What a joined finding keeps of one of its findings: change, section,
    cause in words, contract count, names; ``pattern``: its rows' failure
    pattern (:func:`_failure`; a fixed defect: what happens now) when they
    share one, else ""; ``gone``: every row says a name does not exist."""
    where = {"surface": "API surface: ", "warnings": "warning: ", "dependencies": "dependency: "}.get(_section(f), "")
    mine = [rows_of[c] for c in f["contracts"] if c in rows_of]
    patterns = {_failure(defect_parts(r)[2] if is_defect_fixed(r) else r.get("detail") or "") for r in mine}
    behaviours = [k for r in mine for k in behaviour_keys(r)]
    return {"change": f["change"], "section": _section(f), "cause": where + f["cause"], "contracts": len(f["contracts"]),
            "names": _names(f), "pattern": patterns.pop() if len(patterns) == 1 else "",
            "gone": bool(mine) and all(missing_name(r.get("detail") or "") for r in mine),
            "params_nonfinite": bool(behaviours) and all(k[0] == "params-nonfinite" for k in behaviours)}


def _params_nonfinite_text(direction: str, rows: list[dict[str, Any]]) -> str:
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
    return (f"{nonfinite_words(direction)} when a parameter is NaN or inf: the update{state} "
            f"(records {', '.join(dict.fromkeys(records))})")


def _join(group: list[dict[str, Any]], keys: set[tuple], rows_of: dict[str, dict[str, Any]]) -> dict[str, Any]:
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
        for change, n in (f.get("changes") or {f["change"]: len(f["contracts"])}).items():
            changes[change] = changes.get(change, 0) + n
    names = list(dict.fromkeys(n for f in group for n in _names(f)))
    apis = sorted({n for f in contract for n in _names(f)}) or names
    defect = next((p for p in parts if p["cause"].startswith("known upstream defect")), None)
    now_kind = [k for k in keys if k[0] == "defect-now"]
    severity = min((ORDER.index(p["change"]) for p in parts), default=0)
    change = ORDER[severity]
    removed = sorted({k[1] for k in keys if k[0] == "removed"}, key=len)
    if defect is not None and now_kind and all(p["change"] != "fixed" or p is defect for p in parts):
        # a known defect whose behaviour changed into another failure: one `changed` finding saying both
        change = "changed"
        ident = re.match(r"known upstream defect `([^`]*)`", defect["cause"])[1]
        now = defect["cause"].rsplit("; now ", 1)[-1]
        cause = f"known upstream defect `{ident}` no longer reproduces; it now {now}"
        others = [p["cause"] for p in parts if p is not defect and not (p["pattern"] and p["pattern"] == defect["pattern"])]
    elif removed:
        ids = [c for f in group if _section(f) == "contracts" for c in f["contracts"]]
        failing = [c for c in ids if missing_name((rows_of.get(c) or {}).get("detail") or "")]
        errors = sorted({e for c in failing for e in re.findall(r"\b(ModuleNotFoundError|ImportError|AttributeError)\b",
                                                              rows_of[c].get("detail") or "")}) or ["an error"]
        said = [f"importing or calling it raises {'/'.join(errors)}"]
        gone = [n for p in parts if p["section"] == "surface" for n in p["names"]]
        if gone:
            said.append(f"API surface: {len(gone)} name{'s' if len(gone) != 1 else ''} removed")
        cause = f"`{removed[0]}` is gone from the candidate: " + "; ".join(said)
        others = [p["cause"] for p in parts if not p["gone"] and not (p["section"] == "surface" and p["cause"].startswith(
            "API surface: removed"))]
    elif any(k[0] == "params-nonfinite" for k in keys) and all(p["params_nonfinite"] or p["section"] != "contracts"
                                                                 for p in parts):
        direction = next(k[1] for k in keys if k[0] == "params-nonfinite")
        mine = [rows_of[c] for f in group if _section(f) == "contracts" for c in f["contracts"] if c in rows_of]
        cause = _params_nonfinite_text(direction, mine)
        others = [p["cause"] for p in parts if not p["params_nonfinite"]]
    else:
        cause = parts[0]["cause"] if parts[0]["change"] == change else next(p["cause"] for p in parts if p["change"] == change)
        others = [p["cause"] for p in parts if p["cause"] != cause]
    said = list({_said_pattern(c): c for c in reversed([cause, *others])}.values())[::-1]  # the first of each pattern
    cause = "; ".join(_variants_once(_state_once(said)))
    ids = [c for f in contract for c in f["contracts"]]
    order = list(dict.fromkeys(test_name(c)[0] for c in ids))  # the rows of one test together, as group() keeps them
    ids.sort(key=lambda c: order.index(test_name(c)[0]))
    tests: list[list[Any]] = [[name, sum(test_name(c)[0] == name for c in ids)] for name in order]
    merged = {**group[0], "change": change, "apis": apis if contract else names, "cause": cause,
              "contracts": ids, "tests": tests, "parts": parts,
              "changes": changes, "causes": sorted({"/".join(map(str, k)) for k in keys})}
    merged["section"] = "contracts" if contract else _section(group[0])
    merged["api"] = (merged["apis"][0] if len(merged["apis"]) == 1 else f"{len(merged['apis'])} APIs") if contract else group[0]["api"]
    merged["key"] = "merged"
    for field in ("your_code", "your_code_not_scanned"):
        if any(field in f for f in group):
            merged[field] = list(dict.fromkeys(w for f in group for w in f.get(field) or []))
    if any("your_code_notes" in f for f in group):
        merged["your_code_notes"] = {k: v for f in group for k, v in (f.get("your_code_notes") or {}).items()}
    n = len(merged["contracts"])
    listed = ", ".join(f"{name} ×{k}" if k > 1 else name for name, k in tests)
    merged["text"] = f"{subject(merged['apis'])}: {cause}" + (f" ({contracts_words(merged)}: {listed})" if n else "")
    if any(f.get("bisect") != group[0].get("bisect") for f in group):  # several bisections: their entries, once each
        merged["bisect"] = [e for i, f in enumerate(group) for e in f.get("bisect") or []
                            if e not in [x for g in group[:i] for x in g.get("bisect") or []]]
    return merged


def _said_pattern(cause: str) -> str:
    """What a part's cause says, numbers and "(and N more …)" aside: two
    schedules' ``base/int`` corners moving alike are said once in a joined line."""
    pattern = _outcome_pattern(re.sub(r" \(and \d+ more [^)]*\)", "", cause))
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
    return [f"the update of a {' or '.join(dict.fromkeys(moves[c]))} PyTree differs: {c}" if move else c for move, c in out]


def merge(found: list[dict[str, Any]], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One finding per upstream cause, across evidence kinds and APIs (see the
    module docstring, "One cause, one finding"): findings that share a cause
    (:func:`_causes`) are joined, transitively, into the place of the first;
    ``parts`` of the joined finding keeps each one's change, section and cause.
    The findings are renumbered from 1. ``rows``: the report's contracts."""
    by_id = {r["id"]: r for r in rows}
    removed = {missing_name(r.get("detail") or "") for r in rows if r.get("change") in _MERGED} - {""}
    found = _split_removed(found, removed)
    keys = [_causes(f, by_id, removed) for f in found]
    defects = {k for f, ks in zip(found, keys) if f.get("key") == "defect" for k in ks if k[0] == "defect-now"}
    keys = [[k for k in ks if k[0] != "defect-now" or k in defects] for ks in keys]  # only a defect's failure joins
    owner: dict[tuple, int] = {}
    parent = list(range(len(found)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, ks in enumerate(keys):
        for k in ks:
            if k in owner:
                a, b = root(owner[k]), root(i)
                parent[max(a, b)] = min(a, b)
            else:
                owner[k] = i
    groups: dict[int, list[int]] = {}
    for i in range(len(found)):
        groups.setdefault(root(i), []).append(i)
    out = []
    for first, members in sorted(groups.items()):
        if len(members) == 1:
            out.append(found[first])
            continue
        shared = [k for k in {k for i in members for k in keys[i]}
                  if sum(k in keys[i] for i in members) > 1]  # the keys that joined them
        out.append(_join([found[i] for i in members], set(shared), by_id))
    scoped = any("your_code" in f for f in out)  # --usage: the findings touching the team's code stay first
    out.sort(key=lambda f: (scoped and not f.get("your_code"), _section(f) != "contracts", ORDER.index(f["change"])))
    for k, f in enumerate(out, 1):
        f["number"] = k
    return out


def heading(finding: dict[str, Any]) -> str:
    """A finding's change as its heading says it: ``changed, 1 broken`` for a
    finding headed by another change that holds broken contracts (a known
    defect that now fails otherwise: the third trial scanned the headings
    for "broken" and missed it), else the change itself."""
    broken = (finding.get("changes") or {}).get("broken", 0) if finding["change"] != "broken" else 0
    return f"{finding['change']}, {broken} broken" if broken else finding["change"]


def contracts_words(finding: dict[str, Any]) -> str:
    """``"3 contracts broken"``, or for a finding joining several changes
    ``"3 contracts: 2 broken, 1 fixed"``."""
    n = len(finding["contracts"])
    changes = finding.get("changes") or {}
    head = f"{n} contract{'s' if n > 1 else ''}"
    if len(changes) > 1:
        return head + ": " + ", ".join(f"{k} {c}" for c, k in sorted(changes.items(), key=lambda i: ORDER.index(i[0])))
    return f"{head} {finding['change']}"
