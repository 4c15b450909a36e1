"""The requirements of a side resolved into its lock, a source candidate's wheels built first (``resolve_sources``),
the matrix's environments resolved and run (``run_specs``), and the record of a side that did not run (``skipped``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Unpack

from optax_gate.gate.base import atomic, model
from optax_gate.gate.base.progress import Progress
from optax_gate.gate.base.run_record import RecordFields, RunRecord
from optax_gate.gate.inputs import requirements
from optax_gate.gate.inputs.options import EnvironmentOptions
from optax_gate.gate.inputs.validate import InvalidInput
from optax_gate.gate.install import environments, extras, source_specs
from optax_gate.gate.run import runner
from optax_gate.gate.sides import run_lock
from optax_gate.gate.sides_prepare import Folders, forget_previous_evidence, requirements_in, results_dir

#: Seconds allowed to each git or uv step of a build from source.
SOURCE_TIMEOUT = 600


def resolve(
    specs: list[str], lock_path: Path, env: EnvironmentOptions, say: Callable[[str], None] | None = None
) -> Path:
    """Resolve the baseline's requirements with ``specs`` replaced into ``lock_path``
    (a pin the baseline lock contradicts takes the lock's version:
    ``requirements.replace_held``; ``say`` is told which).

    Raises:
      environments.EnvironmentFailure: the resolver found no set of versions.
    """
    text, moved = requirements.replace_held(
        requirements_in(env).read_text(encoding="utf-8"), specs, extras.pinned(env.baseline_lock)
    )
    if moved and say:
        say(
            f"the candidate keeps the baseline lock's versions of what it does not name: {'; '.join(moved)} "
            f"(pinned differently in {env.requirements_in})"
        )
    req_in = atomic.write_text(lock_path.with_suffix(".in"), text)
    upgrade = [requirements.canonical_name(s) for s in specs]
    return environments.compile_lock(req_in, lock_path, env.baseline_lock, upgrade)


def resolve_sources(
    specs: list[str],
    sources: list[source_specs.SourceSpec],
    lock_path: Path,
    env: EnvironmentOptions,
    say: Callable[[str], None] | None = None,
) -> list[model.SourceBuild]:
    """Build the wheel of each source candidate (cached under
    ``--cache-dir``/source by commit), resolve ``specs`` with those wheels into
    ``lock_path`` and check that the lock pins each wheel by its SHA-256.

    Returns:
      the source candidates' report records (``source_specs.record``), empty without any.

    Raises:
      source_specs.SourceFailure: a build failed, or the lock does not pin a wheel by its hash.
      environments.EnvironmentFailure: the resolver found no set of versions.
    """
    records: list[model.SourceBuild] = []
    if sources:
        wheels, records = source_specs.build(
            sources, Path(results_dir(env)) / "source", SOURCE_TIMEOUT, say or (lambda m: None)
        )
        specs = [*specs, *wheels]
    resolve(specs, lock_path, env, say)
    source_specs.check_lock(lock_path, records)
    return records


def run_specs(
    label: str,
    specs: list[str],
    lock_path: Path,
    env: EnvironmentOptions,
    folders: Folders,
    progress: Progress | None = None,
) -> RunRecord:
    """Resolve ``specs`` into ``lock_path`` (a source spec built first), then
    run it (the matrix's environments)."""
    forget_previous_evidence(label, folders.evidence)
    try:
        plain, sources = source_specs.split(specs, None)
        built = resolve_sources(plain, sources, lock_path, env, progress)
    except environments.EnvironmentFailure as exc:
        return runner.not_verified(label, str(exc), requirements=specs)
    except source_specs.SourceFailure as exc:
        return runner.not_verified(label, str(exc), requirements=specs, sources=[exc.record])
    except InvalidInput as exc:  # a plan asking for jax from source, say
        return runner.not_verified(label, f"invalid input: {exc}", requirements=specs)
    fields: RecordFields = {"requirements": specs}
    if built:
        fields["sources"] = built
    return run_lock(label, lock_path, env, folders, progress, **fields)


def skipped(label: str, why: str, **extra: Unpack[RecordFields]) -> RunRecord:
    """The not-verified record of side ``label`` that was not run, and ``why``."""
    return runner.not_verified(label, f"not run: {why}", **extra)
