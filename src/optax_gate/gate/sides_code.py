"""The candidate's code against the baseline's, before its contracts run: the same code (it takes the baseline's
outcomes), or the contract modules that execute a function it changed (the others take the baseline's results)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from optax_gate.gate.inputs.options import EnvironmentOptions
from optax_gate.gate.reuse import function_diff, results_cache
from optax_gate.gate.reuse import same_code as same_code_
from optax_gate.gate.reuse import selection as selection_
from optax_gate.gate.sides_prepare import Side


def compare_code(
    baseline: Side, candidate: Side, env: EnvironmentOptions, candidate_lock: Path, say: Callable[[str], None]
) -> None:
    """Decide whether the candidate, still to run, runs the baseline's code
    (``same_code.compare``; not under ``--no-cache``, which runs everything):
    then :func:`run_both` runs the baseline alone and gives the candidate its outcomes."""
    if candidate.record is not None or not env.use_cache:
        return
    found = same_code_.compare(*_installed(baseline, candidate, env, candidate_lock))
    if found.same:
        candidate.same_code = found
        say(
            f"candidate: its code is the baseline's ({found.why}): its contracts take the baseline's outcomes "
            "instead of running"
        )
    else:
        say(f"candidate: its contracts run: it is not the baseline's code ({found.why})")


def select_modules(
    baseline: Side, candidate: Side, env: EnvironmentOptions, candidate_lock: Path, say: Callable[[str], None]
) -> None:
    """Choose the candidate's contract modules to run by the functions it
    changed (``selection.choose``): the others take the baseline's results.
    Only when the baseline's every module is cached with what it executes
    (not under ``--no-cache`` or ``--all-modules``, and not for a candidate whose code is the baseline's)."""
    if candidate.record is not None or candidate.same_code is not None or not env.use_cache or not candidate.pending:
        return
    every = tuple(u.name for u in candidate.pending)
    if not env.select_modules:
        return _every_module(candidate, every, "--all-modules", say)
    if baseline.record is None or len(baseline.cached) != len(baseline.units) or baseline.header is None:
        return _every_module(
            candidate,
            every,
            "the baseline's results are not all cached (its first run), so none can be taken from it",
            say,
        )
    profile = (baseline.cache_inputs or {}).get("environment", {}).get("OPTAX_GATE_HYPOTHESIS_PROFILE", "ci")
    if (
        profile != "ci"
    ):  # derandomized: a property contract executes the same examples, so the same functions, every run
        why = (
            f"the hypothesis profile {profile!r} draws other examples each run, so what a property contract "
            "executes is not fixed"
        )
        return _every_module(candidate, every, why, say)
    diff = function_diff.compare(*_installed(baseline, candidate, env, candidate_lock))
    chosen = selection_.choose(list(every), baseline.cached, baseline.header.get("reach_session"), diff)
    candidate.selection = chosen
    if not chosen.everything:
        candidate.taken = {name: baseline.cached[name] for name in chosen.taken}
        candidate.taken_apis = {
            name: results_cache.without_apis(baseline.cached[name], apis) for name, apis in chosen.apis.items()
        }
        candidate.header = candidate.header or baseline.header
    say(f"candidate: {chosen.words()}")


def _installed(
    baseline: Side, candidate: Side, env: EnvironmentOptions, candidate_lock: Path
) -> tuple[same_code_.Installed, same_code_.Installed]:
    """The two sides' installed code as ``same_code`` and ``function_diff`` compare it: lock, site-packages, cache
    inputs."""
    sites = [Path(s) if (s := side.extra.get("site_packages")) else None for side in (baseline, candidate)]
    return (
        same_code_.Installed(env.baseline_lock, sites[0], baseline.cache_inputs),
        same_code_.Installed(candidate_lock, sites[1], candidate.cache_inputs),
    )


def _every_module(candidate: Side, every: tuple[str, ...], why: str, say: Callable[[str], None]) -> None:
    """Record that every module of the candidate runs although a selection was tried, and why (report and console)."""
    candidate.selection = selection_.Selection(every, everything=why)
    say(f"candidate: every contract module runs ({why})")
