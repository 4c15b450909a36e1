"""The release matrix: which candidate environments to build from what the package index offers, and how their
runs combine into one report.

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from packaging.version import Version

from optax_gate.gate.base import model
from optax_gate.gate.base.run_record import RunRecord
from optax_gate.gate.diffs import unseen
from optax_gate.gate.inputs import requirements
from optax_gate.gate.judge import compare, verdict
from optax_gate.gate.matrix import discovery
from optax_gate.gate.matrix.model import (
    ApiCounts,
    ApiRow,
    BeyondSection,
    Cell,
    Change,
    ContractRow,
    EnvironmentRow,
    ExitStatus,
    MatrixReport,
    Plan,
    PlannedEnvironment,
    UpstreamDirection,
    UpstreamRow,
)

PACKAGES = ("optax", "jax", "flax")
#: The public repositories of the upstream-dev environments (``--upstream``), built at their default branch.
UPSTREAM = {"optax": "https://github.com/google-deepmind/optax", "flax": "https://github.com/google/flax"}
#: Changes from the most to the least severe: the colour of an API's cell.
WORST: tuple[Change, ...] = ("broken", "gone", "changed", "new", "fixed", "unchanged")


@dataclass(frozen=True)
class Environment:
    """A candidate environment: a name (also its file name) and the requirement
    specs that replace the baseline's; ``unreleased`` when a package is built
    from an unreleased commit (``--upstream``)."""

    name: str
    specs: tuple[str, ...]
    why: str
    unreleased: bool = False

    def to_json(self) -> PlannedEnvironment:
        """The environment as the plan and the matrix report list it."""
        return {"name": self.name, "specs": list(self.specs), "why": self.why, "unreleased": self.unreleased}


def baseline_pins(requirements_in: str) -> dict[str, str]:
    """``{name: version}`` of the ``name==version`` lines of requirements.in."""
    pins = {}
    for raw in requirements_in.splitlines():
        line = raw.split("#", 1)[0].strip()
        if "==" in line:
            pins[requirements.canonical_name(line)] = line.split("==", 1)[1].strip()
    return pins


def upstream_environments() -> list[Environment]:
    """``optax-main`` and ``flax-main``: each package built from its public
    repository's default branch (``git+URL`` without a ref), the rest at baseline."""
    return [
        Environment(
            f"{name}-main",
            (f"{name} @ git+{url}",),
            f"{name}'s default branch ({url}), unreleased; the rest at baseline",
            unreleased=True,
        )
        for name, url in UPSTREAM.items()
    ]


def plan(
    requirements_in: str, fetch: discovery.Fetch | None = None, include_older: bool = False, upstream: bool = False
) -> tuple[list[Environment], dict[str, list[str]]]:
    """The candidate environments and the releases discovered per package
    (``upstream``: the two upstream-dev environments last).

    Raises:
      KeyError: when requirements.in does not pin one of optax, jax, flax.
      OSError: when the index cannot be reached.
    """
    kwargs = {"fetch": fetch} if fetch else {}
    pins = baseline_pins(requirements_in)
    found = {p: discovery.newer_than(p, pins[p], include_older=include_older, **kwargs) for p in PACKAGES}
    jaxlibs = {str(v) for v in discovery.releases("jaxlib", **kwargs)}

    def jax_specs(v: Version | str) -> tuple[str, ...]:
        return (f"jax=={v}", f"jaxlib=={v}" if str(v) in jaxlibs else "jaxlib")

    envs = [Environment(f"optax-{v}", (f"optax=={v}",), f"optax {v}, the rest at baseline") for v in found["optax"]]
    envs += [Environment(f"jax-{v}", jax_specs(v), f"jax/jaxlib {v}, the rest at baseline") for v in found["jax"]]
    envs += [Environment(f"flax-{v}", (f"flax=={v}",), f"flax {v}, the rest at baseline") for v in found["flax"]]
    newest = {p: max(vs) for p, vs in found.items() if vs and max(vs) > Version(pins[p])}
    if newest:
        specs = [
            f"optax=={newest.get('optax', pins['optax'])}",
            *jax_specs(newest.get("jax", pins["jax"])),
            f"flax=={newest.get('flax', pins['flax'])}",
        ]
        envs.append(Environment("all-newest", tuple(specs), "the newest optax, jax/jaxlib and flax together"))
    if upstream:
        envs += upstream_environments()
    return envs, {p: [str(v) for v in vs] for p, vs in found.items()}


#: The sections beyond the contracts (``optax_gate.gate.diffs.unseen``), one grid row each.
BEYOND = ("surface", "warnings", "dependencies")


#: The reason's start of an environment whose cross-run of optax's own tests failed (as the gate's failed late phase).
CROSS_RUN_PHASE = "gate error in the upstream tests cross-run (--upstream-tests): "


def upstream_row(run: RunRecord, expected: bool) -> UpstreamRow | None:
    """An environment's cross-run of optax's own tests (``upstream_tests``
    in its run record, written by ``matrix --upstream-tests``) for the merged
    report: None when its contracts did not run, or when the run record has
    none and none is ``expected``; ``{"status": "failed", "error"}`` when it
    could not run, ``{"status": "missing", "error"}`` when it is expected and
    absent; else ``{"status": "ran", "seconds", "modules", "directions":
    [{"label", "files", "ran", "failed", "seconds", "kinds", "control"}],
    "findings"}`` (``kinds``: failures per class, ``upstream.failures.classify``;
    ``findings``: the cross-run's, in the gate's finding form)."""
    if not run.ran:
        return None
    section: Mapping[str, Any] | None = run.fields.get("upstream_tests")
    if section is None:
        return (
            {
                "status": "missing",
                "error": "no upstream tests cross-run in its run record (its runner ran without --upstream-tests)",
            }
            if expected
            else None
        )
    if section.get("error"):
        return {"status": "failed", "error": section["error"]}
    directions: list[UpstreamDirection] = []
    for d in section["directions"]:
        kinds: dict[str, int] = {}
        for f in d["failures"]:
            kinds[f["kind"]] = kinds.get(f["kind"], 0) + 1
        directions.append(
            {
                "label": d["label"],
                "files": len(d["files"]),
                "ran": d["ran"],
                "failed": d["failed"],
                "seconds": d["seconds"],
                "kinds": kinds,
                "control": d.get("control"),
            }
        )
    return {
        "status": "ran",
        "seconds": section["seconds"],
        "modules": len(section["changed_modules"]),
        "directions": directions,
        "findings": section["findings"],
    }


def merge(
    baseline: RunRecord,
    runs: dict[str, RunRecord],
    planned: Plan,
    packages: tuple[str, ...] | None = None,
    upstream_tests: bool = False,
) -> MatrixReport:
    """The matrix report (schema 1, ``"kind": "matrix"``).

    Args:
      baseline: the baseline's run record.
      runs: run records by environment name (a planned environment without a
        run is reported not verified: "no run record").
      planned: the plan (``plan.json``): ``environments``, the planned
        environments (``Environment.to_json()``), and ``discovered``, the
        releases found per package.
      packages: the public modules whose API surface is diffed (``[tool.
        optax-gate] surface``); None skips the sections beyond the contracts.
      upstream_tests: every environment that ran its contracts must have
        cross-run optax's own tests (``matrix --upstream-tests``).

    Returns:
      ``{"schema", "kind", "discovered", "baseline", "environments": [{name,
      specs, why, unreleased, sources, verdict, reasons, summary, versions,
      status, reason, ran, speed}],
      "apis": [{api, contracts, differs, cells: {env: {broken, changed, fixed,
      new, gone, unchanged, worst}}}], "contracts": [{id, api, guide, kind,
      defect, baseline, differs, cells: {env: {outcome, change, detail}}}]}``.
      ``ran``: the environment ran its contracts (else every contract is
      ``gone`` there and renderers show its reason instead). ``speed``: the
      environment's speed readings against the baseline (``gate.speed.readings``), or
      None when not measured (``--no-speed``). ``beyond``: ``{surface,
      warnings, dependencies: {status, counts}}`` of the environment against
      the baseline (``gate.diffs.unseen``; the surface and dependency diffs exist
      even for an environment that cannot import), or None. ``unreleased``:
      a package is built from an unreleased commit; ``sources``: the run
      record's packages built from source (``source_specs.record``), else []. ``apis``: one row
      per API, counts per environment, ``worst`` the most severe change
      (``WORST``); APIs and contracts that differ in an environment that ran
      come first, then by name. ``upstream_tests``: :func:`upstream_row`;
      its findings never change the verdict, but a cross-run that could not
      run (or is missing when ``upstream_tests``) makes it ``not-verified``,
      the reason first (:data:`CROSS_RUN_PHASE`), as a failed late phase of
      the gate does.
    """
    environments, discovered = planned["environments"], planned["discovered"]
    env_rows: list[EnvironmentRow] = []
    cells: dict[str, tuple[model.ContractRow, dict[str, Cell]]] = {}
    for env in environments:
        run = runs.get(env["name"]) or RunRecord(env["name"], "not-verified", "no run record")
        report = compare.compare(baseline, run)
        beyond = None
        if packages is not None:
            sections = unseen.beyond(report, baseline, run, packages=packages)
            report = verdict.at_least(report, *verdict.of_beyond(sections.broken()))
            beyond = {k: _beyond_section(getattr(sections, k)) for k in BEYOND}
        upstream = upstream_row(run, upstream_tests)
        if upstream and upstream["status"] != "ran":  # the gate's rule: a failed phase, never a silent pass
            report = verdict.at_least(report, "not-verified", CROSS_RUN_PHASE + upstream["error"], at=0)
        env_rows.append(
            {
                **env,
                "unreleased": bool(env.get("unreleased")),
                "sources": run.fields.get("sources") or [],
                "verdict": report["verdict"],
                "reasons": report["reasons"],
                "summary": report["summary"],
                "upstream_tests": upstream,
                "versions": {} if run.versions is None else run.versions,
                "status": run.status,
                "reason": "" if run.reason is None else run.reason,
                "ran": run.ran,
                "speed": run.fields.get("speed"),
                "beyond": beyond,
            }
        )
        for row in report["contracts"]:
            cells.setdefault(row["id"], (row, {}))[1][env["name"]] = {
                "outcome": row["candidate"],
                "change": row["change"],
                "detail": row["detail"],
            }
    ran = [e["name"] for e in env_rows if e["ran"]]

    def differs(cells: dict[str, Cell]) -> bool:
        return any(name in cells and cells[name]["change"] != "unchanged" for name in ran)

    contracts: list[ContractRow] = [
        {
            "id": cid,
            "api": row["api"],
            "guide": row["guide"],
            "kind": row["kind"],
            "defect": row.get("defect", ""),
            "baseline": row["baseline"],
            "differs": differs(by_env),
            "cells": by_env,
        }
        for cid, (row, by_env) in sorted(cells.items())
    ]
    contracts.sort(key=lambda c: (not c["differs"], c["id"]))
    apis: dict[str, ApiRow] = {}
    for c in contracts:
        a = apis.setdefault(
            c["api"],
            {"api": c["api"], "contracts": 0, "differs": False, "cells": {e["name"]: _no_counts() for e in env_rows}},
        )
        a["contracts"] += 1
        a["differs"] = a["differs"] or c["differs"]
        for name, cell in c["cells"].items():
            a["cells"][name][cell["change"]] += 1
    for a in apis.values():
        for counts in a["cells"].values():
            counts["worst"] = next((k for k in WORST if counts[k]), "unchanged")
    return {
        "schema": 1,
        "kind": "matrix",
        "discovered": discovered,
        "baseline": cast(model.BaselineRecord, {k: v for k, v in baseline.to_json().items() if k != "contracts"}),
        "environments": env_rows,
        "apis": sorted(apis.values(), key=lambda a: (not a["differs"], a["api"])),
        "contracts": contracts,
    }


#: ``--fail-on`` levels: which environments count as failing a scheduled job.
FAIL_ON = ("broken", "changed")


def _beyond_section(section: model.Surface | model.Warnings | model.Dependencies) -> BeyondSection:
    """A section beyond the contracts as the matrix keeps it: its status and counts (``diffs.unseen``'s section)."""
    return {"status": section.get("status"), "counts": section["counts"]}


def _no_counts() -> ApiCounts:
    """An API's counts in an environment before its contracts are counted."""
    return {"broken": 0, "changed": 0, "fixed": 0, "new": 0, "gone": 0, "unchanged": 0, "worst": "unchanged"}


def meets(env: EnvironmentRow, fail_on: str) -> bool:
    """Whether an environment row of :func:`merge` meets ``--fail-on``:
    ``broken``: its verdict is ``fail`` (a contract broken, or a broken row
    beyond the contracts); ``changed``: that, or any contract that is not
    ``unchanged`` (broken, changed, fixed, new, gone)."""
    if env["verdict"] == "fail":
        return True
    return (
        fail_on == "changed" and env.get("ran", False) and any(n for k, n in env["summary"].items() if k != "unchanged")
    )


def exit_status(report: MatrixReport, fail_on: str | None) -> ExitStatus:
    """The exit status of a matrix run and why: ``{"fail_on", "met_by",
    "not_verified", "status", "baseline_ran"}``.

    - 2 when the baseline did not run (nothing can be judged);
    - without ``fail_on``: 0 (the verdicts are in the report);
    - with it: 1 when an environment meets it (:func:`meets`); else 2 when an
      environment is not verified (fail closed: an environment that could not
      be resolved, installed, imported or run is never a pass); else 0.
    """
    not_verified = [e["name"] for e in report["environments"] if e["verdict"] == "not-verified"]
    met = [e["name"] for e in report["environments"] if fail_on and meets(e, fail_on)]
    if report["baseline"].get("status") != "ran":
        status = 2
    elif not fail_on:
        status = 0
    else:
        status = 1 if met else 2 if not_verified else 0
    return {
        "fail_on": fail_on,
        "met_by": met,
        "not_verified": not_verified,
        "status": status,
        "baseline_ran": report["baseline"].get("status") == "ran",
    }


def exit_words(result: ExitStatus) -> str:
    """One line for the console and the report: why the run exits as it does."""
    status, fail_on = result["status"], result["fail_on"]
    if not result["baseline_ran"]:
        return f"exit {status}: the baseline did not run"
    if not fail_on:
        return f"exit {status}: the report is written (no --fail-on: verdicts per environment above)"
    if result["met_by"]:
        return f"exit {status}: --fail-on {fail_on} met by {', '.join(result['met_by'])}"
    if result["not_verified"]:
        return f"exit {status}: --fail-on {fail_on} not met, but not verified: {', '.join(result['not_verified'])}"
    return f"exit {status}: no environment meets --fail-on {fail_on}"
