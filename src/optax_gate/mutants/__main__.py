"""The mutants check: ``python -m optax_gate.mutants [--area AREA ...] [--contracts DIR ...] [--json FILE] [--all
| --changed]``.

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from optax_gate import mutants
from optax_gate.gate.base import atomic
from optax_gate.gate.inputs.typed_path import user_path
from optax_gate.gate.run import devices, outcomes, pytest_plugins
from optax_gate.kit.environment import probe
from optax_gate.mutants import proof

#: The plugins of this environment's declared pytest plugins, named (as the gate runs them).
PLUGINS = pytest_plugins.args(probe.pytest_plugins())


#: How many times a pytest process that a signal killed (a crash inside JAX or
#: XLA, not a contract's verdict) is run again before the check stops (one abort in about six runs of
#: one sharded mutant here: two reruns leave about one stop in 200).
CRASH_RERUNS = 2


def crash_words(returncode: int, output: str) -> str:
    """How a pytest process killed by a signal died, in one line: the signal's
    name and, where Python's fault handler printed one, the innermost frame of
    the crashed thread (``File "...", line N in fn``).

    Args:
      returncode: the process's negative return code (``-signal``).
      output: its stdout and stderr.
    """
    try:
        sig = signal.Signals(-returncode).name
    except ValueError:
        sig = f"signal {-returncode}"
    lines = output.splitlines()
    fatal = next((i for i, line in enumerate(lines) if "Fatal Python error" in line), None)
    if fatal is None:
        return f"crashed ({sig})"
    frame = next((line.strip() for line in lines[fatal + 1 :] if line.strip().startswith("File ")), "no frame printed")
    return f"crashed ({sig}) at {frame}"


def failed_contracts(
    module: str, name: str | None, workdir: Path, env: dict[str, str] | None = None
) -> tuple[set[str], set[str]]:
    """(contracts that failed or errored, all contracts) of one module under one mutant.

    Raises:
      RuntimeError: when pytest did not run the module (collection error,
        usage error, crash).
    """
    log = workdir / f"{Path(module).stem}-{name or 'no-mutant'}.jsonl"
    outside = (
        ["-c", "pyproject.toml", "--rootdir", "."] if Path(module).is_absolute() else []
    )  # a team folder's (--contracts)
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        module,
        *outside,
        "-q",
        "-p",
        "no:cacheprovider",
        *PLUGINS,
        "-p",
        "optax_gate.mutants.plugin",
        f"--report-log={log}",
    ]
    if name:
        cmd.append(f"--mutant={name}")
    for attempt in range(1 + CRASH_RERUNS):
        log.unlink(missing_ok=True)
        proc = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            env={**os.environ, **pytest_plugins.ENV, "OPTAX_GATE_HYPOTHESIS_PROFILE": "mutants", **(env or {})},
        )
        if proc.returncode >= 0 or attempt == CRASH_RERUNS:
            break
        print(
            f"note: mutant {name or '(none)'} of {module}: pytest "
            f"{crash_words(proc.returncode, proc.stdout + proc.stderr)}; run again",
            flush=True,
        )
    parsed = outcomes.parse(log)
    if parsed.collection_errors or parsed.exitstatus not in (0, 1):
        said = (
            crash_words(proc.returncode, proc.stdout + proc.stderr)
            if proc.returncode < 0
            else " | ".join((proc.stdout + proc.stderr).strip().splitlines()[-8:])
        )
        raise RuntimeError(
            f"mutant {name}: pytest did not run (exit {proc.returncode}; "
            f"{parsed.collection_errors or parsed.exitstatus}): {said}"
        )
    return {cid for cid, c in parsed.contracts.items() if c.outcome in ("failed", "error")}, set(parsed.contracts)


def input_digests(areas: list[str], registry: dict[str, mutants.Mutant], root: Path) -> dict[str, dict[str, Any]]:
    """Each family's inputs digested (``proof.inputs``); a family with an input outside the project (a
    team's ``--contracts`` folder) has none: it is always proven, never recorded."""
    modules: dict[str, set[str]] = {}
    for m in registry.values():
        modules.setdefault(m.area, set()).add(m.patch.__module__)
    out: dict[str, dict[str, Any]] = {}
    for area in areas:
        files = proof.inputs(area, mutants.AREAS[area], sorted(modules.get(area, ())), root)
        if files is not None:
            out[area] = proof.entry(files, root)
    return out


def why_stale(area: str, record: dict[str, dict[str, Any]], digests: dict[str, dict[str, Any]]) -> str:
    """Why a family is proven again under ``--changed``: no record, its inputs outside the project, or the
    input files that changed (three named)."""
    if area not in digests:
        return "its contracts lie outside the project: never recorded"
    if area not in record:
        return "no proof recorded"
    changed = proof.changed_inputs(record[area], digests[area])
    shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
    return f"changed: {shown}"


def family_of(text: str) -> str:
    """A family's name as given to ``--area``: the name itself, or the stem of its mutants module or of its
    contract module (``training_recipes``, ``test_training_recipes``, ``multi_steps``), ``-`` and ``_`` alike.

    Raises:
      argparse.ArgumentTypeError: no family by that name (the nearest named).
    """
    import difflib

    def key(name: str) -> str:
        return name.lower().replace("-", "_").removeprefix("test_").removesuffix(".py")

    aliases: dict[str, str] = {}
    for m in mutants.MUTANTS.values():
        aliases.setdefault(key(m.patch.__module__.rpartition(".")[2]), m.area)
    for area, module in mutants.AREAS.items():
        aliases.setdefault(key(Path(module).stem), area)
        aliases[key(area)] = area
    if key(text) in aliases:
        return aliases[key(text)]
    near = difflib.get_close_matches(key(text), list(aliases), n=3)
    hint = f"; did you mean {', '.join(sorted({aliases[n] for n in near}))}?" if near else ""
    raise argparse.ArgumentTypeError(f"no mutant family {text!r}{hint} (the families: ./noxw -s mutants -- --list)")


def main(argv: list[str] | None = None) -> int:
    """``python -m optax_gate.mutants``: prove the families (each mutant caught, each contract failing under one);
    the exit status."""
    first = argparse.ArgumentParser(add_help=False)
    first.add_argument("--contracts", action="append", type=user_path, default=[])
    known, _ = first.parse_known_args(argv)
    missing = [str(d) for d in known.contracts if not d.is_dir()]
    if missing:
        print(f"--contracts: no such folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    if known.contracts:  # the pytest processes load the same team mutants files (the plugin calls mutants.load)
        os.environ[mutants.TEAM_DIRS_ENV] = os.pathsep.join(str(d.resolve()) for d in known.contracts)
    registry = mutants.load()
    p = argparse.ArgumentParser(
        prog="python -m optax_gate.mutants",
        description="Every contract must fail under some mutant; every mutant must be caught.",
    )
    p.add_argument(
        "--area",
        action="append",
        type=family_of,
        metavar="NAME",
        help="limit to this family (repeatable): its name, or its mutants or contract module's stem (--list names "
        "them)",
    )
    p.add_argument("--list", action="store_true", help="list the families (name: contract module) and stop")
    p.add_argument(
        "--contracts",
        action="append",
        type=user_path,
        metavar="DIR",
        help="a folder of the team's own contracts and their *_mutants.py outside the project (as gate --contracts)",
    )
    p.add_argument("--json", type=Path, help="write the kill matrix (contract -> mutants that fail it) here")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--all", action="store_true", help="prove every family (the default)")
    which.add_argument(
        "--changed",
        action="store_true",
        help=f"prove only the families whose inputs changed since their last proof ({proof.RECORD}); the others "
        "stand proven",
    )
    args = p.parse_args(argv)
    if args.list:
        print("\n".join(f"{area}: {mutants.AREAS[area]}" for area in sorted(mutants.AREAS)))
        return 0
    areas = list(dict.fromkeys(args.area or sorted(mutants.AREAS)))
    root = Path.cwd()
    digests = input_digests(areas, registry, root)
    if args.changed:
        record = proof.read_record(root)
        standing = [a for a in areas if a in digests and record.get(a, {}).get("inputs") == digests[a]["inputs"]]
        areas = [a for a in areas if a not in standing]
        total = len(standing) + len(areas)
        print(
            f"proven before at their current inputs ({proof.RECORD}): {len(standing)} of {total} "
            f"famil{'y' if total == 1 else 'ies'}; proving {len(areas)}"
        )
        for area in areas:
            print(f"to prove: {area} ({why_stale(area, record, digests)})")
        if not areas:
            return 0
    problems: list[tuple[str, str]] = []
    matrix: dict[str, list[str]] = {}
    jobs = [(area, None) for area in areas] + [(m.area, m.name) for m in registry.values() if m.area in areas]
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        checkpoints = Path(tmp) / "checkpoints"
        if "resume" in areas:  # written once, unmutated, as the baseline does in the gate
            subprocess.run(
                [sys.executable, "-m", "optax_gate.kit.training.resume", "write", str(checkpoints)],
                check=True,
                capture_output=True,
            )

        def job_env(job: Any) -> Any:
            writer_side = job[1] is not None and registry[job[1]].writer_side
            env = {} if writer_side or job[0] != "resume" else {"OPTAX_GATE_CHECKPOINTS": str(checkpoints)}
            if devices.is_multidevice(mutants.AREAS[job[0]]):  # eight simulated devices, this process only
                env = devices.env({"XLA_FLAGS": os.environ.get("XLA_FLAGS", ""), **env})
            return env

        try:
            results = dict(
                zip(
                    jobs,
                    pool.map(
                        lambda job: failed_contracts(mutants.AREAS[job[0]], job[1], Path(tmp), job_env(job)), jobs
                    ),
                    strict=False,
                )
            )
        except RuntimeError as exc:  # a module that does not even run (mislabelled contract, broken mutant)
            print(f"PROBLEM: {exc}")
            print("the check stopped: fix the problem above and run it again")
            return 1
    for area in areas:
        failing, contracts = results[(area, None)]
        if failing:
            problems.append((area, f"{area}: contracts fail without any mutant: {sorted(failing)}"))
        killed_by: dict[str, list[str]] = {c: [] for c in contracts}
        for m in registry.values():
            if m.area != area:
                continue
            failed, _ = results[(area, m.name)]
            print(f"{m.name:28s} {len(failed):3d} of {len(contracts)} contracts fail  ({m.what})")
            if not failed:
                problems.append((area, f"mutant {m.name} ({m.what}) is caught by no contract"))
            for cid in failed:
                killed_by.setdefault(cid, []).append(m.name)
        for cid, names in sorted(killed_by.items()):
            if not names:
                problems.append((area, f"contract {cid} fails under no mutant"))
        matrix.update(killed_by)
    if args.json:
        atomic.write_text(args.json, json.dumps(matrix, indent=2, sort_keys=True) + "\n")
    for _, problem in problems:
        print("PROBLEM:", problem)
    proven = {a: digests[a] for a in areas if a in digests and a not in {pa for pa, _ in problems}}
    if proven:
        proof.write_record(root, proven)
        print(
            f"recorded as proven at their current inputs: {len(proven)} "
            f"famil{'y' if len(proven) == 1 else 'ies'} ({proof.RECORD})"
        )
    print(
        f"{len(matrix)} contracts, {sum(1 for m in registry.values() if m.area in areas)} mutants, "
        f"{len(problems)} problems"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
