"""Bisection of a finished gate report: for each broken, changed or fixed finding, the first commit of the moved
pure-Python package (optax, flax) that gives the candidate's outcomes (``gate --bisect``, ``python -m
optax_gate bisect RUN``).

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast

from optax_gate.gate.base import atomic, model
from optax_gate.gate.bisect.history import (
    PUBLIC,
    NoHistory,
    first_parent,
    git,
    links,
    open_history,
    release_commit,
    resolve,
)
from optax_gate.gate.bisect.probe import Prober
from optax_gate.gate.bisect.search import Answer, Target, search
from optax_gate.gate.inputs.options import BisectOptions
from optax_gate.gate.install import source_build
from optax_gate.gate.judge import causes
from optax_gate.gate.report import html_page as report_html
from optax_gate.gate.report import json_file as report_json
from optax_gate.gate.report import markdown as report_markdown

#: The changes a bisection looks for (new/gone contracts have no old outcome to lose).
CHANGES = ("broken", "changed", "fixed")
#: Why a finding of the team's own contracts only (``gate --contracts``) gets no commit.
TEAM_ONLY = "its contracts are the team's own (--contracts), which a bisection does not re-run"


def eligible(report: model.Report) -> list[model.Finding]:
    """The report's contract findings a bisection answers (``findings`` made when missing)."""
    if "findings" not in report:
        report["findings"] = causes.of_report(
            report["contracts"], candidate_ran=report["candidate"].get("status") == "ran"
        )
    return [
        f
        for f in report["findings"]
        if f.get("section", "contracts") == "contracts" and f["change"] in CHANGES and f.get("contracts")
    ]


def moved(report: Mapping[str, Any]) -> list[str]:
    """The pure-Python packages whose version (or source commit) differs between the sides."""
    b, c = report["baseline"].get("versions") or {}, report["candidate"].get("versions") or {}
    return [p for p in PUBLIC if b.get(p) and c.get(p) and (b[p] != c[p] or candidate_source(report, p))]


def _source(report: Mapping[str, Any], package: str) -> dict[str, Any]:
    """The candidate's built source entry of ``package`` (``candidate.sources``, ``source_specs``), else {}."""
    entry: dict[str, Any]
    for entry in report["candidate"].get("sources") or []:
        if (
            entry.get("package") == package
            and entry.get("status") == "built"
            and (entry.get("commit") or {}).get("sha")
        ):
            return entry
    return {}


def candidate_source(report: Mapping[str, Any], package: str) -> str:
    """The commit SHA a source candidate built ``package`` from, else "" (a release: its tag is the end)."""
    sha: str = _source(report, package).get("commit", {}).get("sha", "")
    return sha


def not_bisected(package: str, why: str) -> model.FindingBisect:
    """A finding's bisection entry for ``package`` that was not searched, with ``why``."""
    return {"package": package, "status": "not-bisected", "reason": why, "commits": [], "skipped": {}}


def _commit(repo: Path, package: str, sha: str) -> model.BisectCommit:
    info = dataclasses.asdict(source_build.commit_info(repo, sha))
    # the commit's fields (source_build.CommitInfo) and its links: the schema's BisectCommit
    return cast(model.BisectCommit, {**info, **links(package, info["sha"], info["pr"])})


def source_files(repo: Path, old: str, apis: list[str]) -> list[str]:
    """The files that define ``apis`` (``def NAME``/``class NAME`` of each
    API's last name) at commit ``old``, tests left out: where to look inside
    a range the search could not narrow. Names that are no identifiers
    (``recipe:...``) have none."""
    files: set[str] = set()
    for api in apis:
        name = api.rsplit(".", 1)[-1]
        if not name.isidentifier():
            continue
        try:
            out = git(repo, "grep", "-l", "-w", "-E", f"^[[:space:]]*(def|class) {name}", old, "--", "*.py")
        except NoHistory:  # no match: git grep exits 1
            continue
        files.update(
            path
            for line in out.splitlines()
            for path in [line.partition(":")[2]]
            if path and not path.endswith("_test.py") and "/tests/" not in path
        )
    return sorted(files)


def suspects(repo: Path, commits: list[str], ends: tuple[str, str], files: list[str]) -> list[str]:
    """Those of ``commits`` (a range) whose first-parent change touches ``files``, oldest first."""
    if not files:
        return []
    touching = set(git(repo, "log", "--first-parent", "--format=%H", f"{ends[0]}..{ends[1]}", "--", *files).split())
    return [sha for sha in commits if sha in touching]


def finding_entry(
    package: str, answer: Answer, repo: Path, ends: tuple[str, str], apis: list[str] | None = None
) -> model.FindingBisect:
    """A finding's bisection entry for ``package`` from the search's ``answer`` between ``ends``: the commit (or the
    range) that changed it, described from ``repo``; for a range, the source files of ``apis`` and the range's
    commits that touch them (``suspects``)."""
    entry: model.FindingBisect
    if answer.status == "not-bisected":
        entry = not_bisected(package, answer.reason)
    else:
        entry = {
            "package": package,
            "status": answer.status,
            "reason": answer.reason,
            "commits": [_commit(repo, package, sha) for sha in answer.commits],
            "skipped": {sha[:12]: why for sha, why in answer.skipped.items()},
        }
        if answer.status == "range" and apis:
            files = source_files(repo, ends[0], apis)
            entry["source_files"] = files
            entry["suspects"] = [_commit(repo, package, sha) for sha in suspects(repo, answer.commits, ends, files)]
    return {**entry, "from": ends[0], "to": ends[1], "tested": answer.tested, "duration_s": answer.duration_s}


@dataclasses.dataclass(frozen=True)
class _Bisection:
    """One bisection of ``report``: its eligible findings ``found``, the
    ``make_prober`` of the environment the commits run in, the ``--history``
    locations, the bisection's ``options`` and the progress lines ``say``."""

    report: model.Report
    found: list[model.Finding]
    make_prober: Callable[[str, Path], Prober]
    histories: dict[str, str]
    options: BisectOptions
    say: Callable[[str], None]


def _package(b: _Bisection, package: str) -> model.BisectPackage:
    """Bisect ``package`` for the findings ``b.found``; put each answer into its finding."""
    report, found, say, cache_dir, environment = b.report, b.found, b.say, b.options.cache, b.options.env
    versions = (report["baseline"]["versions"][package], report["candidate"]["versions"][package])
    # a source candidate's own repository holds its commit: the default history then (--history wins)
    where = b.histories.get(package) or _source(report, package).get("repository") or PUBLIC[package]
    summary: model.BisectPackage = {"history": where, "environment": environment}
    try:
        repo = open_history(package, where, cache_dir)
        old_tag, old = release_commit(repo, versions[0])
        source = candidate_source(report, package)
        new_name, new = (source[:12], resolve(repo, source)) if source else release_commit(repo, versions[1])
        commits = first_parent(repo, old, new)
    except NoHistory as exc:
        for f in found:
            f.setdefault("bisect", []).append(not_bisected(package, str(exc)))
        return {**summary, "error": str(exc)}
    summary |= {"from": old_tag, "to": new_name, "commits": len(commits) - 1}
    say(
        f"bisect {package}: {len(commits) - 1} first-parent commits from {old_tag} to {new_name}, "
        f"{len(found)} finding(s)"
    )
    # the team's own contracts (gate --contracts) live outside the project and are not re-run per commit
    rows = {r["id"]: r for r in report["contracts"] if not r.get("team")}
    ours = [f for f in found if any(c in rows for c in f["contracts"])]
    for f in found:
        if f not in ours:
            f.setdefault("bisect", []).append(not_bisected(package, TEAM_ONLY))
    found = ours
    targets = {f["number"]: Target.of([rows[c] for c in f["contracts"] if c in rows]) for f in found}
    prober = b.make_prober(package, repo)
    answers = search(commits, list(targets.values()), prober, ends=(old_tag, new_name), say=say, options=b.options)
    for f in found:
        f.setdefault("bisect", []).append(
            finding_entry(
                package, answers[targets[f["number"]]], repo, (old_tag, new_name), f.get("apis") or [f.get("api", "")]
            )
        )
    summary |= {"searches": len(answers), "built": len(prober.built), "build_s": round(sum(prober.built.values()), 1)}
    return summary


def attach(
    report: model.Report,
    make_prober: Callable[[str, Path], Prober],
    histories: dict[str, str],
    options: BisectOptions,
    say: Callable[[str], None] = lambda message: None,
) -> model.BisectSummary:
    """Bisect every eligible finding of ``report`` (in place); return ``report["bisect"]``.

    Args:
      report: a gate report (``report.json``'s content).
      make_prober: ``(package, git directory) -> Prober`` for the environment the commits run in.
      histories: ``--history`` locations by package (else the public repository).
      options: ``cache``, wheels, installs and cloned histories; ``env``, which
        side's environment the commits run in (``candidate``, the default, or
        ``baseline``: the package varied alone, every other package at the
        baseline's version).
      say: progress lines.

    A failure or an interruption (any ``BaseException``, re-raised) leaves
    each finding not answered yet "not bisected: <why>" and ``error`` set.
    """
    start = time.monotonic()
    found = eligible(report)
    for f in report[
        "findings"
    ]:  # a bisection replaces the answers of an earlier one (a rerun, gate --bisect then bisect)
        f.pop("bisect", None)
    summary: model.BisectSummary = {"packages": {}, "duration_s": 0.0}
    report["bisect"] = summary
    packages = moved(report)
    try:
        if report["candidate"].get("status") != "ran" or report["baseline"].get("status") != "ran":
            raise _Nothing("a side did not run its contracts")
        if not packages:
            raise _Nothing(
                "no pure-Python package (optax, flax) moved; compiled packages (jax, jaxlib) are not built from source"
            )
        bisection = _Bisection(report, found, make_prober, histories, options, say)
        for package in packages:
            summary["packages"][package] = _package(bisection, package)
    except _Nothing as exc:
        summary["error"] = str(exc)
        for f in found:
            f["bisect"] = [not_bisected("", str(exc))]
    except BaseException as exc:
        why = (
            f"bisection failed: {type(exc).__name__}: {exc}"
            if isinstance(exc, Exception)
            else f"interrupted ({str(exc) or type(exc).__name__})"
        )
        summary["error"] = why
        for f in found:
            done = {e["package"] for e in f.get("bisect", [])}
            f["bisect"] = f.get("bisect", []) + [not_bisected(p, why) for p in packages if p not in done]
        raise
    finally:
        summary["duration_s"] = round(time.monotonic() - start, 1)
    return summary


class _Nothing(Exception):
    """Nothing to bisect (the reason in the message)."""


def write(report: model.Report, folder: Path) -> None:
    """Write ``report.json``, ``report.md`` and ``report.html`` into ``folder`` atomically (the verdict as it was)."""
    atomic.write_text(folder / "report.json", report_json.render(report))
    atomic.write_text(folder / "report.md", report_markdown.render(report))
    atomic.write_text(folder / "report.html", report_html.render(report))
