"""The first divergence of the team's run: two recorder traces read and compared call by call, in pure Python
(``docs/module-notes.md``)."""

from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter, defaultdict
from typing import Any

from optax_gate.gate.team_run import ensemble, signatures
from optax_gate.gate.team_run.leaves import (
    ELEMENTWISE,
    bit_error,
    decode,
    is_exact,
    leaf_error,
    said_ulps,
    short_leaf,
    value_change,
)

#: APIs whose results the team keeps from step to step (its params, its optimizer): judged on their values even when
#: their inputs already differ (an eager call; the result of the team's jitted function always is).
KEPT = ("apply_updates", "incremental_update", "flax.nnx.Optimizer")


#: A function the team transformed, as the recorder names it: ``jax.jit(step)``, ``flax.nnx.value_and_grad(loss)``,
#: ``jax.lax.scan(body)``.
_TRANSFORMED = re.compile(r"^(jax|flax\.nnx)(\.lax)?\.(\w+)\(.*\)$")
#: Transformations whose results are what the team keeps from step to step (a whole step's program: its new params and
#: optimizer state; for ``flax.nnx``'s, the state of its modules and optimizer after the call).
KEPT_TRANSFORMS = ("jit", "scan", "pmap", "shard_map")


def transformed(api: str) -> str | None:
    """The transformation of a function the team transformed (``jit`` for ``flax.nnx.jit(train_step)``), or None."""
    match = _TRANSFORMED.match(api)
    return match.group(3) if match else None


def kept(api: str) -> bool:
    """Whether a call's result is one the team keeps (:data:`KEPT`, or a whole
    step it transformed: :data:`KEPT_TRANSFORMS`, ``jax.jit(step)``)."""
    return transformed(api) in KEPT_TRANSFORMS or api == "flax.nnx.Optimizer" or api.rsplit(".", 1)[-1] in KEPT


def budget(occurrence: int) -> int:
    """ULP budget of the ``occurrence``-th (1-based) call of one site: ``accumulated(occurrence, ELEMENTWISE)``."""
    return max(occurrence, 1) * ELEMENTWISE


def describe(obs: dict[str, Any]) -> str:
    """``optax.adam(...).update`` for an observation's API and call; ``(through flax....apply_gradients)`` added when a
    library made the call for the team's line."""
    said = {"call": f"{obs['api']}(...)", "()": f"{obs['api']}(...)(...)"}.get(
        obs["call"], f"{obs['api']}(...).{obs['call']}"
    )
    return f"{said} (through {obs['through']})" if obs.get("through") else said


@dataclasses.dataclass(frozen=True)
class Allowed:
    """What the leaves of the ``occurrence``-th call of a site may differ by: the ULP budget of that call, and
    ``spreads``, each leaf's spread over the ensemble of perturbed baseline runs (``ensemble.Spread``; None: none)."""

    occurrence: int
    spreads: list[Any] | None = None


def _leaves_differ(
    base: list[dict[str, Any]], cand: list[dict[str, Any]], allowed: Allowed, what: str, paths: list[str] | None = None
) -> tuple[list[str], float, bool, list[str]]:
    """Differences of two leaf lists: (texts, largest ULP error, beyond
    budget, exact texts). The values' text names the leaf of the largest
    error and how it moved (:func:`value_change`); the exact texts are the
    leaves that changed whatever rounding does (an integer or boolean leaf;
    a NaN or infinity appearing or gone), each with its value before and after.
    ``allowed.spreads``: an element the ensemble moved is judged by ``ensemble.beyond``, the others by the ULP
    budget."""
    texts, worst, beyond, exact = [], 0.0, False, []
    occurrence, spreads = allowed.occurrence, allowed.spreads
    spread: list[Any] = spreads if spreads is not None and len(spreads) == len(base) else [None] * len(base)
    over_error, over_said = (
        -1.0,
        "",
    )  # the leaf of the largest error among those beyond their budget, and its budget in words
    if len(base) != len(cand):
        return [f"{what}: {len(base)} → {len(cand)} leaves"], 0.0, True, []
    worst_at = ""
    for i, (b, c) in enumerate(zip(base, cand, strict=False)):
        name = f"{what}{(paths or [''] * len(base))[i] if paths and i < len(paths) else f'[{i}]'}"
        if "dtype" not in b or "dtype" not in c:
            if b != c:
                texts.append(f"{name}: {short_leaf(b)} → {short_leaf(c)}")
                beyond = True
            continue
        if b["dtype"] != c["dtype"]:
            moved = value_change(b, c) if b.get("n") and c.get("n") else ""
            texts.append(
                f"{name}: dtype {b['dtype']} → {c['dtype']}"
                + (f"; value {moved}" if moved else "; values the same" if b.get("n") and c.get("n") else "")
            )
            beyond = True
            continue
        if b.get("shape") != c.get("shape"):
            texts.append(f"{name}: shape {tuple(b.get('shape') or [])} → {tuple(c.get('shape') or [])}")
            beyond = True
            continue
        if not b.get("n") or not c.get("n"):
            continue  # not stored (the trace's byte budget was spent): its digest only
        error = leaf_error(b, c)
        noise = spread[i]
        if isinstance(noise, float):
            continue  # an integer or non-finite element that rounding alone moves in the ensemble
        if error > 0 and (
            is_exact(b)
            or any(math.isfinite(x) != math.isfinite(y) for x, y in zip(decode(b) or [], decode(c) or [], strict=False))
        ):
            exact.append(f"{name}: {value_change(b, c) or 'differs'}")
            beyond = True
            if is_exact(b):
                continue  # said as its values before and after, not in ULPs
        worst = max(worst, error)
        out_of, ratio = (
            ensemble.beyond(b, c, noise, budget(occurrence))
            if ensemble.moved(noise)
            else (error > budget(occurrence), None)
        )
        if out_of and error >= over_error:
            sampled = (
                f" (measured on {b['n']} of {math.prod(b.get('shape') or [1])} elements, one in "
                f"{b.get('stride')}: a larger difference elsewhere is seen by its digest, not measured)"
                if (b.get("stride") or 1) > 1
                else ""
            )
            over_error = error
            over_said = (
                f"beyond {ensemble.FACTOR}x your run's own rounding noise there: {ratio:.3g}x the spread of "
                "its perturbed baseline runs"
                if ratio is not None
                else f"budget {budget(occurrence)}"
            )
            worst_at = f" at {name}" + (f": {moved}" if (moved := value_change(b, c)) else "") + sampled
        beyond = beyond or out_of
    if over_said:
        texts.append(f"{what} values: largest error {said_ulps(over_error)} ULP ({over_said}){worst_at}")
    return texts, worst, beyond, exact


def _same_input_bits(base: dict[str, Any], cand: dict[str, Any]) -> bool:
    """Whether two matched observations' input leaves are bit-identical (their digests)."""
    return all(
        b.get("sha256") == c.get("sha256") for b, c in zip(base.get("in") or [], cand.get("in") or [], strict=False)
    )


def differences(
    base: dict[str, Any], cand: dict[str, Any], occurrence: int, noise: dict[str, list[Any]] | None = None
) -> dict[str, Any] | None:
    """What differs between two matched observations, or None. ``noise``: the
    spreads of the call's input and result leaves over the ensemble of perturbed
    baseline runs (``ensemble.spreads``): where it moved a leaf, its elements are
    judged by ``ensemble.beyond``, and a call the ensemble reached is judged on its
    values whatever its inputs (the spread holds what rounding carries into it).

    Returns:
      ``{"kinds": [...], "texts": [...], "max_ulps", "inputs_differ"}``;
      kinds among ``exception``, ``warning``, ``arguments``, ``structure``,
      ``dtype``, ``shape``, ``values``.
    """
    kinds, texts = [], []
    be, ce = base.get("exception"), cand.get("exception")
    if be != ce:
        kinds.append("exception")
        if be is not None and ce is not None:
            texts.append(f"raises {ce['type']}: {ce['message'][:200]} (was {be['type']})")
        elif ce is not None:  # be is None
            texts.append(f"raises {ce['type']}: {ce['message'][:200]}")
        elif be is not None:  # ce is None (both None cannot differ)
            texts.append(f"no longer raises {be['type']}")
    bw = Counter((w["category"], w["message"]) for w in base.get("warnings") or [])
    cw = Counter((w["category"], w["message"]) for w in cand.get("warnings") or [])
    if bw != cw:
        kinds.append("warning")
        texts += [f"warns {cat}: {msg[:200]}" for cat, msg in (cw - bw)]
        texts += [f"no longer warns {cat}: {msg[:200]}" for cat, msg in (bw - cw)]
    sig = signatures.texts(base.get("args"), cand.get("args")) if base["phase"] != "run" else []
    in_texts, in_err, in_beyond, _ = _leaves_differ(
        base.get("in") or [], cand.get("in") or [], Allowed(occurrence, (noise or {}).get("in")), "input"
    )
    identical = not sig and not in_texts and in_err == 0.0 and _same_input_bits(base, cand)
    inputs_differ = bool(sig) or in_beyond
    if sig:
        kinds.append("arguments")
        texts += sig
    worst = 0.0
    bo, co = base.get("out"), cand.get("out")
    if bo is not None and co is not None:
        if bo.get("tree") != co.get("tree"):
            kinds.append("structure")
            texts.append(
                "result's PyTree structure differs "
                f"{signatures.structure_change(str(bo.get('tree')), str(co.get('tree')))}"
            )
        else:
            out_texts, worst, beyond, exact = _leaves_differ(
                bo.get("leaves") or [],
                co.get("leaves") or [],
                Allowed(occurrence, (noise or {}).get("out")),
                "result",
                bo.get("paths"),
            )
            structural = [t for t in out_texts if "ULP" not in t]
            for kind in ("dtype", "shape"):
                if any(f": {kind} " in t for t in structural):
                    kinds.append(kind)
            if any(": dtype " not in t and ": shape " not in t for t in structural):
                kinds.append("values")
            texts += structural
            # values judged where the error is born (inputs bit-identical) or where the team keeps them (its params:
            # its jitted function's results, apply_updates); elsewhere an inherited error may grow through an
            # ill-conditioned step (Adam's m / sqrt(v)) without the team's params moving
            judged = identical or (base["phase"] == "call" and kept(base["api"])) or ensemble.reached(noise)
            if exact and not judged and not inputs_differ:
                # inputs the same within the budget, yet an integer leaf (a step count) moved or a NaN appeared or went:
                # no rounding carries that over, whatever the inputs' last bits
                kinds.append("values")
                texts += exact[:3] + ([f"and {len(exact) - 3} other leaves"] if len(exact) > 3 else [])
            elif beyond and (any("ULP" in t for t in out_texts) or exact) and judged:
                kinds.append("values")
                texts += exact[:3] + ([f"and {len(exact) - 3} other leaves"] if len(exact) > 3 else [])
                texts += [t for t in out_texts if "ULP" in t]
                if (
                    not identical and in_err > 0 and not exact
                ):  # a kept result: the error may be born before it (JAX, the model, the data)
                    within = "" if in_beyond else " (within the budget)"  # never beside a figure beyond it
                    texts.append(
                        f"its inputs already differed by up to {said_ulps(in_err)} ULP{within}: the change "
                        "may be born before it, in code that is not an Optax call (JAX, the model, the data)"
                    )
    if not kinds:
        return None
    return {
        "kinds": list(dict.fromkeys(kinds)),
        "texts": texts,
        "max_ulps": None if math.isinf(worst) else worst,
        "inputs_differ": inputs_differ,
    }


def sampled_differs(base: dict[str, Any], cand: dict[str, Any]) -> bool:
    """Whether a result leaf stored as a sample (one element in ``stride``)
    differs by its digest: its error is measured on the sample only, and a
    larger one may lie elsewhere (2.34 ULP on the sample of a kernel whose
    whole is 47.3 ULP apart)."""
    pairs = zip((base.get("out") or {}).get("leaves") or [], (cand.get("out") or {}).get("leaves") or [], strict=False)
    return any((b.get("stride") or 1) > 1 and b.get("sha256") != c.get("sha256") for b, c in pairs)


def _has_values(obs: dict[str, Any]) -> bool:
    """Whether an observation holds computed values: array leaves of its
    inputs or its result (stored or digested), or a Python number it returns."""
    out = list((obs.get("out") or {}).get("leaves") or [])
    return any("sha256" in leaf for leaf in list(obs.get("in") or []) + out) or any(
        leaf.get("py") in ("float", "int", "complex", "bool") for leaf in out
    )


#: Why a matched call was compared by structure only, or not at all (``compare``'s ``compared_by``).
WHY = {
    "built": "it builds an optimizer, a schedule or a function: no array goes in or out (compared by its arguments)",
    "traced": "traced inside a function you transformed: compared by its abstract signature here, by value at each "
    "sampled run of its program",
    "traced-unrecorded": "traced where the recorder cannot see values (inside a transformation it does not wrap)",
    "record-error": "the recorder could not store its values",
    "one-side": "called on one side only",
}


def compared_by(
    baseline: list[dict[str, Any]],
    candidate: list[dict[str, Any]],
    pairs: list[tuple[dict[str, Any] | None, dict[str, Any] | None]],
) -> dict[str, Any]:
    """How each matched call was compared: ``{"value", "structure", "none":
    counts, "why": {reason: count} (:data:`WHY`'s keys), "value_sites": the
    sites with at least one call compared by value, in order}``. A call is
    compared by value when both sides hold array values of it (its inputs or
    its result, stored or digested); by structure only when it is traced (its
    abstract signature; its values come with its runs) or builds something
    with no array in or out; not at all when the recorder failed on it or it
    happened on one side only."""
    runs = {(o["site"], o["api"], o["call"]) for o in baseline if o["phase"] == "run"}
    counts: Counter[str] = Counter()
    why: Counter[str] = Counter()
    sites: list[str] = []
    for b, c in pairs:
        if b is None or c is None:
            counts["none"] += 1
            why["one-side"] += 1
        elif b.get("record_error") or c.get("record_error"):
            counts["none"] += 1
            why["record-error"] += 1
        elif _has_values(b) and _has_values(c):
            counts["value"] += 1
            sites.append(b["site"])
        else:
            counts["structure"] += 1
            why[
                "built"
                if b["phase"] == "call"
                else "traced"
                if (b["site"], b["api"], b["call"]) in runs
                else "traced-unrecorded"
            ] += 1
    return {
        "value": counts["value"],
        "structure": counts["structure"],
        "none": counts["none"],
        "why": dict(why),
        "value_sites": list(dict.fromkeys(sites)),
    }


def compare(
    baseline: list[dict[str, Any]],
    candidate: list[dict[str, Any]],
    limit: int = 50,
    noise: dict[ensemble.Key, dict[str, list[Any]]] | None = None,
    warnings_differ: bool = False,
) -> dict[str, Any]:
    """Compare two runs' observations (:func:`read`); ``noise``: the spreads of
    the baseline's leaves over the ensemble of perturbed baseline runs
    (``ensemble.spreads``; None: the ULP budget alone, as between two runs of one baseline);
    ``warnings_differ``: a call that differs by a warning alone is a difference (``--fail-on-new-deprecations``;
    else it is listed in ``warned``, ``{"site", "call", "texts"}``, and does not make the run diverge: a run that
    turns warnings into errors raises there, an exception).

    Returns:
      ``{"compared", "differing", "first", "causes", "divergences", "sites"}``:
      ``compared`` matched pairs, ``differing`` the number of calls that
      differ, ``divergences`` the first ``limit`` of them in execution order
      (``{"site", "call", "phase", "occurrence", "kinds", "texts",
      "max_ulps", "budget_ulps", "role": "cause" | "consequence", "side"}``,
      ``side`` ``both`` or the one side the call happened on), ``first`` the
      first of them (or None), ``causes`` every cause (never cut),
      ``sites`` the sites of the causes in order, each once, and
      ``within_budget`` the calls that differ from none of those rules but
      whose results are not bit-identical (``{"calls", "max_ulps", "sites",
      "inputs_differ_sites", "first", "kept_max_ulps"}``: how many, the largest error in ULPs, their
      sites in order, each once; those of their sites where such a call's inputs already differed (its results
      follow from them, not judged); the first of them in execution order,
      ``{"site", "call", "inputs_differ"}``, whose inputs already differing
      means the difference was born in code that is not an Optax call (JAX,
      the model, the data); the largest error of the results the team keeps,
      its jitted function's and ``apply_updates``', None when none differs;
      ``shadow_only``: every such call is one the recorder saw inside the shadow
      of a transformed function (compiled with host callbacks, which fuse
      otherwise: the team's own program may be bit for bit the same));
      ``compared_by`` how each matched call was compared (:func:`compared_by`);
      ``first_differs``: ``"api@site"`` -> the first occurrence of an eager
      call (a transformed function's, ``jax.jit(step)@train.py:30``) whose
      result is not bit-identical (where a replay of its first call can tell
      the birth only if that is 1).
    """

    def keyed(observations: list[dict[str, Any]]) -> defaultdict[tuple[str, str, str, str], list[dict[str, Any]]]:
        groups: defaultdict[tuple[str, str, str, str], list[dict[str, Any]]] = defaultdict(list)
        for obs in observations:
            groups[(obs["site"], obs["api"], obs["call"], obs["phase"])].append(obs)
        return groups

    b_groups, c_groups = keyed(baseline), keyed(candidate)
    b_index = {id(o): i for i, o in enumerate(baseline)}
    c_index = {id(o): i for i, o in enumerate(candidate)}
    found: list[tuple[tuple[int, int], dict[str, Any]]] = []
    compared = 0
    drift: list[dict[str, Any]] = []
    pairs: list[tuple[dict[str, Any] | None, dict[str, Any] | None]] = []
    firsts: dict[str, int] = {}
    warned: list[dict[str, Any]] = []
    for key in set(b_groups) | set(c_groups):
        bs, cs = b_groups.get(key, []), c_groups.get(key, [])
        for n in range(max(len(bs), len(cs))):
            b, c = (bs[n] if n < len(bs) else None), (cs[n] if n < len(cs) else None)
            pairs.append((b, c))
            either = b or c
            if either is None:
                raise AssertionError("n < max(len(bs), len(cs)): one side holds the call")
            base_row = {
                "site": key[0],
                "api": key[1],
                "call": describe(either),
                "phase": key[3],
                "occurrence": n + 1,
                "budget_ulps": budget(n + 1),
                **({"via": either["via"]} if either.get("via") else {}),
            }
            if b is None or c is None:
                one = "baseline" if c is None else "candidate"
                found.append(
                    (
                        _position(b, c, b_index, c_index, len(baseline)),
                        {
                            **base_row,
                            "kinds": ["one side only"],
                            "texts": [f"called in the {one} only"],
                            "max_ulps": None,
                            "side": one,
                            "inputs_differ": True,
                        },
                    )
                )
                continue
            compared += 1
            entry = (noise or {}).get((*key, n + 1))
            diff = differences(b, c, n + 1, entry)
            if (diff or bit_error(b, c) is not None) and b["phase"] == "call":
                firsts.setdefault(f"{key[1]}@{key[0]}", n + 1)
            if diff and diff["kinds"] == ["warning"] and not warnings_differ:
                warned.append({"site": key[0], "call": describe(b), "texts": diff["texts"]})
            elif diff:
                found.append(((b_index[id(b)], 0), {**base_row, **diff, "side": "both"}))
            elif (error := bit_error(b, c)) is not None:
                drift.append(
                    {
                        "at": b_index[id(b)],
                        "site": key[0],
                        "error": error,
                        "call": describe(b),
                        "inputs_differ": not _same_input_bits(b, c),
                        "kept": b["phase"] == "call" and kept(b["api"]),
                        "shadow": b["phase"] == "run",
                        "sampled": sampled_differs(b, c),
                        "noise_ratio": ensemble.noise_ratio(b, c, entry, budget(n + 1)),
                    }
                )
    found.sort(key=lambda pair: pair[0])
    rows, inner = [], False
    for i, (_, row) in enumerate(found):
        one_sided = row["side"] != "both"
        row["role"] = "consequence" if (row.pop("inputs_differ") and (not one_sided or i > 0)) else "cause"
        if transformed(row["api"]):  # the team's jitted function: explained by a call inside it that differed first
            if inner:
                row["role"] = "consequence"
            inner = False
        elif row["phase"] != "call":
            inner = True
        rows.append(row)
    causes = [r for r in rows if r["role"] == "cause"]
    sites = list(dict.fromkeys(r["site"] for r in causes))
    drift.sort(key=lambda d: d["at"])
    within = {
        "calls": len(drift),
        "max_ulps": max((d["error"] for d in drift), default=0.0),
        "sites": list(dict.fromkeys(d["site"] for d in drift)),
        "inputs_differ_sites": list(dict.fromkeys(d["site"] for d in drift if d["inputs_differ"])),
        "first": {k: drift[0][k] for k in ("site", "call", "inputs_differ")} if drift else None,
        "kept_max_ulps": max((d["error"] for d in drift if d["kept"]), default=None),
        "shadow_only": bool(drift) and all(d["shadow"] for d in drift),
        "sampled": sum(1 for d in drift if d["sampled"]),
        **(
            {"noise_ratio": max((d["noise_ratio"] for d in drift if d["noise_ratio"] is not None), default=None)}
            if noise is not None
            else {}
        ),
    }
    by = compared_by(baseline, candidate, sorted(pairs, key=lambda p: b_index.get(id(p[0]), len(baseline))))
    return {
        "compared": compared,
        "differing": len(rows),
        "first": rows[0] if rows else None,
        "causes": causes,
        "divergences": rows[:limit],
        "sites": sites,
        "within_budget": within,
        "compared_by": by,
        "first_differs": firsts,
        "warned": sorted(warned, key=lambda w: (w["site"], w["call"]))[:limit],
    }


def _position(
    b: dict[str, Any] | None,
    c: dict[str, Any] | None,
    b_index: dict[int, int],
    c_index: dict[int, int],
    baseline_length: int,
) -> tuple[int, int]:
    """Where a one-sided call sits in the baseline's order: its own index, or
    (for a candidate-only call) the index of the baseline call matched to the
    candidate observation just before it."""
    if b is not None:
        return (b_index[id(b)], 0)
    i = c_index[id(c)]
    return (baseline_length if i >= baseline_length else i, 1)
