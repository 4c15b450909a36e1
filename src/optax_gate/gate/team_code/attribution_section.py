"""The report's ``attribution`` section: the findings attributed with what the report's environments say, and
the team's lines counted by verdict."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from optax_gate.gate.base import model
from optax_gate.gate.surface import public_api
from optax_gate.gate.team_code import attribution, composition, usage


def summary(findings: Iterable[model.Finding]) -> dict[str, int]:
    """How many lines of the team's code are affected / cannot tell / not affected, over the findings."""
    out: dict[str, int] = {v: 0 for v in attribution.VERDICTS}
    for f in findings:
        for a in (f.get("your_code_attribution") or {}).values():
            out[a["verdict"]] += 1
    return out


def for_report(
    report: model.Report, scan: usage.Scan, packages: tuple[str, ...]
) -> tuple[model.Attribution, list[str]]:
    """:func:`attribute` with what the report's environments say: the
    composition probe of both (``optax_gate.gate.team_code.composition``), the
    baseline's static surface (aliases, defaults). The report's findings get
    their attribution in place (``scope.apply_options`` hands it copies).
    Returns the report's ``attribution`` section (``{"composition":
    {"constructors", "errors"}, "lines": :func:`summary`}``) and its notes: a
    probe that cannot run is a note (uses through composition are then not seen)."""
    reached, errors, passes = composition.of_records(report["baseline"], report["candidate"])
    site = report["baseline"].get("site_packages")
    entries = public_api.cached_surface(Path(site), tuple(packages)) if site and Path(site).is_dir() else {}
    targets = {p: e.target for p, e in entries.items()}
    signatures = {e.target: e.params for e in entries.values() if e.params is not None}
    signatures.update({p: e.params for p, e in entries.items() if e.params is not None})
    attribution.attribute(report, scan, attribution.Known(reached, targets, signatures, passes))
    section: model.Attribution = {
        "composition": {"constructors": len(reached), "errors": errors},
        "lines": summary(report.get("findings") or []),
    }
    notes = (
        [
            "--usage: what the constructors are built from could not be probed ("
            + "; ".join(errors)
            + "): lines reached only through composition are not named"
        ]
        if errors
        else []
    )
    return section, notes
