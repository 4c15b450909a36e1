"""The speed readings of a gate's two sides: taken from the cache, left out where the candidate's timed steps
cannot differ, or measured (``optax_gate.gate.speed.readings``)."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path
from typing import Any

from optax_gate.gate.base import model
from optax_gate.gate.base.progress import Progress
from optax_gate.gate.base.run_record import RunRecord
from optax_gate.gate.inputs.options import EnvironmentOptions, SpeedOptions
from optax_gate.gate.install import environments
from optax_gate.gate.reuse import results_cache
from optax_gate.gate.run import reach_record
from optax_gate.gate.speed import readings


@dataclasses.dataclass(frozen=True)
class SpeedSides:
    """The two environments of a speed reading: ``pythons``, their interpreters when already built (else
    built by :func:`measure_speed`); ``baseline_inputs``, the baseline side's cache inputs
    (``Side.cache_inputs``), under which what its timed steps execute is kept (None: not kept)."""

    pythons: tuple[Path | None, ...] = ()
    baseline_inputs: dict[str, Any] | None = None


def measure_speed(
    env: EnvironmentOptions,
    speed: SpeedOptions,
    candidate_lock: Path,
    candidate: RunRecord,
    say: Progress | None = None,
    sides: SpeedSides = SpeedSides(),
) -> model.Speed | None:
    """Time the training steps of the baseline's (``env.baseline_lock``) and
    the candidate's environments, interleaved (``gate.speed.readings``); None
    under ``--no-speed``. A measured result is cached by both locks
    (``results_cache.speed_inputs``): a gate re-judging the same pair takes it
    from there (``from_cache`` says when it was measured) unless
    ``--no-cache``. The plot is the caller's (``report_speed.write_plot``).

    The baseline's worker records what its timed steps execute (the functions of Optax and Flax), kept
    in the cache under ``sides.baseline_inputs``. A candidate whose contract modules were selected by
    the functions it changed (its record's ``selection``) and that changed none of those is not timed:
    its steps run the baseline's code, so they are the baseline's programs (:func:`untimed_steps`)."""
    if not speed.enabled:
        return None
    if not candidate.ran:
        return readings.not_measured("the candidate did not run its contracts", speed.budget)
    if candidate.fields.get(
        "same_code"
    ):  # the same Python on the same jaxlib: the same programs, timed against themselves
        return readings.not_measured(
            "the candidate runs the baseline's code, so its training steps are the baseline's programs: not timed",
            speed.budget,
        )
    inputs = None
    baseline_lock = env.baseline_lock
    if env.cache_dir is not None:
        inputs = results_cache.speed_inputs(baseline_lock, candidate_lock, env.project_root, speed)
        cached, _ = results_cache.fetch_speed(env.cache_dir, inputs) if env.use_cache else (None, "")
        if cached is not None:
            if say:
                say(
                    "speed: readings of this pair of environments from the cache, measured "
                    f"{cached['from_cache']['recorded']}"
                )
            return cached
    why = untimed_steps(candidate, _speed_reach(env, sides.baseline_inputs))
    if why:
        if say:
            say(f"speed: not timed ({why})")
        return readings.not_measured(why, speed.budget)
    if say:
        say(f"speed: timing the training steps, {speed.rounds} rounds interleaved")
    pythons = sides.pythons
    try:
        ready = [python for python in pythons if python] if len(pythons) == 2 else []
        if len(ready) != 2:
            ready = [
                environments.ensure(environments.folder_for(env.envs_dir, lock), lock, env.python, env.project_root)
                for lock in (baseline_lock, candidate_lock)
            ]
    except environments.EnvironmentFailure as exc:
        return readings.not_measured(str(exc), speed.budget)
    with tempfile.TemporaryDirectory(prefix="optax-gate-speed-") as tmp:
        result = readings.measure(
            ready[0], ready[1], env.project_root, speed, reach_file=reach_record.reach_file(Path(tmp), "speed")
        )
        found = reach_record.read(Path(tmp), "speed")
    if inputs is not None and env.cache_dir is not None:  # inputs only with a cache_dir
        results_cache.store_speed(env.cache_dir, inputs, result)
        if found is not None and sides.baseline_inputs is not None and result.get("status") == "measured":
            results_cache.store_speed_reach(
                env.cache_dir,
                sides.baseline_inputs,
                [*found["session"], *(f for fs in found["modules"].values() for f in fs)],
            )
    return result


def _speed_reach(env: EnvironmentOptions, baseline_inputs: dict[str, Any] | None) -> list[str] | None:
    """What the baseline's timed steps execute, from the cache (None: not recorded, or no cache in use)."""
    if env.cache_dir is None or not env.use_cache or baseline_inputs is None:
        return None
    return results_cache.fetch_speed_reach(env.cache_dir, baseline_inputs)


def untimed_steps(candidate: RunRecord, reached: list[str] | None) -> str:
    """Why the candidate's training steps need no timing, or "" when they do: the candidate's modules were
    selected by the functions it changed (its record's ``selection``, without ``everything``), and the
    baseline's timed steps execute none of them (``reached``; None: not known, so timed)."""
    chosen = candidate.fields.get("selection")
    if not chosen or chosen.get("everything") or reached is None:
        return ""
    changed = sorted(chosen.get("changed") or [])
    if not changed or set(changed) & set(reached):
        return ""
    return (
        f"the timed training steps execute none of the {len(changed)} function(s) the candidate changed "
        f"({', '.join(f'`{c}`' for c in changed[:3])}{', ...' if len(changed) > 3 else ''}), as recorded in "
        "the baseline's "
        "environment, so the candidate's steps are the baseline's programs: not timed"
    )
