"""What the contracts cannot see: the API surface, warnings and dependency sections of a report, scoped to the team's
code, and their findings (``docs/module-notes.md``)."""

from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path
from typing import Any, Literal, cast

from optax_gate.gate.base import model
from optax_gate.gate.base.plain_text import named_list, shorten
from optax_gate.gate.base.run_record import RunRecord
from optax_gate.gate.diffs import dependencies
from optax_gate.gate.inputs import declared
from optax_gate.gate.inputs.options import ScopeOptions
from optax_gate.gate.judge import causes
from optax_gate.gate.run import warnings_diff
from optax_gate.gate.surface import public_api
from optax_gate.gate.team_code import binding, call_sites, usage

SCHEMA: Literal[3] = 3


def site_packages(python: Path) -> Path | None:
    """The ``site-packages`` folder of the environment of ``python`` (its ``bin/python``)."""
    found = sorted(Path(python).parent.parent.glob("lib/python*/site-packages"))
    return found[0] if found else None


def contracted_paths(report: model.Report) -> set[str]:
    """The public paths the contracts cover: each row's API, and each alias
    ``test_surface_sweep.py::test_known[<path>]`` checks (``optax.dpsgd`` is
    ``optax.contrib.dpsgd``: a change of its signature is as broken)."""
    apis = set()
    for row in report.get("contracts", []):
        api = row.get("api") or ""
        apis.add("flax.nnx." + api.split(":", 1)[1] if api.startswith("nnx:") else api)
        known = re.fullmatch(r".*::test_known\[([\w.]+)\]", str(row.get("id") or ""))
        if known:
            apis.add(known[1])
    return apis


def _covered(path: str, contracted: set[str]) -> bool:
    return any(path == a or path.startswith(a + ".") for a in contracted)


def _section_counts(rows: list[dict[str, Any]]) -> model.SectionCounts:
    """How many of ``rows`` have each verdict."""
    out = {"broken": 0, "cannot-tell": 0, "changed": 0, "new": 0, "noted": 0}
    for r in rows:
        out[r["verdict"]] += 1
    return cast(model.SectionCounts, out)


def surface_section(
    base_site: Path | None,
    cand_site: Path | None,
    packages: tuple[str, ...],
    uses: list[usage.Use] | usage.Scan | None,
    contracted: set[str],
) -> model.Surface:
    """The ``surface`` section of the report; ``uses``: the scan of the
    team's code (``--usage``), or None."""
    scan = uses if isinstance(uses, usage.Scan) else None
    uses = uses.uses if isinstance(uses, usage.Scan) else uses
    packaged = list(packages)
    missing = [
        side
        for side, site in (("baseline", base_site), ("candidate", cand_site))
        if site is None or not Path(site).is_dir()
    ]
    if missing or base_site is None or cand_site is None:  # a None site is missing: these tell the type checker
        return {
            "packages": packaged,
            "rows": [],
            "status": "unavailable",
            "reason": f"no installed environment for the {' and '.join(missing)}",
            "counts": _section_counts([]),
            "duration_s": 0.0,
        }
    start = time.monotonic()
    old, new = (
        public_api.cached_surface(Path(base_site), tuple(packages)),
        public_api.cached_surface(Path(cand_site), tuple(packages)),
    )
    rows = public_api.diff(old, new)
    if uses is not None:
        binding.match(uses, rows, old, new)
    # a path defined where a contracted path is (optax.dpsgd is optax.contrib.dpsgd, an alias no table names)
    same_definition = {r["where"] for r in rows if r.get("where") and _covered(r["path"], contracted)}
    for r in rows:
        r.setdefault("uses", [])
        r.setdefault("breaks", False)
        if r["change"] in public_api.ADDED:
            r["verdict"] = "new"
        elif uses is not None:
            unscanned = scan.may_use(r["path"]) if scan is not None and r["change"] in public_api.INCOMPATIBLE else []
            r["verdict"] = "broken" if r["breaks"] else "cannot-tell" if unscanned else "changed"
            if unscanned and not r["breaks"]:
                r["not_scanned"] = [n.path for n in unscanned]
        else:
            hit = _covered(r["path"], contracted) or r.get("where") in same_definition
            r["verdict"] = "broken" if hit and r["change"] in public_api.INCOMPATIBLE else "changed"
    return {
        "packages": packaged,
        "rows": cast(list[model.SurfaceRow], rows),  # each row's verdict, uses and breaks set above
        "status": "compared",
        "reason": "",
        "counts": _section_counts(rows),
        "duration_s": round(time.monotonic() - start, 2),
    }


def warnings_section(
    report: model.Report, baseline: RunRecord, candidate: RunRecord, fail_on_new_deprecations: bool
) -> model.Warnings:
    """The ``warnings`` section: every warning, import-time ones included;
    only the import-time ones when the candidate's contracts did not run."""
    apis = {r["id"]: r["api"] for r in report.get("contracts", [])}
    base, cand = baseline.fields.get("warnings") or [], candidate.fields.get("warnings") or []
    reason = ""
    if not candidate.ran or not baseline.ran:
        base, cand = [w for w in base if w["when"] == "import"], [w for w in cand if w["when"] == "import"]
        reason = "contracts did not run in both environments: import-time warnings only"
    if "warnings" not in baseline.fields or "warnings" not in candidate.fields:
        return {
            "status": "unavailable",
            "reason": "no warning records (an environment was not probed)",
            "rows": [],
            "counts": _section_counts([]),
        }
    rows = warnings_diff.diff(base, cand, apis, fail_on_new_deprecations)
    section: model.Warnings = {
        "status": "compared",
        "reason": reason,
        "rows": cast(list[model.WarningRow], rows),  # warnings_diff.diff sets each row's verdict
        "counts": _section_counts(rows),
        "fail_on_new_deprecations": fail_on_new_deprecations,
    }
    own = {
        side: len(warnings_diff.own(record.fields.get("warnings") or []))
        for side, record in (("baseline", baseline), ("candidate", candidate))
    }
    if any(own.values()):  # JAX about the gate's compilation cache: neither side's warning
        discarded = sum(len(r.fields.get("compilation_cache_discarded") or []) for r in (baseline, candidate))
        section["own"] = {"baseline": own["baseline"], "candidate": own["candidate"], "discarded": discarded}
        section["reason"] = "; ".join(
            filter(
                None,
                [
                    reason,
                    (
                        f"left out: {sum(own.values())} warning(s) about the gate's own compilation cache "
                        f"(baseline {own['baseline']}, "
                        f"candidate {own['candidate']}), not the code under test; {discarded} corrupt cache entr"
                        f"{'y' if discarded == 1 else 'ies'} discarded, compiled again next run"
                    ),
                ],
            )
        )
    return section


def dependencies_section(
    baseline: RunRecord,
    candidate: RunRecord,
    base_site: Path | None,
    cand_site: Path | None,
    uses: list[usage.Use] | usage.Scan | None,
) -> model.Dependencies:
    """The ``dependencies`` section: the two lock files, Requires-Python, jaxlib's wheel tags."""
    requires: model.RequiresPython = {
        "baseline": dependencies.requires_python(base_site),
        "candidate": dependencies.requires_python(cand_site),
    }
    tags: model.JaxlibTags = {
        "baseline": dependencies.wheel_tags(base_site),
        "candidate": dependencies.wheel_tags(cand_site),
    }
    named = [r.fields.get("lock_file") for r in (baseline, candidate)]
    locks = [Path(name or "") for name in named]
    if not all(named) or not all(p.is_file() for p in locks):
        return {
            "status": "unavailable",
            "reason": "a resolved lock file is missing (resolution failed?)",
            "rows": [],
            "counts": _section_counts([]),
            "requires_python": requires,
            "jaxlib_tags": tags,
        }
    scan = uses if isinstance(uses, usage.Scan) else None
    uses = uses.uses if isinstance(uses, usage.Scan) else uses
    imported = usage.imported_modules(uses) if uses is not None else None
    own = declared.packages(Path(p) for p in scan.paths) if scan is not None else None
    rows = dependencies.diff(
        locks[0].read_text(encoding="utf-8"), locks[1].read_text(encoding="utf-8"), base_site, imported, own
    )
    for r in rows:
        modules = (
            dependencies.top_level_modules(base_site, r["name"])
            if scan is not None and r["change"] == "removed"
            else set()
        )
        unscanned = (
            list(dict.fromkeys(n.path for m in sorted(modules) for n in scan.may_use(m))) if scan is not None else []
        )
        r["verdict"] = "broken" if r["breaks"] else "cannot-tell" if unscanned or r.get("may_come_with") else "changed"
        if unscanned and not r["breaks"]:
            r["not_scanned"] = unscanned
    return {
        "status": "compared",
        "reason": "",
        "rows": cast(list[model.DependencyRow], rows),  # each row's verdict set above
        "counts": _section_counts(rows),
        "requires_python": requires,
        "jaxlib_tags": tags,
    }


#: Each section beyond the contracts: (the words before a finding's API, the section's heading).
BEYOND = {
    "surface": ("API surface", "API surface"),
    "dependencies": ("dependency", "Dependencies"),
    "warnings": ("new", "Warnings"),
}


def _beyond(
    section: Literal["surface", "dependencies", "warnings"], api: str, cause: str, your_code: list[str] | None
) -> model.Finding:
    finding: model.Finding = {
        "number": 0,  # numbered with the others by causes.merge
        "section": section,
        "change": "broken",
        "api": api,
        "cause": cause,
        "contracts": [],
        "text": f"broken {BEYOND[section][0]} {api}: {cause}",
    }
    if your_code is not None:
        finding["your_code"] = list(dict.fromkeys(your_code))
    return finding


def broken_findings(report: model.Report) -> list[model.Finding]:
    """One finding per ``broken`` row beyond the contracts (API surface rows:
    one per kind of change, across the names it hits, e.g. "removed: 6
    names"; dependencies, warnings: one per row), for ``report["findings"]`` after the contract
    findings (:func:`beyond` numbers them on); the full
    rows are in their sections. With ``--usage``, ``your_code`` of a surface
    row's finding holds only the sites whose binding breaks or cannot be told
    (``row["sites"]``, ``optax_gate.gate.team_code.binding.match``), not those it judged
    unaffected; a warning's, the sites of the APIs it names."""
    scanned = bool(report.get("usage"))
    out: list[model.Finding] = []
    by_kind: dict[str, list[model.SurfaceRow]] = {}  # one finding per kind of change, across names (one cause)
    surface, dependencies, warned = report.get("surface"), report.get("dependencies"), report.get("warnings")
    for row in surface["rows"] if surface else []:
        if row.get("verdict") == "broken":
            by_kind.setdefault(row["change"], []).append(row)
    for kind, rows in by_kind.items():
        where: list[str] = []
        for row in rows:
            if "sites" in row:
                where += [s["where"] for s in row["sites"] if s["verdict"] in ("breaks", "cannot-tell")]
            else:  # rows matched before sites were recorded
                where += [u.split(": ", 1)[0] for u in row.get("uses") or []]
        if len(rows) == 1:
            row = rows[0]
            what = kind + (f" ({row['param']})" if row.get("param") else "")
            out.append(
                _beyond(
                    "surface",
                    row["path"],
                    f"{what}: {row.get('old') or '—'} → {row.get('new') or '—'}",
                    where if scanned else None,
                )
            )
            continue
        paths = list(dict.fromkeys(r["path"] for r in rows))
        named = named_list(paths)  # the section names them all
        params = [r["param"] for r in rows if r.get("param")]
        detail = f" ({len(params)} parameters)" if params else ""
        finding = _beyond("surface", f"{len(paths)} names", f"{kind}{detail}: {named}", where if scanned else None)
        finding["apis"] = paths
        out.append(finding)
    for dependency in dependencies["rows"] if dependencies else []:
        if dependency.get("verdict") == "broken":
            out.append(
                _beyond(
                    "dependencies",
                    dependency["name"],
                    f"{dependency['change']} ({dependency.get('old') or '—'} → {dependency.get('new') or '—'}), "
                    "imported by your code",
                    None,
                )
            )
    for warning in warned["rows"] if warned else []:
        if warning.get("verdict") == "broken":
            out.append(
                _beyond(
                    "warnings",
                    str(warning.get("category")),
                    warning.get("message", "")[:160],
                    warning.get("your_code") if scanned else None,
                )
            )
    return out


def deprecation_finding(report: model.Report) -> list[model.Finding]:
    """One ``changed`` finding of the deprecation warnings new in the candidate that are not broken (those
    are, under ``--fail-on-new-deprecations``, findings of their own): what the candidate will ask the team's
    code to change, named by the APIs that warn, each warning's words once. [] when there is none.

    Returns:
      ``[{"section": "warnings", "change": "changed", "key": "deprecations", "api", "apis", "cause",
      "contracts": [], "text"}]``.
    """
    warned = report.get("warnings")
    rows = [
        r
        for r in (warned["rows"] if warned else [])
        if r.get("change") == "new"
        and r.get("verdict") == "changed"
        and warnings_diff.is_deprecation(str(r.get("category")))
    ]
    if not rows:
        return []
    said: dict[str, list[str]] = {}  # message -> the APIs that warn it
    for r in rows:
        said.setdefault(shorten(" ".join(str(r.get("message", "")).split()), 120), []).extend(r.get("apis") or [])
    apis = sorted({a for names in said.values() for a in names})
    parts = [f'{named_list(sorted(set(names))) + ": " if names else ""}"{message}"' for message, names in said.items()]
    cause = (
        f"{len(said)} deprecation warning{'s' if len(said) > 1 else ''} new in the candidate (code that calls "
        "them keeps working, for now): " + "; ".join(parts)
    )
    api = apis[0] if len(apis) == 1 else f"{len(apis)} APIs" if apis else "deprecations"
    return [
        {
            "number": 0,  # numbered with the others by causes.merge
            "section": "warnings",
            "change": "changed",
            "key": "deprecations",
            "api": api,
            "apis": apis,
            "cause": cause,
            "contracts": [],
            "text": f"changed {api}: {cause}",
        }
    ]


@dataclasses.dataclass(frozen=True)
class Beyond:
    """What the contracts cannot see, as report sections (:func:`beyond`;
    ``optax_gate.gate.assemble.with_beyond`` puts them into the report):
    ``usage``, the scan of the team's code (None without ``--usage``);
    ``surface``, ``warnings``, ``dependencies``, the three sections;
    ``findings``, the report's findings with the broken rows beyond the
    contracts merged in, one cause one finding (None: the report had no
    findings list); ``seconds``, the time the sections took (wall, s);
    ``notes``, notes for the report (files ``--usage`` could not scan)."""

    usage: model.Usage | None
    surface: model.Surface
    warnings: model.Warnings
    dependencies: model.Dependencies
    findings: list[model.Finding] | None
    seconds: float
    notes: tuple[str, ...] = ()

    def broken(self) -> dict[str, int]:
        """The broken rows of each section: ``{"surface": n, "dependencies": n, "warnings": n}``
        (``verdict.of_beyond``)."""
        return {
            "surface": self.surface["counts"]["broken"],
            "dependencies": self.dependencies["counts"]["broken"],
            "warnings": self.warnings["counts"]["broken"],
        }


def beyond(
    report: model.Report,
    baseline: RunRecord,
    candidate: RunRecord,
    scope: ScopeOptions | None = None,
    packages: tuple[str, ...] = public_api.DEFAULT_PACKAGES,
) -> Beyond:
    """The ``usage``, ``surface``, ``warnings`` and ``dependencies`` sections
    of a report from ``optax_gate.gate.judge.compare.compare`` (read, not
    changed), and its findings with those beyond the contracts (a
    ``broken`` row is one: ``verdict.of_beyond`` turns ``pass`` into
    ``fail``). ``baseline`` and ``candidate`` are the run records
    (``site_packages``, ``lock_file``, ``warnings``); ``scope``: ``usage``
    (the team's code), ``usage_scan`` (its scan when already made: the gate
    scans before anything runs), ``fail_on_new_deprecations``;
    ``packages``: whose API surface is diffed. With ``--usage``, each
    finding lists the team's call sites of its APIs
    (``optax_gate.gate.team_code.call_sites``)."""
    scope = scope or ScopeOptions()
    scan = scope.usage_scan if scope.usage_scan is not None else usage.scan(list(scope.usage)) if scope.usage else None
    sites = [Path(site) if (site := r.fields.get("site_packages")) else None for r in (baseline, candidate)]
    view: model.Report = {**report, "usage": None if scan is None else scan.to_json()}
    start = time.monotonic()
    view["surface"] = surface_section(sites[0], sites[1], packages, scan, contracted_paths(report))
    view["warnings"] = warnings_section(report, baseline, candidate, scope.fail_on_new_deprecations)
    view["dependencies"] = dependencies_section(baseline, candidate, sites[0], sites[1], scan)
    if scan is not None:
        targets = (
            {p: e.target for p, e in public_api.cached_surface(sites[0], tuple(packages)).items()}
            if sites[0] and sites[0].is_dir()
            else {}
        )
        view = call_sites.annotated(view, scan, targets)
    findings = None
    if isinstance(view.get("findings"), list):  # the broken rows beyond the contracts are findings too, after them
        # one upstream cause, one finding: a removal, a defect that now fails otherwise, one API's changes,
        # across the contracts, the API surface and the warnings (optax_gate.gate.judge.causes.merge renumbers)
        beyond_rows = broken_findings(view) + deprecation_finding(view)
        # the view is the report's JSON form with the sections put in (the findings annotated by call_sites)
        given = view["findings"]
        sectioned: list[model.Finding] = [{**f, "section": f.get("section", "contracts")} for f in given]
        findings = causes.merge(sectioned + beyond_rows, view.get("contracts", []))
    seconds = round(time.monotonic() - start, 2)
    notes: tuple[str, ...] = ()
    if scan is not None and scan.not_scanned:
        unsure = view["surface"].get("counts", {}).get("cannot-tell", 0)
        notes = (
            f"--usage: {len(scan.not_scanned)} file(s) not scanned ({', '.join(n.path for n in scan.not_scanned[:3])}"
            f"{', …' if len(scan.not_scanned) > 3 else ''}): what they use cannot be told; {unsure} API surface "
            "change(s) read cannot-tell (see Your code)",
        )
    return Beyond(view["usage"], view["surface"], view["warnings"], view["dependencies"], findings, seconds, notes)
