"""Which of a candidate's contract modules run: those that executed, at the baseline, a function the candidate
changed; the others take the baseline's outcomes.

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import dataclasses
from typing import Any

from optax_gate.gate.reuse.function_diff import FunctionDiff


@dataclasses.dataclass(frozen=True)
class Selection:
    """``run``: the modules that run; ``taken``: those whose outcomes are the
    baseline's; ``reached``: for each module that runs because of the change,
    the changed functions it executed; ``everything``: why every module runs
    ("" when selected); ``changed``: the changed functions."""

    run: tuple[str, ...]
    taken: tuple[str, ...] = ()
    reached: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    everything: str = ""
    changed: tuple[str, ...] = ()

    def record(self) -> dict[str, Any]:
        """The ``selection`` field of a candidate's run record."""
        return {
            "changed": list(self.changed),
            "ran": list(self.run),
            "taken": list(self.taken),
            "reached": {k: list(v) for k, v in self.reached.items()},
            **({"everything": self.everything} if self.everything else {}),
        }

    def words(self) -> str:
        if self.everything:
            return f"every contract module runs: {self.everything}"
        shown = ", ".join(self.changed[:3]) + (", ..." if len(self.changed) > 3 else "")
        return (
            f"{len(self.changed)} function(s) changed ({shown or 'none'}): {len(self.run)} contract module(s) run, "
            f"{len(self.taken)} take the baseline's outcomes (they executed no changed function)"
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
    run, taken, reached = [], [], {}
    for name in modules:
        payload = baseline.get(name)
        found = payload.get("reach") if payload else None
        if found is None:
            run.append(name)
            continue
        hit = sorted(set(found) & set(changed))
        if hit:
            run.append(name)
            reached[name] = hit
        else:
            taken.append(name)
    return Selection(tuple(run), tuple(taken), reached, changed=tuple(changed))
