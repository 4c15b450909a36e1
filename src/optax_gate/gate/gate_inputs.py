"""The gate's inputs checked before anything runs, and what the checks learned."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from optax_gate.gate.bisect import history as bisect_history
from optax_gate.gate.inputs import team_contracts, validate
from optax_gate.gate.inputs.options import GateOptions
from optax_gate.gate.inputs.user_paths import check_usage, refuse_paths_as_specs
from optax_gate.gate.install import source_specs
from optax_gate.gate.sides_prepare import requirements_in
from optax_gate.gate.team_code import usage
from optax_gate.gate.team_run import run_inputs


@dataclasses.dataclass(frozen=True)
class Checked:
    """The inputs once checked (:func:`check_inputs`): ``plain_specs`` and
    ``sources``, the SPECs split into requirements and builds from source;
    ``team_dirs``, the team's contract folders; ``run_spec``, the ``--run``
    command (``team_run.RunSpec``, None without one); ``usage_scan``, the
    ``--usage`` scan (None without it) of ``usage``, the team's code: the
    ``--usage`` paths, or with ``--run`` alone its ``--run-dir`` (:func:`team_code`)."""

    plain_specs: tuple[str, ...] = ()
    sources: tuple[Any, ...] = ()
    team_dirs: tuple[Path, ...] = ()
    run_spec: Any = None
    usage_scan: Any = None
    usage: tuple[Path, ...] = ()


def team_code(usage_paths: tuple[Path, ...], run_dir: Path | None) -> tuple[Path, ...]:
    """The team's code that scopes the findings beyond the team's run: the
    ``--usage`` paths; without them, ``--run``'s folder, so that a gate with
    ``--run`` and no ``--usage`` does not fail a team whose run is bit for bit
    the same for API surface rows (``optax.monte_carlo`` removed, the losses'
    keyword-only arguments) that no line of its code uses."""
    return tuple(usage_paths) or ((run_dir,) if run_dir is not None else ())


def check_inputs(options: GateOptions, say: Callable[[str], None]) -> Checked:
    """The gate's inputs checked before anything runs, and what the checks learned.

    Raises:
      validate.InvalidInput: the first input that cannot be used.
    """
    env, cand = options.environment, options.candidate
    known = validate.lock_packages(env.baseline_lock, "baseline lock")
    run_inputs.refuse_unquoted(options.team_run.command, list(cand.specs), known)
    plain: list[str] = list(cand.specs)
    sources: list[source_specs.SourceSpec] = []
    if cand.lock:
        validate.lock_packages(cand.lock, "candidate lock")
    else:
        if not requirements_in(env).is_file():
            raise validate.InvalidInput(f"--requirements-in {env.requirements_in} does not exist")
        refuse_paths_as_specs(cand.specs, known)
        validate.parse_specs(list(cand.specs), known, cand.allow_extra)
        plain, sources = source_specs.split(list(cand.specs), list(cand.source) or None)
    team_dirs = team_contracts.check(list(options.contracts) or None)
    if options.bisect.history and not options.bisect.enabled:
        raise validate.InvalidInput(
            "--history is given without --bisect: it says where a bisection reads a package's history (add "
            "--bisect, or leave --history out)"
        )
    if options.bisect.enabled:
        try:  # a --history typo is refused now, not after the whole gate
            bisect_history.parse_histories(list(options.bisect.history) or None)
        except ValueError as exc:
            raise validate.InvalidInput(str(exc)) from None
    run_spec = run_inputs.check(
        options.team_run.command, options.team_run.folder, options.team_run.timeout, options.team_run.exact
    )
    code = team_code(options.scope.usage, run_spec.run_dir if run_spec is not None else None)
    option = "--usage" if options.scope.usage else "--run-dir"
    scan = (
        usage.scan(check_usage(code, option)) if code else None
    )  # before anything runs; unreadable files are listed, not fatal
    if scan is not None:
        what = "--usage" if options.scope.usage else f"your code, taken from --run-dir {code[0]} (no --usage given)"
        say(
            f"{what}: {scan.scanned} of {scan.found} file(s) scanned, {len(scan.not_scanned)} not scanned "
            "(listed in the report)"
        )
    return Checked(tuple(plain), tuple(sources), tuple(team_dirs or ()), run_spec, scan, code)
