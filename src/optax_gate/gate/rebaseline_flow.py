"""``python -m optax_gate rebaseline LOCK`` (``./noxw -s rebaseline -- LOCK``): the contracts at another
baseline, and the ledger that lets each pin it.

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections import Counter
from pathlib import Path

from optax_gate.gate.base import atomic, details, plain_text
from optax_gate.gate.base.progress import Progress
from optax_gate.gate.base.run_record import RunRecord
from optax_gate.gate.gate_flow import Started, fail
from optax_gate.gate.inputs import validate
from optax_gate.gate.inputs.options import RebaselineOptions
from optax_gate.gate.install import compilation_cache, environments
from optax_gate.gate.judge import moved_ledger
from optax_gate.gate.reuse import baseline_snapshots
from optax_gate.gate.run import runner
from optax_gate.kit import moved_behaviour


def _summary(
    options: RebaselineOptions, version: str, record: RunRecord, done: moved_ledger.Accepted, held: list[str]
) -> str:
    lock, moved = options.lock, options.move
    contracts = record.contracts
    outcomes = Counter(r.get("outcome") for r in contracts.values())
    skipped: dict[str, str] = {}
    for r in sorted(contracts.values(), key=lambda r: r.get("api", "?")):
        if r.get("outcome") == "skipped":
            skipped.setdefault(r.get("api", "?"), plain_text.shorten(details.plain_detail(r), 320))
    apis = Counter(contracts[cid]["api"] for cid in done.entries)
    lines = [
        f"# Rebaseline at optax {version} ({lock})",
        "",
        f"{len(contracts)} contracts: " + ", ".join(f"{n} {o}" for o, n in sorted(outcomes.items())) + ". "
        f"{len(done.entries)} newly accepted into `{moved_behaviour.LEDGER}` (they pass there when they fail as optax "
        f"{version} does); {len(held)} already in it for this version and holding; {len(done.narrowed)} older entries "
        f"narrowed; {len(done.refused)} not accepted."
        + (
            " The lock is now the pinned baseline and its snapshots are re-recorded (`git diff` to review)."
            if moved
            else ""
        ),
        "",
    ]
    if skipped:
        lines += [
            f"Skipped at this baseline, {outcomes['skipped']} contracts of {len(skipped)} APIs (a skipped "
            "contract is not accepted: it checks nothing here):",
            "",
            *(f"- `{a}`: {why}" for a, why in list(skipped.items())[:20]),
            *(["- ..."] if len(skipped) > 20 else []),
            "",
        ]
    if apis:
        lines += [
            "| API | contracts newly accepted |",
            "|---|---|",
            *(f"| `{a}` | {n} |" for a, n in sorted(apis.items())),
            "",
        ]
    if done.refused:
        lines += [
            "Not accepted (fix these contracts):",
            "",
            *(f"- `{cid}`: {why}" for cid, why in sorted(done.refused.items())),
            "",
        ]
    return "\n".join(lines) + "\n"


def rebaseline(options: RebaselineOptions, started: Started | None = None) -> int:
    """The command (module docstring); its exit status."""
    env, lock = options.environment, options.lock
    try:
        pinned = validate.lock_packages(lock, "LOCK")
    except validate.InvalidInput as exc:
        return fail(f"{exc} (no ledger written)")
    version = runner.baseline_optax(lock)
    if "optax" not in pinned or not version:
        return fail(
            f"LOCK {lock} does not pin optax (optax==VERSION with its --hash): there is no baseline version "
            "to rebaseline at (no ledger written)"
        )
    ledger_path = env.project_root / moved_behaviour.LEDGER
    try:
        ledger = moved_behaviour.load(ledger_path)
    except ValueError as exc:
        return fail(f"the ledger cannot be read: {exc}")
    say = Progress()
    say(f"rebaseline at optax {version}: building (or reusing) the environment of {lock}")
    try:
        python = environments.ensure(environments.folder_for(env.envs_dir, lock), lock, env.python, env.project_root)
    except environments.EnvironmentFailure as exc:
        return fail(f"the environment of {lock} cannot be built: {exc}")
    work = Path(tempfile.mkdtemp(prefix="optax-gate-rebaseline-"))
    try:
        snapshots = env.project_root if options.move else work / "snapshots"
        jax_env = {
            **compilation_cache.environment(
                compilation_cache.shared(env.cache_dir, env.envs_dir), env.compilation_cache
            ),
            baseline_snapshots.SNAPSHOT_DIR: str(snapshots),
            baseline_snapshots.RECORD: "1",
        }
        checkpoints = work / "checkpoints"
        say("writing the resume checkpoints there")
        why = runner.write_checkpoints(python, checkpoints, env.project_root, extra_env=jax_env)
        if why:
            return fail(f"rebaseline: {why}")
        for old in Path(options.out).glob("rebaseline*"):  # an earlier rebaseline's evidence is not this one's
            if old.is_file():
                old.unlink()
        say("running every contract there (its snapshots recorded in this run)")
        run_env = dataclasses.replace(env, baseline_lock=lock)  # the runner passes this lock's optax to pytest
        record = runner.run(
            python,
            "rebaseline",
            options.out,
            run_env,
            runner.ContractRunOptions(checkpoints=checkpoints, extra_env=jax_env),
            on_progress=say.contracts("rebaseline"),
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if not record.ran:
        return fail(f"rebaseline: the contracts did not run at optax {version}: {record.reason}")
    logs = sorted(Path(options.out).glob("rebaseline*.reportlog.jsonl"))
    entries, done = moved_ledger.accept(
        ledger, record, moved_ledger.crash_lines(logs), version, (record.versions or {}).get("jax", "")
    )
    moved_ledger.write(ledger_path, entries)
    if options.move:
        atomic.write_text(env.project_root / baseline_snapshots.PINNED_LOCK, lock.read_text(encoding="utf-8"))
    held = sorted(
        cid
        for cid in moved_behaviour.applicable(ledger, version)
        if cid in record.contracts and record.contracts[cid]["outcome"] == "passed"
    )
    summary = _summary(options, version, record, done, held)
    atomic.write_text(Path(options.out) / "summary.md", summary)
    print(summary, end="")
    return 2 if done.refused else 0
