"""The release matrix: which candidate environments to build from what the
package index offers, and how their runs combine into one report.

Environments (each judged against the pinned baseline):

- one per release of optax newer than the baseline's, the rest at baseline;
- one per release of jax newer than the baseline's, with the jaxlib of the same
  version when the index has one (else jaxlib left to the resolver);
- one per release of flax newer than the baseline's;
- ``all-newest``: the newest optax, jax (+ jaxlib) and flax together.

With ``include_older`` the older releases are planned too. Nothing here needs a
code change when a release appears: the list is read from the index each time
and written into the report.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from optax_gate.gate import compare, discovery, requirements

PACKAGES = ("optax", "jax", "flax")


@dataclass(frozen=True)
class Environment:
    """A candidate environment: a name (also its file name) and the requirement
    specs that replace the baseline's."""

    name: str
    specs: tuple[str, ...]
    why: str

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "specs": list(self.specs)}


def baseline_pins(requirements_in: str) -> dict[str, str]:
    """``{name: version}`` of the ``name==version`` lines of requirements.in."""
    pins = {}
    for raw in requirements_in.splitlines():
        line = raw.split("#", 1)[0].strip()
        if "==" in line:
            pins[requirements.canonical_name(line)] = line.split("==", 1)[1].strip()
    return pins


def plan(requirements_in: str, fetch: discovery.Fetch | None = None, include_older: bool = False) -> tuple[list[Environment], dict[str, list[str]]]:
    """The candidate environments and the releases discovered per package.

    Raises:
      KeyError: when requirements.in does not pin one of optax, jax, flax.
      OSError: when the index cannot be reached.
    """
    kwargs = {"fetch": fetch} if fetch else {}
    pins = baseline_pins(requirements_in)
    found = {p: discovery.newer_than(p, pins[p], include_older=include_older, **kwargs) for p in PACKAGES}
    jaxlibs = {str(v) for v in discovery.releases("jaxlib", **kwargs)}

    def jax_specs(v) -> tuple[str, ...]:
        return (f"jax=={v}", f"jaxlib=={v}" if str(v) in jaxlibs else "jaxlib")

    envs = [Environment(f"optax-{v}", (f"optax=={v}",), f"optax {v}, the rest at baseline") for v in found["optax"]]
    envs += [Environment(f"jax-{v}", jax_specs(v), f"jax/jaxlib {v}, the rest at baseline") for v in found["jax"]]
    envs += [Environment(f"flax-{v}", (f"flax=={v}",), f"flax {v}, the rest at baseline") for v in found["flax"]]
    newest = {p: max(vs) for p, vs in found.items() if vs and max(vs) > discovery.Version(pins[p])}
    if newest:
        specs = [f"optax=={newest.get('optax', pins['optax'])}", *jax_specs(newest.get("jax", pins["jax"])),
                 f"flax=={newest.get('flax', pins['flax'])}"]
        envs.append(Environment("all-newest", tuple(specs), "the newest optax, jax/jaxlib and flax together"))
    return envs, {p: [str(v) for v in vs] for p, vs in found.items()}


def merge(baseline: dict[str, Any], runs: dict[str, dict[str, Any]], environments: list[dict[str, Any]],
          discovered: dict[str, list[str]]) -> dict[str, Any]:
    """The matrix report (schema 1, ``"kind": "matrix"``).

    Args:
      baseline: the baseline's run record.
      runs: run records by environment name (a planned environment without a
        run is reported not verified: "no run record").
      environments: the planned environments (``Environment.to_json()``).
      discovered: releases found per package.

    Returns:
      ``{"schema", "kind", "discovered", "baseline", "environments": [{name,
      specs, why, verdict, reasons, summary, versions}], "contracts": [{id, api,
      guide, kind, baseline, cells: {env: {outcome, change}}}]}``.
    """
    env_rows, cells = [], {}
    for env in environments:
        run = runs.get(env["name"]) or {"label": env["name"], "status": "not-verified", "reason": "no run record", "contracts": {}}
        report = compare.compare(baseline, run)
        env_rows.append({**env, "verdict": report["verdict"], "reasons": report["reasons"], "summary": report["summary"],
                         "versions": run.get("versions", {}), "status": run.get("status"), "reason": run.get("reason", "")})
        for row in report["contracts"]:
            cells.setdefault(row["id"], {"row": row, "cells": {}})["cells"][env["name"]] = {
                "outcome": row["candidate"], "change": row["change"], "detail": row["detail"]}
    contracts = [
        {"id": cid, "api": v["row"]["api"], "guide": v["row"]["guide"], "kind": v["row"]["kind"],
         "baseline": v["row"]["baseline"], "cells": v["cells"]}
        for cid, v in sorted(cells.items())
    ]
    return {"schema": 1, "kind": "matrix", "discovered": discovered,
            "baseline": {k: v for k, v in baseline.items() if k != "contracts"},
            "environments": env_rows, "contracts": contracts}
