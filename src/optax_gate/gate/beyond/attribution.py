"""Honest static attribution (``--usage`` without a traced run): which of the
team's lines a finding can reach, and what their literal arguments say.

A finding is about a *configuration*: the contract cases it comes from say
which keyword values, dtypes and inputs they used. That evidence is read from
the cases' own labels, never from the finding's prose
(:func:`configuration`):

==================  =============================================================
the finding's rows  configuration
==================  =============================================================
edge-hyperparameter ``keywords``: ``{"weight_decay": "0"}`` from the record key
snapshot            ``weight_decay=0/nan_inf_params/updates``
                    (``optax_gate.kit.surface_edges``)
dtype variants      ``dtypes``: ``bfloat16`` from ``init_update_bfloat16``
a configuration     ``keywords``: ``{"weight_decay": "a schedule"}``, the
marker              contract's ``configuration(...)`` marker (a hand-written
                    contract states what it fixes; compared as words, so a
                    literal ``0.1`` is not "a schedule")
state-dtype drift   ``dtypes``: the state's old dtype (``bfloat16`` -> ``float32``:
                    bfloat16 params); ``leaves``: the state entries
x64 record          ``x64``: True (``jax_enable_x64`` on)
a parametrize id    ``dtypes``: each dtype named in it (``test_x[float64-k2]``)
an exception that   ``raises``: the type the negative contract expected
escaped             (``AssertionError``), ``negative``: a misuse of the API
==================  =============================================================

Each of the team's uses of the finding's APIs (:func:`attribute`) is one of

- ``affected``: the call's literal arguments meet the configuration (a
  literal ``weight_decay=0``; the default when the keyword is not given and
  the baseline's default is that value), or the API surface diff says the
  call breaks (a positional argument now keyword-only);
- ``not-affected``: they rule it out (``weight_decay=0.1`` against a finding
  about ``weight_decay=0``; a ``<entry>_dtype=`` argument fixing the dtype of
  the state entries the finding is about; the surface diff binds the call
  unchanged; a negative contract's changed exception type where the team's
  code catches the old type nowhere: only a call that already raises at the
  baseline meets it);
- ``cannot-tell``: what decides it is known only at run time (the params'
  dtype, a value passed through a variable, x64 mode, a keyword reached
  through composition that the constructor does not hand on unchanged) --
  "cannot tell without --run".

Every use is named as "calls this API" (or "calls X, built from Y": a finding
on ``optax.scale_by_adam`` reaches a line that calls ``optax.adamw``,
composition found by construction in each environment,
``optax_gate.gate.beyond.composition``). A ``not-affected`` use is never listed as
affected; a finding whose every use is ``not-affected`` is scoped elsewhere
(``optax_gate.gate.beyond.scope``).
"""

from __future__ import annotations

import ast
import dataclasses
import re
from typing import Any, Iterable

from optax_gate.gate.judge.findings import EDGE_KEY, _cause, test_name
from optax_gate.gate.beyond import call_sites, usage

VERDICTS = ("affected", "cannot-tell", "not-affected")
DTYPES = ("bfloat16", "float16", "float32", "float64", "complex64", "complex128")
_DTYPE_WORD = re.compile(r"\b(" + "|".join(DTYPES) + r")\b")


#: A contract row about a signature (parameter kinds: ``('delta', 'KEYWORD_ONLY', 1.0)``): its finding
#: has the cause of an API surface break at the team's line (``signature`` in :func:`configuration`).
_SIGNATURE_WORDS = re.compile(r"\b(?:KEYWORD_ONLY|POSITIONAL_ONLY|POSITIONAL_OR_KEYWORD|VAR_POSITIONAL|VAR_KEYWORD)\b"
                              r"|keyword-only|positional-only")


def configuration(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The configuration a finding's contract rows were run with (see the
    module docstring): ``{"keywords": {name: value text}, "dtypes": [...],
    "leaves": [...], "x64": bool, "raises": type, "negative": bool,
    "signature": bool, "condition": words}``, the keys that apply only
    (``condition``: what a training recipe's rows need of the run,
    ``call_sites.RECIPE_CONDITIONS``) (``signature``: a row is
    about parameter kinds, so a line whose call the API surface says breaks
    breaks for this finding's cause)."""
    keywords: dict[str, str] = {}
    dtypes: list[str] = []
    leaves: list[str] = []
    out: dict[str, Any] = {}
    for row in rows:
        key, evidence = _cause(row, True)
        kind = key[0]
        if kind == "edge-hyper":
            for path in key[1]:
                if EDGE_KEY.match(path):
                    name, _, rest = path.partition("=")
                    keywords[name] = rest.partition("/")[0]
        elif kind == "dtype-variant":
            dtypes += [p.rpartition("_")[2] for p in key[1]]
        elif kind == "state-dtype":
            dtypes += [old for old, _ in key[1]]
            leaves += [leaf.path for leaf in evidence if leaf.dtypes[0] != leaf.dtypes[1]]
        elif kind == "x64":
            out["x64"] = True
        elif kind == "raises":
            out["raises"], out["negative"] = key[1], bool(key[2])
        dtypes += _DTYPE_WORD.findall(test_name(row["id"])[1])
        keywords.update(row.get("configuration") or {})  # the contract's configuration marker, in words
        if row.get("api") in call_sites.RECIPE_CONDITIONS:
            out["condition"] = call_sites.RECIPE_CONDITIONS[row["api"]]
    if keywords:
        out["keywords"] = keywords
    if dtypes:
        out["dtypes"] = list(dict.fromkeys(dtypes))
    if leaves:
        out["leaves"] = list(dict.fromkeys(leaves))
    if any(_SIGNATURE_WORDS.search(str(row.get("detail") or "")) for row in rows):
        out["signature"] = True
    return out


def _literal(text: str) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False, None


def _same(a: Any, b: Any) -> bool:
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return a == b


def catches(scan: usage.Scan, exception: str) -> list[str]:
    """``file:line`` of the team's ``except``/``pytest.raises`` clauses naming
    ``exception`` (or one of several, ``"TypeError, ValueError"``); a bare
    ``except`` or ``except Exception`` catches the new type as well as the old."""
    names = [n.strip() for n in exception.split(",") if n.strip()]
    return [u.where for u in scan.uses if u.how == "catch" and any(re.search(rf"\b{re.escape(n)}\b", u.path) for n in names)]


@dataclasses.dataclass(frozen=True)
class _Site:
    """One use of a finding's APIs, to be judged: the ``use``; ``direct``,
    whether it calls one of the APIs itself (else a constructor built from
    one); ``defaults``, the called API's defaults; ``note``, the API surface's
    word on its line; ``handed``, the finding's keyword -> the called
    constructor's own argument that reaches the part unchanged
    (``composition`` ``passes``), for a use through composition."""

    use: usage.Use
    direct: bool
    defaults: dict[str, str] = dataclasses.field(default_factory=dict)
    note: str = ""
    handed: dict[str, str] | None = None


@dataclasses.dataclass(frozen=True)
class Known:
    """What the baseline says of its APIs, for :func:`attribute`: ``reached``
    (``composition.of_records``: public path -> paths it is built from),
    ``targets`` (public path -> definition, so that aliases count),
    ``signatures`` (public path -> ``surface.Param`` tuple, for defaults) and
    ``passes`` (public path -> {its argument: {"part:argument"}}, the arguments
    a constructor hands to a part unchanged, so ``adamw(weight_decay=0.1)`` is
    judged against a finding about ``add_decayed_weights``' ``weight_decay=0``)."""

    reached: dict[str, set[str]] = dataclasses.field(default_factory=dict)
    targets: dict[str, str] = dataclasses.field(default_factory=dict)
    signatures: dict[str, Any] = dataclasses.field(default_factory=dict)
    passes: dict[str, dict[str, set[str]]] = dataclasses.field(default_factory=dict)


def _judge(site: _Site, config: dict[str, Any], caught: list[str]) -> tuple[str, str]:
    """(verdict, why) of one use of a finding's APIs (:class:`_Site`), against
    the finding's ``config`` and the lines that catch its error (``caught``)."""
    use, direct, defaults, note, handed = site.use, site.direct, site.defaults, site.note, site.handed
    given = dict(use.arguments)
    if config.get("raises") and config.get("negative"):  # a misuse's error: the signature's own changes are another cause
        also = f"; this line breaks for another cause (API surface: {note})" if note.startswith("breaks") else ""
        if not caught:
            return "not-affected", (f"the change is to a misuse's error ({config['raises']} before); only a call that already "
                                    f"raises there meets it, and your code catches {config['raises']} nowhere{also}")
        return "cannot-tell", f"your code catches {config['raises']} at {', '.join(caught[:3])}{also}: cannot tell without --run"
    if note.startswith("breaks"):
        if config.get("signature"):  # the finding is the signature's change: the break is its cause
            return "affected", f"API surface: {note}"
        # another finding on the same API: the line breaks first for the signature's cause (said there)
        return "cannot-tell", (f"this line breaks first for another cause (API surface: {note}); whether this change "
                               f"reaches it once that is fixed: cannot tell without --run")
    keywords = config.get("keywords") or {}
    if keywords:
        if not direct:
            if not all(name in (handed or {}) for name in keywords):
                return "cannot-tell", f"the finding is about {_kw(keywords)} of a part it is built from: cannot tell without --run"
            keywords = {handed[name]: want for name, want in keywords.items()}  # the part gets the constructor's argument as given
        for name, want in keywords.items():
            if name in given:
                ok, value = _literal(given[name])
                if not ok:
                    return "cannot-tell", f"passes {name}={given[name]} (known at run time): cannot tell without --run"
                if not _same(value, want):
                    return "not-affected", f"passes {name}={given[name]}; the finding is about {name}={want}"
            elif name in defaults:
                ok, value = _literal(defaults[name])
                if ok and not _same(value, want):
                    return "not-affected", f"does not pass {name} (default {defaults[name]}); the finding is about {name}={want}"
                if ok:
                    return "affected", f"does not pass {name}: its default {defaults[name]} is the finding's {name}={want}"
        if all(name in given for name in keywords):
            return "affected", f"passes {_kw(keywords)}, the finding's configuration"
        return "cannot-tell", f"the finding is about {_kw(keywords)}: cannot tell without --run"
    dtype_args = {k: v for k, v in given.items() if k.endswith("dtype")}
    leaves = config.get("leaves") or []
    if leaves and dtype_args and direct:
        fixed = [k for k in dtype_args if any(k.removesuffix("_dtype") and k.removesuffix("_dtype") in leaf for leaf in leaves)]
        if fixed and len(fixed) == len(dtype_args):
            return "not-affected", f"passes {', '.join(f'{k}={dtype_args[k]}' for k in fixed)}: the state entries' dtype is set, not the params'"
    if config.get("condition"):
        return "cannot-tell", f"the finding needs {config['condition']}, known at run time: cannot tell without --run"
    if config.get("dtypes"):
        words = "/".join(config["dtypes"])
        why = f"the finding is about {words} " + ("state" if leaves else "inputs")
        return "cannot-tell", f"{why}; the params' dtype is known at run time: cannot tell without --run"
    if config.get("x64"):
        return "cannot-tell", "the finding is about x64 mode (jax_enable_x64): cannot tell without --run"
    if note:
        return "cannot-tell", f"API surface: {note}; the finding's inputs are known at run time: cannot tell without --run"
    return "cannot-tell", "cannot tell without --run"


def _handed(path: str, via: list[str], passes: dict[str, dict[str, set[str]]], targets: dict[str, str],
            keywords: dict[str, str]) -> dict[str, str]:
    """The finding's keyword -> the argument of the constructor at ``path``
    that reaches one of the parts ``via`` unchanged under that name."""
    arguments = passes.get(path) or passes.get(call_sites._definition(path, targets)) or {}
    parts = set(via) | {call_sites._definition(p, targets) for p in via}
    out = {}
    for name in keywords:
        for outer, reaches in arguments.items():
            if any(r.rpartition(":")[2] == name and r.rpartition(":")[0] in parts for r in reaches):
                out[name] = outer
    return out


def _kw(keywords: dict[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in keywords.items())


def _defaults(surface_params: dict[str, Any], path: str) -> dict[str, str]:
    params = surface_params.get(path)
    return {p.name: p.value for p in params or () if p.value is not None} if params else {}


def attribute(report: dict[str, Any], scan: usage.Scan, known: Known = Known()) -> dict[str, Any]:
    """Add to each contract finding ``configuration`` (:func:`configuration`)
    and ``your_code_attribution``: ``file:line`` -> ``{"verdict", "why",
    "calls"}`` for each use of its APIs, directly or through a constructor
    ``reached`` says is built from one of them (``calls``: the public path the
    line calls); ``your_code`` gains the lines reached through composition.

    Args:
      report: a report annotated by ``call_sites.annotate``.
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
        labels = [r.get("api") or "" for r in frows] or [f.get("api", "")]
        apis = list(dict.fromkeys(a for label in labels for a in call_sites.apis_of(label)))
        config = configuration(frows)
        f["configuration"] = config
        hit = call_sites._matcher(apis, targets)
        wanted = {call_sites._definition(a, targets) for a in apis} | set(apis)
        notes = f.get("your_code_notes") or {}
        caught = catches(scan, config["raises"]) if config.get("raises") else []
        out: dict[str, dict[str, Any]] = {}
        for use in scan.uses:
            if use.how not in ("call", "attribute", "import"):
                continue
            direct = hit(use.path)
            via = sorted(p for p in reached.get(use.path, set()) | reached.get(call_sites._definition(use.path, targets), set())
                         if p in wanted or call_sites._definition(p, targets) in wanted)
            if not direct and not via:
                continue
            if use.how == "import" and use.where not in f["your_code"]:
                continue
            calls = "calls this API" if direct and use.how == "call" else (
                f"calls {use.path}, built from {', '.join(via[:3])}" if via else f"{'imports' if use.how == 'import' else 'uses'} this API")
            if use.how != "call" and config.get("raises") and config.get("negative"):  # passed on, called elsewhere
                verdict, why = _judge(_Site(use, direct), config, caught)
            elif use.how != "call":
                verdict, why = "cannot-tell", "not a call: cannot tell without --run"
            else:
                defaults = _defaults(signatures, call_sites._definition(use.path, targets)) or _defaults(signatures, use.path)
                handed = _handed(use.path, via, passes, targets, config.get("keywords") or {})
                verdict, why = _judge(_Site(use, direct, defaults, notes.get(use.where, ""), handed), config, caught)
            old = out.get(use.where)
            if old is None or VERDICTS.index(verdict) < VERDICTS.index(old["verdict"]):  # one line, its most severe use
                out[use.where] = {"verdict": verdict, "why": why, "calls": calls}
        f["your_code_attribution"] = out
        f["your_code"] = list(dict.fromkeys([*f["your_code"], *out]))
    return report


def suffix(item: dict[str, Any], shown: int = call_sites.SHOWN) -> str:
    """Markdown after a finding's line: each line of the team's code with
    what its arguments say (affected lines first, then cannot tell, then not
    affected)."""
    attributed = item.get("your_code_attribution") or {}
    if not attributed:
        return ""
    order = sorted(attributed.items(), key=lambda kv: VERDICTS.index(kv[1]["verdict"]))
    words = {"affected": "**affected**", "cannot-tell": "cannot tell without --run", "not-affected": "not affected"}
    parts = []
    for where, a in order[:shown]:
        why = a["why"].removesuffix(": cannot tell without --run").removesuffix("cannot tell without --run")
        parts.append(f"`{where}` {a['calls']}: {words[a['verdict']]}" + (f" ({why})" if why else ""))
    more = f" and {len(order) - shown} more" if len(order) > shown else ""
    return " — **your code**: " + "; ".join(parts) + more


def summary(findings: Iterable[dict[str, Any]]) -> dict[str, int]:
    """How many lines of the team's code are affected / cannot tell / not affected, over the findings."""
    out = {v: 0 for v in VERDICTS}
    for f in findings:
        for a in (f.get("your_code_attribution") or {}).values():
            out[a["verdict"]] += 1
    return out


def for_report(report: dict[str, Any], scan: usage.Scan, packages: tuple[str, ...]) -> dict[str, Any]:
    """:func:`attribute` with what the report's environments say: the
    composition probe of both (``optax_gate.gate.beyond.composition``), the
    baseline's static surface (aliases, defaults). A probe that cannot run
    is a note (uses through composition are then not seen)."""
    from pathlib import Path

    from optax_gate.gate.beyond import composition, unseen

    reached, errors, passes = composition.of_records(report.get("baseline") or {}, report.get("candidate") or {})
    site = (report.get("baseline") or {}).get("site_packages")
    entries = unseen._surface(Path(site), tuple(packages)) if site and Path(site).is_dir() else {}
    targets = {p: e.target for p, e in entries.items()}
    signatures = {e.target: e.params for e in entries.values() if e.params is not None}
    signatures.update({p: e.params for p, e in entries.items() if e.params is not None})
    attribute(report, scan, Known(reached, targets, signatures, passes))
    report["attribution"] = {"composition": {"constructors": len(reached), "errors": errors}, "lines": summary(report.get("findings") or [])}
    if errors:
        report.setdefault("notes", []).append("--usage: what the constructors are built from could not be probed ("
                                              + "; ".join(errors) + "): lines reached only through composition are not named")
    return report
