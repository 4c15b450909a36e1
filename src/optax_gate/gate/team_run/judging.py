"""The team's run judged: which findings explain the run's divergences, their scope and the verdict about the run."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from optax_gate.gate.base import model
from optax_gate.gate.team_code import scope
from optax_gate.gate.team_run import birth_words, divergence


def no_values(by: dict[str, Any]) -> str:
    """Why no call was compared by value, in words: the counts by structure only and not at all, with their reasons."""
    parts = []
    for kind, label in (("structure", "compared by structure only"), ("none", "not compared")):
        if by.get(kind):
            parts.append(f"{by[kind]} call(s) {label}")
    reasons = "; ".join(
        f"{n}: {divergence.WHY.get(k, k)}" for k, n in sorted((by.get("why") or {}).items(), key=lambda kv: -kv[1])
    )
    return (", ".join(parts) or "no call recorded") + (f" ({reasons})" if reasons else "")


def _short_api(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def cause_apis(team_run: model.TeamRun, reached: dict[str, set[str]] | None = None) -> set[str]:
    """The APIs (short names: ``adamw``, ``MultiSteps``) of the calls that caused a divergence (:func:`_apis_of`)."""
    return {a for c in team_run.get("causes") or [] for a in _apis_of(c, reached)}


def _apis_of(cause: model.Divergence, reached: dict[str, set[str]] | None) -> set[str]:
    """A cause's APIs, short names: its own and, by the composition probe (``reached``), the public callables it
    is built from (``optax.adamw(...).update`` -> ``add_decayed_weights``, whose findings speak of its schedule's
    count); for ``flax.nnx.Optimizer.update`` also the Optax API that built the optimizer's transformation
    (``via``: ``optax.adamw``) and what that one is built from."""
    out = {_short_api(cause["api"])}
    out.update(
        _short_api(p) for p in (reached or {}).get(cause["api"], ())
    )  # adamw's update: add_decayed_weights' findings
    via = cause.get("via")
    if via:
        out.add(_short_api(via))
        out.update(_short_api(p) for p in (reached or {}).get(via, ()))
    return out


def _reached(report: Mapping[str, Any], team: model.TeamRun) -> dict[str, set[str]]:
    """Public path -> the public callables it is built from, by the composition
    probe of the report's environments; {} when no cause of the team's run
    ``team`` needs it (none is an Optax transformation's ``init``/``update``, nor came through an
    ``nnx.Optimizer``) or the probe cannot run."""
    if not any(
        c.get("via")
        or (
            c.get("api", "").startswith("optax.")
            and any(k in c.get("call", "") for k in ("(...).init", "(...).update"))
        )
        for c in team.get("causes") or []
    ):
        return {}
    from optax_gate.gate.team_code import composition

    return composition.of_records(report.get("baseline") or {}, report.get("candidate") or {})[0]


def finding_apis(finding: Mapping[str, Any]) -> list[str]:
    """The APIs a finding is about."""
    return list(finding.get("apis") or [finding.get("api", "")])


_STOP = {
    "the",
    "a",
    "an",
    "of",
    "to",
    "in",
    "is",
    "at",
    "by",
    "or",
    "and",
    "not",
    "no",
    "now",
    "but",
    "be",
    "was",
    "were",
    "with",
    "from",
    "for",
    "on",
    "instead",
    "result",
    "results",
    "got",
    "expected",
    "given",
    "only",
    "input",
    "inputs",
}


def _words(text: str) -> set[str]:
    """The words of a change or a finding's cause that can tie them: dtype, error and argument names (no digits, no stop
    words)."""
    return {w for w in re.findall(r"[a-z][a-z0-9]*", text.lower()) if w not in _STOP and len(w) > 2}


def _explaining(report: Mapping[str, Any], team: model.TeamRun) -> list[tuple[str, list[model.Divergence], list[Any]]]:
    """Per site of a cause of the team's run ``team`` (in order): (site, its
    causes, the report's findings on the same APIs that explain it): those whose cause shares words with the change
    (a dtype, an error, an argument's name), at least half as many as the best
    one's, most first, surface findings first; all of them when none shares a word."""
    out = []
    reached = _reached(report, team)
    for site in team.get("sites") or []:
        causes = [c for c in team.get("causes") or [] if c["site"] == site]
        shorts = {a for c in causes for a in _apis_of(c, reached)}
        related = [
            f
            for f in report.get("findings") or []
            if f.get("change") in ("broken", "changed") and shorts & {_short_api(a) for a in finding_apis(f)}
        ]
        words = _words(" ".join(t for c in causes for t in c["texts"]))
        overlap = {id(f): len(words & _words(str(f.get("cause") or f.get("text") or ""))) for f in related}
        best = max(overlap.values(), default=0)
        # the findings that speak of what changed here (its dtypes, its error, its argument), at least half as much as
        # the best
        if best:
            related = [f for f in related if 2 * overlap[id(f)] >= best]
        related.sort(key=lambda f: (-overlap[id(f)], f.get("section", "contracts") == "contracts"))
        out.append((site, causes, related))
    return out


def unchanged(team_run: Mapping[str, Any]) -> dict[str, Any] | None:
    """What of a diverged run computes the same, when that can be told
    (every differing call listed, and whether the others are bit for bit
    the same recorded; else None): ``{"dtypes_only": every differing call
    differs in dtypes alone, its values equal (0 ULP), "lines": the team's
    lines where the run called Optax and every result is bit for bit the
    same}``: a bfloat16 team whose MultiSteps accumulator becomes float32
    reads FAIL at its MultiSteps line, and is told that its updates and
    params come out bit for bit the same."""
    divergences, within = team_run.get("divergences") or [], team_run.get("within_budget")
    if (
        team_run.get("outcome") != "diverged"
        or not divergences
        or len(divergences) < team_run.get("differing", 0)
        or within is None
    ):
        return None
    dtypes_only = not within.get("calls") and all(
        set(d.get("kinds") or []) <= {"dtype", "arguments"} and d.get("max_ulps") == 0.0 for d in divergences
    )
    moved = {str(d.get("site")) for d in divergences} | set(within.get("sites") or [])
    by_value = (team_run.get("compared_by") or {}).get("value_sites")  # None: a report written before they were counted
    return {
        "dtypes_only": dtypes_only,
        "lines": [s for s in team_run.get("called") or [] if s not in moved and (by_value is None or s in by_value)],
    }


def affected(report: Mapping[str, Any], team: model.TeamRun) -> list[model.AffectedSite]:
    """The report's "Your code" lines: per site of a cause of the team's run ``team`` (in order), its
    APIs, what changed there (the causes' texts, largest ULP error) and the
    findings that explain it (their numbers, :func:`_explaining`)."""
    lines: list[model.AffectedSite] = []
    for site, causes, related in _explaining(report, team):
        apis = list(dict.fromkeys(c["api"] for c in causes))
        ulps = [u for c in causes if (u := c.get("max_ulps"))]
        lines.append(
            {
                "site": site,
                "apis": apis,
                "calls": list(dict.fromkeys(c["call"] for c in causes)),
                "changes": list(dict.fromkeys(t for c in causes for t in c["texts"])),
                "max_ulps": max(ulps) if ulps else None,
                "findings": [f["number"] for f in related],
            }
        )
    return lines


def _point_sites(report: Mapping[str, Any], team: model.TeamRun, lines: list[model.AffectedSite]) -> None:
    """Tie the findings' call sites to the lines where the run diverges ("Your code").

    - A finding the run put elsewhere: the API surface's word on a line
      (``your_code_notes``: ``breaks: delta is keyword-only``) is the cause of
      that line's divergence only on the finding that explains the line; on
      any other finding it would read as that finding's cause. Such a
      finding loses those notes (they stay on the finding that is the line's
      cause, and in the API surface rows), and each of its sites where the run
      diverges gets ``your_code_run``: site -> ``{"run": "diverges",
      "findings": the numbers of the findings that explain it there}``. A
      site where the run calls Optax and nothing differs gets ``{"run":
      "same"}`` (with ``"bits": "within the budget"`` where its results are
      not bit-identical, none beyond the ULP budget), one the run does not reach ``{"run": "not-reached"}`` (a
      line named "elsewhere", such as a float32 team's ``l2_loss`` line under the
      losses' integer-input checks, says what the run settled).
      Reports of runs that did not record their calls (``called``) say only
      where the run diverges. A site whose calls were compared by structure
      only (nothing computed there was compared by value: an optimizer built,
      a call traced where no value is recorded) is ``{"run": "structure"}``,
      never "same"; nor is a site whose calls got other inputs there (``{"run": "inputs-differ"}``: they follow
      from a divergence before them, their results not judged). A run that failed in the candidate: a site it
      reached there is the same ``until`` the failure's line (its later calls
      never ran, so an AdamW line whose update the candidate never reached is
      not "computes the same"), one it reached in the baseline only is
      ``not-reached-candidate``.
    - A finding that explains a line of the run gets ``run_sites``: those
      lines, with their calls (``train.py:34 optax.MultiSteps(...).init``):
      the run names the call where a result differs, the finding's call sites
      the constructor (``train.py:33``), and the reader could not tie the two.
    """
    explained = {line["site"]: line["findings"] for line in lines}
    called, missing = team.get("called"), set(team.get("not_in_candidate") or [])
    within, compared = team.get("within_budget"), team.get("compared_by")
    drifted = set(within.get("sites") or [] if within else [])  # the same within the budget, not bit for bit
    # of those, sites whose calls got other inputs (after a divergence above): their results are not judged, never
    # "same"
    fed_other = set(within.get("inputs_differ_sites") or [] if within else [])
    by_value = compared.get("value_sites") if compared else None  # None: a report written before they were counted
    failed_at = (
        (team.get("raised_at") or "") if team.get("outcome") == "broke" else None
    )  # "": not a line of the team's
    for f in report.get("findings") or []:
        shown = [
            f"{line['site']} {', '.join(line['calls'])}".strip()
            for line in lines
            if f.get("number") in line["findings"]
        ]
        if shown:
            f["run_sites"] = shown
        if f.get("scope") != "elsewhere" or not f.get("your_code"):
            continue
        f.pop("your_code_notes", None)
        here = {}
        for site in f["your_code"]:
            if site in explained:
                here[site] = {"run": "diverges", "findings": explained[site]}
            elif (
                called is not None and site in missing
            ):  # reached in the baseline only: the candidate's run failed before
                here[site] = {"run": "not-reached-candidate"}
            elif called is not None:
                here[site] = {"run": "same" if site in called else "not-reached"}
                if (
                    site in called and by_value is not None and site not in by_value
                ):  # nothing computed there was compared
                    here[site] = {"run": "structure"}
                    continue
                if site in called and failed_at is not None:  # the same up to the failure, not after it
                    here[site]["until"] = failed_at
                if site in called and site in fed_other:  # a loss whose inputs already differ (the params after a
                    # MultiSteps divergence) is not "computes the same within the ULP budget"
                    here[site] = {"run": "inputs-differ"}
                elif (
                    site in called and site in drifted
                ):  # not bit-identical: "the same within the budget", not "the same"
                    here[site]["bits"] = "within the budget"
        if here:
            f["your_code_run"] = here


def _breaks_unreached(finding: Mapping[str, Any]) -> list[str]:
    """The team's lines that a contract finding's joined API surface part
    breaks (``your_code_notes`` saying ``breaks: ...``; ``causes.merge`` joined
    the surface row to the contracts of one cause). Such a row sets the verdict
    (``--usage`` scoped it: "beyond the contracts: N API surface rows
    broken") whatever the run does, so its finding is the team's, never
    listed under "Optax changed elsewhere … do not set the verdict" (a FAIL
    whose only causes are ``huber_loss(pred, y, 2.0)`` and
    ``optax.monte_carlo`` in helpers the run never calls). Empty for a finding
    without a broken surface part. (A line the run reaches and that breaks
    makes the run diverge there: that finding explains it.)"""
    if not any(p.get("section") == "surface" and p.get("change") == "broken" for p in finding.get("parts") or []):
        return []
    notes = finding.get("your_code_notes") or {}
    return [w for w in finding.get("your_code") or [] if str(notes.get(w, "")).startswith("breaks")]


@dataclasses.dataclass(frozen=True)
class Judged:
    """The team's run judged against the report (:func:`apply`): ``section``, the run's section
    (``team_run`` with ``affected``, the "Your code" lines); ``scoped``, the report's findings scoped
    by the run (``scope.scoped``; None for a run not verified, which scopes nothing, or a report
    without findings)."""

    section: model.TeamRun
    scoped: scope.Scoped | None


def apply(report: model.Report, team_run: model.TeamRun, fail_on: str = "broken") -> Judged:
    """Scope the report's findings by the team's run ``team_run`` (its section;
    see the module docstring): the findings are scoped (``scope.scoped``, ``by`` run)
    and tied to the lines where the run diverges; the report and ``team_run`` are read, not
    changed (the findings are scoped on copies). ``optax_gate.gate.assemble.with_team_run`` puts
    the :class:`Judged` result into the report with the verdict the run gives (:func:`of_team_run`:
    a run that broke or diverged fails the gate, one not verified makes it not verified).

    Raises:
      ValueError: ``fail_on`` is not one of ``scope.FAIL_ON``.
    """
    if team_run["outcome"] == "not-verified":
        return Judged(_section(team_run, affected(report, team_run)), None)
    view = scope.findings_copied(report)
    apis = cause_apis(team_run, _reached(view, team_run))
    explaining = {id(f) for _, _, related in _explaining(view, team_run) for f in related}
    for f in view.get("findings") or []:
        if f.get("section", "contracts") != "contracts":
            continue
        hit = sorted(apis & {_short_api(a) for a in finding_apis(f)})
        breaks = _breaks_unreached(f)
        if hit and id(f) in explaining:
            scope.set_scope(
                f,
                "yours",
                f"your run diverges at a call of {', '.join(hit)}, and this finding speaks of what changed there",
            )
        elif breaks:  # its API surface part breaks a line of theirs: that sets the verdict, so the finding is theirs
            f["breaks_unreached"] = breaks
            scope.set_scope(
                f,
                "yours",
                f"its API surface change breaks your line{'s' if len(breaks) > 1 else ''} "
                f"{', '.join(breaks)}, which your run does not reach: it fails when called",
            )
        elif hit:  # the run meets the API, but what changed at that call is another finding's (see "Your code")
            scope.set_scope(
                f, "elsewhere", f"your run calls {', '.join(hit)} and diverges there for another cause (see Your code)"
            )
        else:
            scope.set_scope(f, "elsewhere", "your run does not diverge at a call of its APIs")
    scoped = scope.scoped(view, fail_on, "run")
    after = view.copy()
    if scoped is not None:
        after["findings"] = scoped.findings
    section = _section(team_run, affected(after, team_run))
    _point_sites(after, team_run, section["affected"])  # on the scoped copies
    return Judged(section, scoped)


def _section(team_run: model.TeamRun, affected: list[model.AffectedSite]) -> model.TeamRun:
    """The report's ``team_run`` section: the run's comparison (``recording.run``) and the sites the findings
    affect."""
    return {**team_run, "affected": affected}


def of_team_run(team_run: Mapping[str, Any]) -> tuple[str, list[str]]:
    """The verdict the team's run gives, read from its section alone, and its reason: ``not-verified`` for a run
    that could not be judged, ``fail`` for one that diverged or broke (where it diverges, where the difference
    is born, what the run's own outputs say) or whose compiled step needs more memory (:func:`memory_grew`), else
    ``pass`` with no reason (its scope of the findings decides)."""
    outcome = team_run["outcome"]
    if outcome == "not-verified":
        return "not-verified", [f"--run not verified: {team_run['reason']}"]
    grew = memory_grew(team_run)
    if outcome in ("diverged", "broke"):
        first = team_run.get("first")
        where = ", ".join(team_run.get("sites") or []) or team_run.get("raised_at") or ""
        why = (
            (
                "your run diverges"
                + (f" at {where}" if where else "")
                + (f" (first: {first['site']} {first['call']}: {'; '.join(first['texts'][:2])})" if first else "")
            )
            if where or first
            else ""
        )
        born = [
            r
            for r in team_run.get("born") or []
            if r["kind"] in ("operation", "compiled", "before", "program", "later")
        ]
        optax_first = birth_words.eager_births(team_run)
        if (
            optax_first
        ):  # an Optax call of the team's own, outside any step, that differs on identical inputs: said first
            # a step whose inputs already differ adds nothing: they differ from that call on
            inside = [r for r in born if r["kind"] != "before"]
            why += (
                "; born "
                + optax_first[0]
                + ("; in the steps you transformed: " + birth_words.born_short(inside[0]) if inside else "")
            )
        elif (
            born
        ):  # where the difference is born: JAX/XLA, Optax, Flax or the team's code (the getting-started case)
            why += "; born " + " and ".join(
                birth_words.born_short(r) for r in [born[0], *[r for r in born[1:3] if r.get("also")]]
            )
        seen = team_run.get("witness") or {}
        if seen.get("differs"):  # the second witness: what the run itself gives, without the recorder
            why = (f"{why}; " if why else "") + (
                f"your run's own outputs differ in the candidate: {seen['first']}"
                + (
                    ""
                    if where
                    else " (no recorded Optax call differs: the difference is born outside the calls the recorder "
                    "compares)"
                )
            )
        same = unchanged(team_run)
        if same and same["dtypes_only"]:  # memory and checkpoints change, results do not: say so where the verdict is
            why += "; in dtypes only: every value your run computes is the same"
        if outcome == "broke":
            why = f"{team_run['reason']}; " + why if team_run.get("sites") else team_run["reason"]
        return "fail", [why.removeprefix("; ") + (f"; {grew}" if grew else "")]
    if grew:
        return "fail", [grew]
    return "pass", []


def memory_grew(team_run: Mapping[str, Any]) -> str:
    """Words for the steps whose compiled memory grew beyond the tolerance (``team_run.memory.grew``), or ``""``."""
    from optax_gate.gate.team_run import memory

    rows = (team_run.get("memory") or {}).get("grew") or []
    if not rows:
        return ""
    more = f" and {len(rows) - 2} more" if len(rows) > 2 else ""
    return (
        "your step needs more memory in the candidate, whatever its values: "
        + "; ".join(memory.words(r) for r in rows[:2])
        + more
    )
