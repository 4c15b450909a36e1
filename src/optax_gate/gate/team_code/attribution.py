"""Static attribution (``--usage`` without a traced run): which of the team's lines a finding can reach, and what their
literal arguments say (``docs/module-notes.md``)."""

from __future__ import annotations

import ast
import dataclasses
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from optax_gate.gate.base import model
from optax_gate.gate.base.literals import one_of
from optax_gate.gate.surface.public_api import POSITIONAL, POSITIONAL_ONLY
from optax_gate.gate.team_code import call_sites, recipe_findings, usage
from optax_gate.gate.team_code.arguments import Arg
from optax_gate.gate.team_code.configuration import configuration

VERDICTS: tuple[Literal["affected", "cannot-tell", "not-affected"], ...] = ("affected", "cannot-tell", "not-affected")


#: Configuration words that are a form, not a value (a contract's ``configuration(...)`` marker):
#: the argument is a schedule (a call of an Optax ``*_schedule`` factory, or a function: Optax calls
#: it with the step count), or is passed positionally (an argument that became keyword-only).
A_SCHEDULE, POSITIONALLY = "a schedule", "passed positionally"


def _literal(text: str) -> tuple[bool, Any]:
    if text.strip().lower() in ("nan", "inf", "-inf"):
        return True, float(text)
    try:
        return True, ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False, None


def _same(a: Any, b: Any) -> bool:
    try:
        x, y = float(a), float(b)
        return x == y or (math.isnan(x) and math.isnan(y))
    except (TypeError, ValueError):
        same: bool = a == b  # annotated: the literals' == is a bool
        return same


def is_schedule(path: str) -> bool:
    """Whether the public path names an Optax schedule factory: optax's schedules are all named
    ``*_schedule`` (``linear_schedule``, ``warmup_cosine_decay_schedule``) or ``join_schedules``."""
    name = path.rpartition(".")[2]
    return path.startswith("optax.") and (name.endswith("_schedule") or name == "join_schedules")


def catches(scan: usage.Scan, exception: str) -> list[str]:
    """``file:line`` of the team's ``except``/``pytest.raises`` clauses naming
    ``exception`` (or one of several, ``"TypeError, ValueError"``); a bare
    ``except`` or ``except Exception`` catches the new type as well as the old."""
    names = [n.strip() for n in exception.split(",") if n.strip()]
    return [
        u.where for u in scan.uses if u.how == "catch" and any(re.search(rf"\b{re.escape(n)}\b", u.path) for n in names)
    ]


@dataclasses.dataclass(frozen=True)
class Site:
    """One use of a finding's APIs, to be judged: the ``use``; ``direct``,
    whether it calls one of the APIs itself (else a constructor built from
    one); ``params``, the called API's parameters at the baseline
    (``surface.Param``: defaults, and the names positional arguments land
    on); ``note``, the API surface's word on its line and ``binding`` its
    verdict (``binding.SITE_VERDICTS``); ``handed``, the finding's keyword ->
    the called constructor's own argument that reaches the part unchanged
    (``composition`` ``passes``), for a use through composition."""

    use: usage.Use
    direct: bool
    params: tuple[Any, ...] = ()
    note: str = ""
    handed: dict[str, str] | None = None
    binding: str = ""


@dataclasses.dataclass(frozen=True)
class Known:
    """What the baseline says of its APIs, for :func:`attribute`: ``reached``
    (``composition.of_records``: public path -> paths it is built from),
    ``targets`` (public path -> definition, so that aliases count),
    ``signatures`` (public path -> ``surface.Param`` tuple: defaults, and the
    parameter each positional argument lands on) and ``passes`` (public path
    -> {its argument: {"part:argument"}}, the arguments a constructor hands to
    a part unchanged, so ``adamw(weight_decay=0.1)`` is judged against a
    finding about ``add_decayed_weights``' ``weight_decay=0``)."""

    reached: dict[str, set[str]] = dataclasses.field(default_factory=dict)
    targets: dict[str, str] = dataclasses.field(default_factory=dict)
    signatures: dict[str, Any] = dataclasses.field(default_factory=dict)
    passes: dict[str, dict[str, set[str]]] = dataclasses.field(default_factory=dict)


#: (verdict, why, the argument that decided it: a parameter name, ``*args``/``**kwargs``, or "")
Judged = tuple[str, str, str]


def _passed(site: Site) -> dict[str, tuple[Arg, str]]:
    """The call's arguments by the parameter they land on at the baseline: name -> (the argument as the
    code decides it, ``positionally`` or ``by keyword``). A positional argument beyond the signature's
    slots keeps its index."""
    slots = [p.name for p in site.params if p.kind in (POSITIONAL_ONLY, POSITIONAL)]
    args = site.use.args or tuple(
        (k, Arg(t, "literal", repr(v)) if ok else Arg(t, "unknown", why=f"`{t}` is known at run time"))
        for k, t in site.use.arguments
        for ok, v in [_literal(t)]
    )
    out = {}
    for key, arg in args:
        if key.isdigit():
            i = int(key)
            out[slots[i] if i < len(slots) else key] = (arg, "positionally")
        else:
            out[key] = (arg, "by keyword")
    return out


def _value(name: str, want: str, arg: Arg, lead: str) -> tuple[str, str]:
    """Does the argument ``arg`` (said as ``lead``) meet the configuration ``name=want``?"""
    if want == A_SCHEDULE:
        if arg.kind == "call" and is_schedule(arg.value):
            return "affected", f"{lead}: a schedule ({arg.value}), the finding's {name}=a schedule"
        if arg.kind == "callable":
            return (
                "affected",
                f"{lead}: a function, which Optax calls as a schedule; the finding is about {name}=a schedule",
            )
        if arg.kind == "literal" or (arg.kind == "call" and arg.value.startswith("jax.numpy.")):
            return (
                "not-affected",
                f"{lead}: {'a constant' if arg.kind == 'literal' else 'an array'}, not a schedule; the "
                f"finding is about {name}=a schedule",
            )
        return "cannot-tell", f"{lead}: whether it is a schedule is known at run time" + (
            f" ({arg.why})" if arg.why else ""
        )
    ok, wanted = _literal(want)
    if arg.kind == "literal" and ok:
        _, value = _literal(arg.value)
        if _same(value, wanted):
            return "affected", f"{lead}, the finding's {name}={want}"
        return "not-affected", f"{lead}; the finding is about {name}={want}"
    if arg.kind == "path" and not ok:  # a dtype named: jnp.bfloat16 against the word bfloat16
        same = arg.value.rpartition(".")[2] == want
        return (
            ("affected", f"{lead}, the finding's {name}={want}")
            if same
            else ("not-affected", f"{lead}; the finding is about {name}={want}")
        )
    if arg.kind == "literal" and not ok:
        _, value = _literal(arg.value)
        return (
            ("affected", f"{lead}, the finding's {name}={want}")
            if str(value) == want
            else ("not-affected", f"{lead}; the finding is about {name}={want}")
        )
    if (arg.kind == "call" and is_schedule(arg.value)) or arg.kind == "callable":
        return "cannot-tell", f"{lead}: a schedule; whether it takes the value {want} is known at run time"
    return "cannot-tell", f"{lead}: {arg.why or 'known at run time'}"


def _keyword(site: Site, name: str, want: str, passed: dict[str, tuple[Arg, str]]) -> tuple[str, str]:
    """(verdict, why) of one keyword of the configuration at one call (:func:`judge`)."""
    use = site.use
    got = passed.get(name)
    if got is None:
        if use.positional is None or use.star_kwargs:
            return (
                "cannot-tell",
                f"passes {'*args' if use.positional is None else '**kwargs'}: whether {name} is among them is "
                "known at run time",
            )
        if use.partial:
            return "cannot-tell", f"a functools.partial that does not fix {name}: the call of the partial may pass it"
        if want == POSITIONALLY:
            return "not-affected", f"does not pass {name}; the finding is about {name} passed positionally"
        default = next((p.value for p in site.params if p.name == name), None)
        if default is None:
            return "cannot-tell", f"does not pass {name}, whose default the gate cannot read statically"
        ok, value = _literal(default)
        arg = (
            Arg(default, "literal", repr(value))
            if ok
            else Arg(default, "unknown", why=f"its default `{default}` is known at run time")
        )
        return _value(name, want, arg, f"does not pass {name} (default {default})")
    arg, form = got
    if want == POSITIONALLY:
        if form == "positionally":
            return "affected", f"passes {name} positionally ({arg.said()}), the finding's configuration"
        return "not-affected", f"passes {name} by keyword; the finding is about {name} passed positionally"
    return _value(name, want, arg, f"passes {name}={arg.said()}")


def judge(site: Site, config: dict[str, Any], caught: list[str]) -> Judged:
    """(verdict, why, decided by) of one use of a finding's APIs
    (:class:`Site`), against the configuration of one group of the
    finding's contract rows and the lines that catch its error
    (``caught``). What decides it, in order: a misuse's changed error
    (caught or not); the API surface (the call breaks; a change of the
    signature that binds the call as before); each keyword of the
    configuration, from the call's literal form (:func:`_keyword`); the
    dtype arguments; else what only the run can tell."""
    use, direct, note, handed = site.use, site.direct, site.note, site.handed
    if config.get("raises") and config.get(
        "negative"
    ):  # a misuse's error: the signature's own changes are another cause
        also = f"; this line breaks for another cause (API surface: {note})" if note.startswith("breaks") else ""
        if not caught:
            return (
                "not-affected",
                (
                    f"the change is to a misuse's error ({config['raises']} before); only a call that already "
                    f"raises there meets it, and your code catches {config['raises']} nowhere{also}"
                ),
                "",
            )
        return (
            "cannot-tell",
            f"your code catches {config['raises']} at {', '.join(caught[:3])}{also}: cannot tell without --run",
            "",
        )
    if note.startswith("breaks"):
        if config.get("signature"):  # the finding is the signature's change: the break is its cause
            return "affected", f"API surface: {note}", "signature"
        # another finding on the same API: the line breaks first for the signature's cause (said there)
        return (
            "cannot-tell",
            (
                f"this line breaks first for another cause (API surface: {note}); whether this change reaches "
                "it once that is fixed: cannot tell without --run"
            ),
            "",
        )
    if config.get("signature") and direct and site.binding == "unaffected":
        return (
            "not-affected",
            f"API surface: {note}: the change to its signature binds this call as before",
            "signature",
        )
    if config.get("signature") and direct and site.binding == "cannot-tell":
        return "cannot-tell", "passes *args/**kwargs: which parameters they land on is known at run time", "*args"
    keywords = config.get("keywords") or {}
    if keywords:
        if not direct:
            if not all(name in (handed or {}) for name in keywords):
                return (
                    "cannot-tell",
                    f"the finding is about {_kw(keywords)} of a part it is built from: cannot tell without --run",
                    "",
                )
            keywords = {
                (handed or {})[name]: want for name, want in keywords.items()
            }  # the part gets the constructor's argument as given
        passed = _passed(site)
        said = [(name, *_keyword(site, name, want, passed)) for name, want in keywords.items()]
        for name, verdict, why in said:  # every keyword must be met: one ruled out decides
            if verdict == "not-affected":
                return verdict, why, name
        unsure = [(name, why) for name, verdict, why in said if verdict == "cannot-tell"]
        if unsure:
            also = f"; the finding also needs {config['condition']}" if config.get("condition") else ""
            return "cannot-tell", f"{unsure[0][1]}{also}: cannot tell without --run", unsure[0][0]
        met = "; ".join(why for _, _, why in said)
        if config.get("condition"):  # the arguments meet it; what else it needs is the run's
            return (
                "cannot-tell",
                f"{met}; it also needs {config['condition']}, known at run time: cannot tell without --run",
                "",
            )
        return "affected", met, ", ".join(name for name, _, _ in said)
    given = dict(use.arguments)
    dtype_args = {k: v for k, v in given.items() if k.endswith("dtype")}
    leaves = config.get("leaves") or []
    if leaves and dtype_args and direct:
        fixed = [
            k
            for k in dtype_args
            if any(k.removesuffix("_dtype") and k.removesuffix("_dtype") in leaf for leaf in leaves)
        ]
        if fixed and len(fixed) == len(dtype_args):
            return (
                "not-affected",
                f"passes {', '.join(f'{k}={dtype_args[k]}' for k in fixed)}: the state entries' dtype is set, "
                "not the params'",
                ", ".join(fixed),
            )
    if config.get("condition"):
        return (
            "cannot-tell",
            f"the finding needs {config['condition']}, known at run time: cannot tell without --run",
            "",
        )
    if config.get("dtypes"):
        words = "/".join(config["dtypes"])
        why = f"the finding is about {words} " + ("state" if leaves else "inputs")
        return "cannot-tell", f"{why}; the params' dtype is known at run time: cannot tell without --run", ""
    if config.get("x64"):
        return "cannot-tell", "the finding is about x64 mode (jax_enable_x64): cannot tell without --run", ""
    if config.get("new"):
        return "affected", "calls an API the baseline does not have (new in the candidate)", ""
    cases = f" (its contracts ran it with `{'`, `'.join(config['cases'][:3])}`)" if config.get("cases") else ""
    if note:
        return (
            "cannot-tell",
            f"API surface: {note}; the finding's inputs{cases} are known at run time: cannot tell without --run",
            "",
        )
    if cases:
        return (
            "cannot-tell",
            f"whether your run meets the finding's inputs{cases} is known at run time: cannot tell without --run",
            "",
        )
    return (
        "cannot-tell",
        (
            "the finding's contracts do not say which inputs or configuration it needs: only your run can "
            "tell (cannot tell without --run)"
        ),
        "",
    )


def _handed(
    path: str, via: list[str], passes: dict[str, dict[str, set[str]]], targets: dict[str, str], keywords: dict[str, str]
) -> dict[str, str]:
    """The finding's keyword -> the argument of the constructor at ``path``
    that reaches one of the parts ``via`` unchanged under that name."""
    arguments = passes.get(path) or passes.get(call_sites.definition(path, targets)) or {}
    parts = set(via) | {call_sites.definition(p, targets) for p in via}
    out = {}
    for name in keywords:
        for outer, reaches in arguments.items():
            if any(r.rpartition(":")[2] == name and r.rpartition(":")[0] in parts for r in reaches):
                out[name] = outer
    return out


def _kw(keywords: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in keywords.items())


def _params(signatures: dict[str, Any], path: str, targets: dict[str, str]) -> tuple[Any, ...]:
    return tuple(signatures.get(call_sites.definition(path, targets)) or signatures.get(path) or ())


def _groups(frows: Sequence[Mapping[str, Any]], fallback: str) -> list[tuple[list[str], dict[str, Any]]]:
    """A finding's contract rows grouped by (the APIs they name, the configuration they were run with):
    each group is one way the change is met, judged on its own; a line is affected when one group's
    configuration is met, not affected when every group's is ruled out."""
    out: dict[str, tuple[list[str], dict[str, Any]]] = {}
    for row in frows or [{"api": fallback}]:
        apis = call_sites.apis_of(row.get("api") or fallback) if row.get("api") or fallback else []
        config = configuration([row]) if frows else {}
        out.setdefault(repr((apis, sorted(config.items(), key=str))), (apis, config))
    return list(out.values())


def _combine(judged: list[tuple[str, str, str, str]]) -> tuple[str, str, str, str]:
    """One line's verdict over the groups of rows that reach it: affected if one is met; else cannot
    tell if one cannot be told; not affected only when every group is ruled out (its reasons joined)."""
    for verdict in ("affected", "cannot-tell"):
        hits = [j for j in judged if j[0] == verdict]
        if hits:  # the most telling reason: one an argument decided, then one that says more than "cannot tell"
            return sorted(hits, key=lambda j: (not j[2], j[1] == "cannot tell without --run"))[0]
    reasons = list(dict.fromkeys(j[1] for j in judged))
    decided = ", ".join(dict.fromkeys(j[2] for j in judged if j[2]))
    return "not-affected", "; ".join(reasons), decided, judged[0][3]


def _line(verdict: str, why: str, calls: str, decided: str) -> model.LineAttribution:
    """One line's attribution (``decided``: the argument that decided it, left out when none did).

    Raises:
      ValueError: ``verdict`` is not one of :data:`VERDICTS`.
    """
    line: model.LineAttribution = {
        "verdict": one_of(verdict, VERDICTS, "attribution verdict"),
        "why": why,
        "calls": calls,
    }
    if decided:
        line["decided_by"] = decided
    return line


def attribute(report: model.Report, scan: usage.Scan, known: Known = Known()) -> model.Report:
    """Add to each contract finding ``configuration`` (:func:`configuration`)
    and ``your_code_attribution``: ``file:line`` -> ``{"verdict", "why",
    "calls", "decided_by"}`` for each use of its APIs, directly or through a
    constructor ``reached`` says is built from one of them (``calls``: the
    public path the line calls; ``decided_by``: the argument that decided
    it, "" when none did); ``your_code`` gains the lines reached through
    composition. Each group of the finding's rows (:func:`_groups`) is
    judged apart and the line's verdict is :func:`_combine`'s.

    Args:
      report: a report annotated by ``call_sites.annotated``.
      scan: the ``--usage`` scan.
      known: what the baseline says of its APIs (:class:`Known`).

    Returns ``report``, changed in place.
    """
    reached, targets, signatures, passes = known.reached, known.targets, known.signatures, known.passes
    rows = {row["id"]: row for row in report.get("contracts", [])}
    for f in report.get("findings") or []:
        if f.get("section", "contracts") != "contracts" or "your_code" not in f:
            continue
        frows = [rows[c] for c in f.get("contracts", []) if c in rows]
        f["configuration"] = configuration(frows)
        groups = _groups(frows, f.get("api", ""))
        all_apis = list(dict.fromkeys(a for apis, _ in groups for a in apis))
        notes = f.get("your_code_notes") or {}
        bindings = call_sites.binding_verdicts(report, all_apis, targets)
        recipe = (
            f.get("api")
            if str(f.get("api", "")).startswith("recipe:")
            else next((r.get("api") for r in frows if str(r.get("api", "")).startswith("recipe:")), None)
        )
        condition = call_sites.RECIPE_CONDITIONS.get(recipe or "")
        out: dict[str, model.LineAttribution] = {}
        for use in scan.uses:
            if use.how not in ("call", "attribute", "import"):
                continue
            judged = []
            for apis, config in groups:
                hit = call_sites.matcher(apis, targets)
                wanted = {call_sites.definition(a, targets) for a in apis} | set(apis)
                direct = hit(use.path)
                via = sorted(
                    p
                    for p in reached.get(use.path, set()) | reached.get(call_sites.definition(use.path, targets), set())
                    if p in wanted or call_sites.definition(p, targets) in wanted
                )
                if not direct and not via:
                    continue
                if use.how == "import" and use.where not in f["your_code"]:
                    continue
                calls = (
                    "calls this API"
                    if direct and use.how == "call"
                    else (
                        f"calls {use.path}, built from {', '.join(via[:3])}"
                        if via
                        else f"{'imports' if use.how == 'import' else 'uses'} this API"
                    )
                )
                caught = catches(scan, config["raises"]) if config.get("raises") else []
                if use.how != "call" and config.get("raises") and config.get("negative"):  # passed on, called elsewhere
                    judged.append((*judge(Site(use, direct), config, caught), calls))
                elif use.how == "import" and config.get("gone"):  # the import itself meets a name the candidate lacks
                    judged.append(
                        (
                            "not-affected",
                            f"imported inside try/except ImportError: {config['gone']} is gone from the "
                            "candidate and your fallback runs",
                            "import",
                            calls,
                        )
                        if use.guarded
                        else (
                            "affected",
                            f"imports it: {config['gone']} is gone from the candidate → ModuleNotFoundError",
                            "import",
                            calls,
                        )
                    )
                elif use.how != "call":
                    judged.append(("cannot-tell", "not a call: cannot tell without --run", "", calls))
                else:
                    params = _params(signatures, use.path, targets)
                    handed = _handed(use.path, via, passes, targets, config.get("keywords") or {})
                    site = Site(use, direct, params, notes.get(use.where, ""), handed, bindings.get(use.where, ""))
                    judged.append((*judge(site, config, caught), calls))
            if not judged:
                continue
            verdict, why, decided, calls = _combine(judged)
            if any(j[3] == "calls this API" for j in judged):  # one of the finding's own APIs: not "built from" another
                calls = "calls this API"
            if condition and verdict == "cannot-tell":  # what it changes is said once (your_code_recipe), below
                why = f"whether your run has {condition} is known at run time: cannot tell without --run"
                calls = f"builds {use.path}" if use.how == "call" else calls
            old = out.get(use.where)
            if old is None or VERDICTS.index(verdict) < VERDICTS.index(old["verdict"]):  # one line, its most severe use
                out[use.where] = _line(verdict, why, calls, decided)
        f["your_code_attribution"] = out
        f["your_code"] = list(dict.fromkeys([*f["your_code"], *out]))
        if condition and any(a["verdict"] == "cannot-tell" for a in out.values()):
            f["your_code_recipe"] = recipe_findings.recipe_words(
                f, recipe or ""
            )  # a condition was found: recipe is set
    return report
