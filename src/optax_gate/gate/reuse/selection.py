"""Which of a candidate's contract modules run, and in a module which APIs' contracts: those that executed, at the
baseline, a function the candidate changed; the others take the baseline's outcomes.

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import dataclasses
from typing import Any

from optax_gate.gate.base import model
from optax_gate.gate.reuse.function_diff import FunctionDiff


@dataclasses.dataclass(frozen=True)
class Selection:
    """``run``: the modules that run; ``taken``: those whose outcomes are the
    baseline's; ``reached``: for each module that runs because of the change,
    the changed functions it executed; ``apis``: for a module of ``run`` that runs
    only some of its APIs' contracts, those APIs (the other APIs' outcomes are the
    baseline's); ``everything``: why every module runs ("" when selected);
    ``changed``: the changed functions."""

    run: tuple[str, ...]
    taken: tuple[str, ...] = ()
    reached: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    everything: str = ""
    changed: tuple[str, ...] = ()
    apis: dict[str, list[str]] = dataclasses.field(default_factory=dict)

    def record(self) -> model.Selection:
        """The ``selection`` field of a candidate's run record."""
        out: model.Selection = {
            "changed": list(self.changed),
            "ran": list(self.run),
            "taken": list(self.taken),
            "reached": {k: list(v) for k, v in self.reached.items()},
        }
        if self.apis:
            out["apis"] = {k: list(v) for k, v in self.apis.items()}
        if self.everything:
            out["everything"] = self.everything
        return out

    def words(self) -> str:
        """What ran and why, in the report's words."""
        if self.everything:
            return f"every contract module runs: {self.everything}"
        shown = ", ".join(self.changed[:3]) + (", ..." if len(self.changed) > 3 else "")
        named = sorted({a for found in self.apis.values() for a in found})
        listed = ", ".join(named[:3]) + (f" and {len(named) - 3} more" if len(named) > 3 else "")
        within = (
            f" ({len(self.apis)} of them only for the contracts of {listed}: the API(s) whose contracts executed a "
            "changed function)"
            if self.apis
            else ""
        )
        return (
            f"{len(self.changed)} function(s) changed ({shown or 'none'}): {len(self.run)} contract module(s) run"
            f"{within}, {len(self.taken)} take the baseline's outcomes (they executed no changed function)"
        )


def choose(
    modules: list[str], baseline: dict[str, dict[str, Any]], session: list[str] | None, diff: FunctionDiff
) -> Selection:
    """The selection (module docstring).

    Args:
      modules: every contract module (results-cache unit) name, in order; team folders included.
      baseline: the baseline's cached payload per module (``reach``: the functions it executed).
      session: what ran outside any module at the baseline (None: not recorded).
      diff: what the candidate changed.
    """
    every = tuple(modules)
    if diff.everything:
        return Selection(every, everything=diff.everything)
    if session is None:
        return Selection(every, everything="the baseline's record of what ran outside the modules is missing")
    changed = sorted(diff.changed)
    outside = sorted(set(changed) & set(session))
    if outside:
        return Selection(
            every,
            everything=f"{outside[0]} changed and runs outside any module (at import or in a plugin)",
            changed=tuple(changed),
        )
    run, taken, reached, apis = [], [], {}, {}
    for name in modules:
        payload = baseline.get(name)
        found = payload.get("reach") if payload else None
        if found is None:
            run.append(name)
            continue
        hit = sorted(set(found) & set(changed))
        if not hit:
            taken.append(name)
            continue
        run.append(name)
        reached[name] = hit
        within = apis_reached(payload or {}, set(changed))
        if within is not None:
            apis[name] = within
    return Selection(tuple(run), tuple(taken), reached, changed=tuple(changed), apis=apis)


def apis_reached(payload: dict[str, Any], changed: set[str]) -> list[str] | None:
    """The APIs of a module whose contracts executed a changed function at the baseline, when only those
    need to run; None when the whole module runs: no record per API, a changed function that ran in the
    module outside any API's tests (collection, a fixture that serves several APIs, a contract without an
    API), a contract whose API has no record, or every API reached."""
    common, by_api = payload.get("reach_common"), payload.get("reach_apis")
    if not isinstance(common, list) or not isinstance(by_api, dict) or set(common) & changed:
        return None
    contracted = {r.get("api") for r in (payload.get("contracts") or {}).values()}
    if None in contracted or "" in contracted or not contracted <= set(by_api):
        return None
    hit = sorted(api for api in contracted if set(by_api[api]) & changed)
    return hit if hit and len(hit) < len(contracted) else None
