"""The gate's late phases, after both sides ran their contracts: the API
surface, warnings and dependency diffs (``--usage`` scan included), the speed
readings and the writing of the report.

An error in one of them must not throw away the contract results already in
hand: :class:`LatePhases` runs each phase, records an exception as that
phase's failure and goes on; :meth:`LatePhases.record` then puts the failures
into the report (``gate_errors``), makes its verdict ``not-verified`` and
names the phase in the first reasons. The report still holds both sides'
contracts.
"""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from optax_gate.gate.base import model
from optax_gate.gate.judge import verdict

T = TypeVar("T")

#: The gate module an error came from -> the phase as the report names it
#: (within the surface/dependency diff, whose modules share one call).
_WHERE = {
    "optax_gate.gate.team_code.usage": "usage matching (--usage)",
    "optax_gate.gate.team_code.binding": "usage matching (--usage)",
    "optax_gate.gate.team_code.call_sites": "call sites on findings (--usage)",
    "optax_gate.gate.surface.public_api": "API surface diff",
    "optax_gate.gate.diffs.dependencies": "dependency diff",
    "optax_gate.gate.run.warnings_diff": "warnings diff",
}


def _innermost_gate_module(exc: BaseException) -> str:
    modules = [frame.f_globals.get("__name__", "") for frame, _ in traceback.walk_tb(exc.__traceback__)]
    return next((m for m in reversed(modules) if m.startswith("optax_gate.gate.")), "")


class LatePhases:
    """Runs the late phases of one gate run and keeps their failures."""

    def __init__(self) -> None:
        #: ``{"phase", "error"}`` per failed phase, in order.
        self.errors: list[model.GateError] = []
        self._recorded = 0

    def run(self, phase: str, action: Callable[[], T], default: T | None = None) -> T | None:
        """``action()``; on an exception, record it as ``phase``'s failure
        (a more precise phase when it came from a module of :data:`_WHERE`),
        print it with its traceback on stderr and return ``default``. An
        interruption (``KeyboardInterrupt``, the cli's ``Interrupted`` on
        SIGTERM: both ``BaseException``) is no phase failure: it propagates."""
        try:
            return action()
        except Exception as exc:  # fail closed: recorded as not verified, the evidence so far kept
            where = _WHERE.get(_innermost_gate_module(exc))
            name = f"{phase}: {where}" if where and where not in phase else phase
            self.errors.append({"phase": name, "error": f"{type(exc).__name__}: {exc}"})
            traceback.print_exc()
            print(
                f"optax-gate: gate error in the {name}: {type(exc).__name__}: {exc} (the contract results are "
                "kept; verdict not-verified)",
                file=sys.stderr,
            )
            return default

    def run_or(self, phase: str, action: Callable[[], T], default: T) -> T:
        """:meth:`run`, with ``default`` on a failure (or a None result): a phase that returns a new report
        leaves the flow the one it was given."""
        result = self.run(phase, action)
        return default if result is None else result

    def record(self, report: model.Report) -> model.Report:
        """Put the failures into ``report``: ``gate_errors``, verdict
        ``not-verified``, one reason per failure ahead of the others (each
        failure once, however often this is called)."""
        new = self.errors[self._recorded :]
        if new:
            report["gate_errors"] = list(self.errors)
            at = len(self.errors) - len(new)  # after the failures recorded before, ahead of the rest
            report.update(
                verdict.at_least(
                    report, "not-verified", [f"gate error in the {e['phase']}: {e['error']}" for e in new], at=at
                )
            )
            self._recorded = len(self.errors)
        return report


def fallback_markdown(report: Mapping[str, Any]) -> str:
    """A minimal ``report.md`` when the full one cannot be rendered: the
    verdict, the reasons and every contract's outcomes (from ``report.json``'s
    fields, which need no renderer)."""
    out = [f"# Optax upgrade gate: {str(report.get('verdict', 'not-verified')).upper()}", ""]
    out += [f"- **{reason}**" for reason in report.get("reasons", [])]
    out += [
        "",
        "The full report could not be rendered; `report.json` beside this file holds every field.",
        "",
        "| contract | baseline → candidate | change |",
        "|---|---|---|",
    ]
    out += [
        f"| `{r.get('id')}` | {r.get('baseline')} → {r.get('candidate')} | {r.get('change')} |"
        for r in report.get("contracts", [])
    ]
    return "\n".join(out) + "\n"
