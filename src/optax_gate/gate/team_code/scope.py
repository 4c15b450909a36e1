"""Whose finding is it: the team's (``yours``) or Optax's alone (``elsewhere``).

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from optax_gate.gate.base import model
from optax_gate.gate.base.literals import one_of
from optax_gate.gate.inputs.options import ScopeOptions
from optax_gate.gate.team_code import call_sites

SCOPES: tuple[Literal["yours", "elsewhere"], ...] = ("yours", "elsewhere")
#: ``gate --fail-on``: ``broken`` (default) fails on a broken finding of the
#: team's scope; ``all`` on any broken finding, whatever its scope.
#: What ``--fail-on`` takes (``model.Scope``'s ``fail_on``).
FailOn = Literal["broken", "all"]
FAIL_ON: tuple[FailOn, ...] = ("broken", "all")
#: The report.md heading of the findings that do not set the verdict.
ELSEWHERE_HEADING = "Optax changed elsewhere"
_CONTRACTS_BROKEN = re.compile(r"^\d+ contract\(s\) broken\b")


#: The API label of a contract that pins a training recipe (tests/contracts/test_training_recipes.py), not one API.
RECIPE_PREFIX = "recipe:"


def findings_copied(report: model.Report) -> model.Report:
    """A shallow copy of ``report`` whose ``findings`` list (when it has one) is a deep copy: the view on which
    :func:`set_scope` and the attribution mark findings without changing the report they were given."""
    view = report.copy()
    if isinstance(view.get("findings"), list):
        view["findings"] = copy.deepcopy(view["findings"])
    return view


def set_scope(finding: model.Finding, scope: str, why: str = "") -> None:
    """Give one finding its scope (one of :data:`SCOPES`) and the words that decided it.

    Raises:
      ValueError: ``scope`` is not one of :data:`SCOPES`.
    """
    finding["scope"] = one_of(scope, SCOPES, "scope")
    if why:
        finding["scope_why"] = why


def scope_findings(report: model.Report, decide: Callable[[model.Finding], tuple[str, str] | None]) -> None:
    """Set the scope of each finding not yet scoped: ``decide(finding)``
    returns ``(scope, why)``, or None to leave the finding to the default
    (``yours``)."""
    for f in report.get("findings") or []:
        if "scope" in f:
            continue
        got = decide(f)
        if got is not None:
            set_scope(f, *got)


def broken_rows(finding: model.Finding) -> int:
    """The broken contract rows of a finding: all of them for a ``broken``
    finding; for one that joins several changes of one cause
    (``causes.merge``, e.g. a known defect that now raises: ``changed``
    with ``changes = {"broken": 1, "fixed": 1}``), its ``broken`` count."""
    if finding.get("changes"):
        return int(finding["changes"].get("broken", 0))
    return len(finding.get("contracts") or []) if finding.get("change") == "broken" else 0


def is_yours(finding: model.Finding) -> bool:
    """Whether the finding is the team's (its scope ``yours``, the default)."""
    yours: bool = finding.get("scope", "yours") == "yours"  # annotated: the report's JSON values compare as a bool
    return yours


def split(found: list[model.Finding]) -> tuple[list[model.Finding], list[model.Finding]]:
    """(the team's findings, those elsewhere), each in report order."""
    return [f for f in found if is_yours(f)], [f for f in found if not is_yours(f)]


@dataclasses.dataclass(frozen=True)
class Scoped:
    """The scope of a report's findings (:func:`scoped`), for
    ``optax_gate.gate.assemble.with_scope`` to put into the report:
    ``findings``, copies of the report's findings, each with its ``scope``,
    the team's first (their order kept within each group), numbered from 1;
    ``section``, the report's ``scope`` (``{"by", "fail_on", "elsewhere",
    "broken_elsewhere"}``); ``reasons``, the verdict's reasons after scoping
    (those beyond the contracts name the findings that hold their broken rows,
    ``in F1, F2``; the broken contracts counted where the team's code goes;
    None: the report has none), and ``falls_to``, the verdict when nothing
    is left to fail the gate (``verdict.rescoped``; None: the verdict stays); ``notes``; ``unsure``, the reasons a
    passing verdict becomes
    ``not-verified`` for rows beyond the contracts the gate cannot tell;
    ``attribution``, the report's ``attribution`` section (``--usage``:
    ``attribution_section.for_report``; None without it)."""

    findings: list[model.Finding]
    section: model.Scope
    reasons: list[str] | None = None
    falls_to: str | None = None
    notes: tuple[str, ...] = ()
    unsure: tuple[str, ...] = ()
    attribution: model.Attribution | None = None


def scoped(report: model.Report, fail_on: str = "broken", by: str | None = None) -> Scoped | None:
    """The scope of the report's verdict (the report is read, not changed; None when it has no findings list).

    Args:
      report: a report whose findings may carry a ``scope`` (set by
        :func:`set_scope`); a finding without one is ``yours``.
      fail_on: ``broken`` (the verdict counts the ``yours`` findings) or
        ``all`` (every finding counts, as without a scope).
      by: what set the scopes (``usage``, ``run``), or None when nothing did:
        then every finding is ``yours``.

    Returns the :class:`Scoped` findings, section and verdict, as the module docstring says.

    Raises:
      ValueError: ``fail_on`` is not one of :data:`FAIL_ON`.
    """
    failing_on = one_of(fail_on, FAIL_ON, "--fail-on")
    given = report.get("findings")
    if not isinstance(given, list):
        return None
    found: list[model.Finding] = []
    for f in given:
        g: model.Finding = f.copy()
        if by is None or "scope" not in g:
            g["scope"] = "yours"
            if by is None:
                g.pop("scope_why", None)
        found.append(g)
    yours, elsewhere = split(found)
    found = [{**f, "number": number} for number, f in enumerate(yours + elsewhere, 1)]
    reword = _naming(found)
    reasons_now = [reword(r) if reword else r for r in report.get("reasons", [])]
    contracts = [f for f in found if f.get("section", "contracts") == "contracts" and broken_rows(f)]
    counted = contracts if fail_on == "all" else [f for f in contracts if is_yours(f)]
    left_out = sum(broken_rows(f) for f in contracts if f not in counted)
    section: model.Scope = {"by": by, "fail_on": failing_on, "elsewhere": len(elsewhere), "broken_elsewhere": left_out}
    own = {r.get("id") for r in report.get("contracts") or [] if isinstance(r, dict) and r.get("team")}
    scanned = report.get("usage")
    unscanned = {n["path"]: n["reason"] for n in (scanned.get("not_scanned") if scanned else None) or []}
    unsure = tuple(_unsure_beyond(report, by, unscanned))
    undecided_ = (
        [f for f in counted if undecided(f, by, unscanned) and not own & set(f.get("contracts") or [])]
        if fail_on == "broken"
        else []
    )
    if report.get("verdict") != "fail" or not (left_out or undecided_):
        return Scoped(found, section, reasons_now if "reasons" in report else None, unsure=unsure)
    # "where your code goes (run)" never names a finding "which your run does not reach": those are counted apart
    unreached = [f for f in counted if f not in undecided_ and by == "run" and f.get("breaks_unreached")]
    sure = [f for f in counted if f not in undecided_ and f not in unreached]
    others = [r for r in reasons_now if not _CONTRACTS_BROKEN.match(r)]
    head = []
    for group, words in (
        (sure, f"where your code goes ({by})"),
        (unreached, "at lines of your code that your run does not reach"),
    ):
        if group:
            head.append(
                f"{sum(broken_rows(f) for f in group)} contract(s) broken {words}: "
                f"{where_counted(group, by, unscanned)}"
            )
    falls_to = (
        ("not-verified" if undecided_ else "pass") if not head and not others else None
    )  # nothing else fails the gate
    if undecided_:
        head.append(
            f"{sum(broken_rows(f) for f in undecided_)} contract(s) broken where your code may go: "
            f"{where_counted(undecided_, by, unscanned)}{_files_not_scanned(undecided_, unscanned)}; "
            "the gate with --run (your training command) decides"
        )
    notes: tuple[str, ...] = ()
    if left_out:
        notes = (
            f"{left_out} broken contract(s) "
            + (
                "your run does not diverge for (it may call their APIs and compute the same)"
                if by == "run"
                else f"where your code does not go ({by})"
            )
            + f": listed under '{ELSEWHERE_HEADING}', they do not set the verdict (--fail-on all: they do)",
        )
    return Scoped(found, section, head + others, falls_to, notes, unsure)


def undecided(
    finding: model.Finding, by: str | None, not_scanned: dict[str, str] | None = None, brief: bool = False
) -> list[str]:
    """Why ``--usage`` alone cannot tell whether the team's code meets this
    finding, one phrase per reason; ``[]`` when it can (a line of the
    team's is ``affected``), when nothing ties it to the team's code, or
    when another evidence scoped it (``by`` is not ``usage``).

    The one rule for "cannot tell": such a finding is no evidence that the
    team's training changes, nor that it does not; alone, it makes the
    verdict ``not-verified``, never ``fail`` (a float32 Adam team whose params
    are bit for bit the same is not failed for a None-gradient change its
    gradients never meet, nor is a file with a syntax error a FAIL). Its cases: a line whose arguments are
    known at run time (a parameter, a name bound twice, ``*args``), a use
    that is not a call (an alias passed on, an annotation), a file not
    scanned that names its APIs (``not_scanned``: path -> why), a file that
    could not be read at all. A finding holding a contract of the team's own
    (``gate --contracts``) is not this: :func:`scoped` leaves it out.
    ``brief``: the files not scanned by name only (the verdict's reason says
    why once, :func:`_files_not_scanned`).
    """
    if by != "usage":
        return []
    attributed = finding.get("your_code_attribution") or {}
    if any(a.get("verdict") == "affected" for a in attributed.values()):
        return []
    if any(p.get("section") in _SECTIONS and p.get("change") == "broken" for p in finding.get("parts") or []):
        return []  # joined to an API surface or dependency break of a line of yours (with --usage, broken means that)
    out = []
    lines = [
        w
        for w in dict.fromkeys([*(finding.get("your_code") or []), *attributed])
        if w not in attributed or attributed[w]["verdict"] == "cannot-tell"
    ]
    if lines:
        out.append("your lines: cannot tell without --run")
    files = finding.get("your_code_not_scanned") or []
    if files:
        why = not_scanned or {}
        out.append(
            "a file not scanned may use its APIs: "
            + ", ".join(f"`{p}`" + (f" ({why[p]})" if why.get(p) and not brief else "") for p in files[:3])
            + (" and more" if len(files) > 3 else "")
        )
    if str(finding.get("scope_why", "")).startswith(_UNREAD):
        out.append(_UNREAD if brief else finding["scope_why"])
    return out


_UNREAD = "a file under --usage could not be read"


def _files_not_scanned(found: Sequence[Mapping[str, Any]], unscanned: dict[str, str]) -> str:
    """``; not scanned: `model.py` (syntax error at line 5: expected ':')``, each file once; the files
    that could not be read at all, once."""
    files = list(dict.fromkeys(p for f in found for p in f.get("your_code_not_scanned") or []))
    out = (
        (
            "; not scanned: "
            + ", ".join(f"`{p}`" + (f" ({unscanned[p]})" if unscanned.get(p) else "") for p in files[:5])
            + (f" and {len(files) - 5} more" if len(files) > 5 else "")
        )
        if files
        else ""
    )
    unread = next((str(f["scope_why"]) for f in found if str(f.get("scope_why", "")).startswith(_UNREAD)), "")
    return out + (f"; {unread}" if unread else "")


def _unsure_beyond(report: Mapping[str, Any], by: str | None, unscanned: dict[str, str]) -> list[str]:
    """The one rule beyond the contracts: an API surface or dependency change that your code may meet
    but the gate cannot tell (its row reads ``cannot-tell``: only a file not scanned may meet it, or a
    package your project declares and the gate did not install may bring a removed one) makes a
    passing verdict ``not-verified``: the reasons that say why (``optax_gate.gate.assemble.with_scope``
    adds them to a verdict that is not ``fail``)."""
    if by != "usage":
        return []
    rows = [
        r
        for name in ("surface", "dependencies")
        for r in (report.get(name) or {}).get("rows") or []
        if r.get("verdict") == "cannot-tell" and (r.get("not_scanned") or r.get("may_come_with"))
    ]
    if not rows:
        return []
    files = list(dict.fromkeys(p for r in rows for p in r.get("not_scanned") or []))
    said = []
    if files:
        said.append(
            "incompatible change(s) beyond the contracts "
            f"({', '.join(dict.fromkeys(r.get('path') or r.get('name') or '' for r in rows[:3]))}"
            f"{', …' if len(rows) > 3 else ''}) that a file not scanned may meet: "
            + ", ".join(f"`{p}`" + (f" ({unscanned[p]})" if unscanned.get(p) else "") for p in files[:3])
            + "; fix the file or the gate with --run decides"
        )
    for r in rows:
        if r.get("may_come_with") and not r.get("not_scanned"):
            said.append(
                f"dependency `{r['name']}` removed from the candidate, imported by your code; your project declares "
                f"{', '.join(r['may_come_with'][:3])}{' and more' if len(r['may_come_with']) > 3 else ''} "
                "(see Dependencies), "
                f"which the gate did not install and which may bring it: cannot tell "
                "(--candidate-lock with your own lock decides)"
            )
    return said


_BEYOND = re.compile(r"^(beyond the contracts: .*? broken)(?: \(in F[\d, F]+\))?$")
_SECTIONS = ("surface", "dependencies", "warnings")


def _naming(found: list[model.Finding]) -> Callable[[str], str] | None:
    """The verdict's "beyond the contracts: N … broken" names the findings that
    hold those rows (``in F1, F2``): joined to the contracts of their cause
    (``causes.merge``), one cause is counted once, never "2 in F2" beside "1 API
    surface finding broken". The rewording of a reason, or None when no finding holds such a row."""
    holding = [
        f["number"]
        for f in found
        if (f.get("section") in _SECTIONS and f.get("change") == "broken")
        or any(p.get("section") in _SECTIONS and p.get("change") == "broken" for p in f.get("parts") or [])
    ]
    if not holding:
        return None
    return lambda reason: (
        f"{m[1]} (in {', '.join(f'F{n}' for n in holding)})" if (m := _BEYOND.match(reason)) else reason
    )


def where_counted(
    counted: Sequence[model.Finding], by: str | None = "usage", unscanned: dict[str, str] | None = None
) -> str:
    """Which findings hold the broken contracts a verdict counts, so that a
    reader can match the number with the findings: ``5 in F1, 1 in F2
    (1 of its 2 contracts broke, 1 fixed)`` (a joined finding whose change is not ``broken``
    may hold a broken row: a known defect that now fails otherwise); a
    finding whose every line of the team's code is "cannot tell" says so
    (``your lines: cannot tell without --run``) when ``--usage`` scoped it
    (``by``): it fails closed, and the reason tells how to decide it."""
    parts = []
    for f in counted:
        total = len(f.get("contracts") or [])
        others = ", ".join(
            f"{n} {kind}" for kind, n in sorted((f.get("changes") or {}).items()) if kind != "broken" and n
        )
        said = (
            [f"{broken_rows(f)} of its {total} contracts broke" + (f", {others}" if others else "")]
            if f.get("change") != "broken"
            else []
        )  # in words, not "headed changed: …"
        said += undecided(f, by, unscanned, brief=True)  # "cannot tell" (the one rule): say why
        if by == "run" and f.get("breaks_unreached"):  # the team's line that breaks, which the run does not reach
            said.append(f"breaks {', '.join(f['breaks_unreached'][:3])}")
        parts.append(f"{broken_rows(f)} in F{f.get('number', '?')}" + (f" ({'; '.join(said)})" if said else ""))
    return ", ".join(parts)


def usage_decision(unread: bool | str) -> Callable[[model.Finding], tuple[str, str] | None]:
    """The ``--usage`` scope of a contract finding: ``yours`` when the team's
    code uses one of its APIs (``your_code``) or a file not parsed may
    (``your_code_not_scanned``), or when a file could not be read at all
    (``unread``: it may use anything; fail closed); else ``elsewhere``. A
    finding whose every call site is ``not affected`` by its literal
    arguments (``attribution``'s ``your_code_attribution``) is ``elsewhere``.
    Findings beyond the contracts are left ``yours``: ``--usage`` already
    scoped them."""

    def decide(f: model.Finding) -> tuple[str, str] | None:
        if f.get("section", "contracts") != "contracts":
            return None
        sites = f.get("your_code") or []
        attributed = f.get("your_code_attribution") or {}
        if unread:
            return "yours", "a file under --usage could not be read: it may use any API" + (
                f" ({unread})" if isinstance(unread, str) else ""
            )
        if f.get("your_code_not_scanned"):
            return "yours", "a file not scanned may use its APIs"
        apis = f.get("apis") or [f.get("api", "")]
        named = [a for a in apis if not str(a).startswith(RECIPE_PREFIX)]
        if not sites and named and len(named) < len(apis):  # a recipe joined to the API(s) it goes through: they decide
            return (
                "elsewhere",
                f"your code does not use its APIs ({', '.join(named[:3])}; the recipe's contracts go through them)",
            )
        recipes = [str(a) for a in apis if str(a).startswith(RECIPE_PREFIX)]
        if not sites and any(r not in call_sites.RECIPE_APIS for r in recipes):  # fail closed: no API known to look for
            return "yours", (
                "its contracts pin a training recipe (several APIs together), not one API: which of your "
                "lines it reaches cannot be told without --run"
            )
        if not sites and recipes:
            built = list(dict.fromkeys(a for r in recipes for a in call_sites.RECIPE_APIS[r]))
            return (
                "elsewhere",
                f"your code uses none of the APIs its training recipe is built from ({', '.join(built)})",
            )
        if not sites:
            return "elsewhere", "your code does not use its APIs"
        if attributed and all(w in attributed and attributed[w].get("verdict") == "not-affected" for w in sites):
            return "elsewhere", "every call of its APIs is not affected (its literal arguments rule it out)"
        return "yours", "your code uses its APIs"

    return decide


def apply_options(
    report: model.Report,
    options: ScopeOptions,
    packages: tuple[str, ...],
    by: str | None = None,
    usage: bool = True,
) -> Scoped | None:
    """:func:`scoped` with the gate's scope options: ``--usage``
    (``options.usage_scan``) attributes each finding's call sites
    (``optax_gate.gate.team_code.attribution``, against the API surface of
    ``packages``) and scopes the findings not yet scoped
    (:func:`usage_decision`; ``usage=False``: a refused run, which judged
    nothing of the team's code), ``--fail-on`` (``options.fail_on``). ``by``:
    the evidence that already scoped the findings (``run``), if any; then
    ``--usage`` is not consulted. The report is read, not changed: the
    findings are attributed and scoped on copies (the result's ``attribution``)."""
    scan = options.usage_scan if usage else None
    view = findings_copied(report)
    attributed: model.Attribution | None = None
    notes: list[str] = []
    if scan is not None and isinstance(view.get("findings"), list):
        from optax_gate.gate.team_code import attribution_section

        attributed, notes = attribution_section.for_report(view, scan, packages)
    if by is None and scan is not None:
        by = "usage"
        unread = ", ".join(f"`{n.path}`: {n.reason}" for n in scan.not_scanned if n.content is None)
        scope_findings(view, usage_decision(unread))
    result = scoped(view, options.fail_on or "broken", by)
    if result is None:
        return None
    return dataclasses.replace(result, attribution=attributed, notes=(*notes, *result.notes))
