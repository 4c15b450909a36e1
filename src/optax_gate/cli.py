"""Command line of the gate: ``python -m optax_gate <command>``.

Commands:

``gate [SPEC ...]``
    Build (or reuse) the baseline environment from the baseline lock and a
    candidate environment (the baseline with the packages named by ``SPEC``
    replaced, e.g. ``optax==0.2.8``; with no ``SPEC``, the newest releases of
    optax, jax, jaxlib and flax), run the contracts in both, write
    ``report.md`` and ``report.json`` to ``--out``. ``--candidate-lock`` uses
    a lock file as the candidate instead of ``SPEC``.
``compare BASELINE_RUN CANDIDATE_RUN``
    Compare two run records (``runs/<label>.json``) and write the reports.

Exit status: 0 pass, 1 fail (a contract broke), 2 not verified (an
environment could not be resolved, installed, imported or run; zero contracts
ran; a contract went missing; or the gate itself failed).
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path
from typing import Any

from optax_gate import atomic, compare, environments, report_json, report_markdown, requirements, runner

PYTHON_VERSION = "3.12"


def write_reports(report: dict[str, Any], out: Path) -> int:
    """Write ``report.json`` and ``report.md`` atomically; return the exit status."""
    atomic.write_text(out / "report.json", report_json.render(report))
    atomic.write_text(out / "report.md", report_markdown.render(report))
    print(f"optax-gate: verdict {report['verdict']} — {out / 'report.md'}")
    for reason in report["reasons"]:
        print(f"optax-gate:   {reason}")
    return compare.EXIT_STATUS[report["verdict"]]


def _save_run(record: dict[str, Any], out: Path) -> None:
    atomic.write_text(out / "runs" / f"{record['label']}.json", json.dumps(record, indent=2, sort_keys=True) + "\n")


def _build_and_run(label: str, lock: Path, args: argparse.Namespace, **extra: Any) -> dict[str, Any]:
    try:
        python = environments.ensure(args.envs_dir / label, lock, args.python, args.project_root)
    except environments.EnvironmentFailure as exc:
        return runner.not_verified(label, str(exc), **extra)
    return runner.run(python, label, args.project_root, args.out / "runs", args.timeout, **extra)


def _candidate_lock(args: argparse.Namespace) -> tuple[Path, list[str]]:
    if args.candidate_lock:
        return args.candidate_lock, [f"lock file {args.candidate_lock}"]
    specs = args.specs or list(requirements.NEWEST_DEFAULT)
    text = requirements.replace(args.requirements_in.read_text(encoding="utf-8"), specs)
    req_in = atomic.write_text(args.out / "candidate-requirements.in", text)
    upgrade = [requirements.canonical_name(s) for s in specs]
    lock = environments.compile_lock(req_in, args.out / "candidate-lock.txt", args.baseline_lock, upgrade, PYTHON_VERSION)
    return lock, specs


def gate(args: argparse.Namespace) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    baseline = _build_and_run("baseline", args.baseline_lock, args, requirements=[f"lock file {args.baseline_lock}"])
    _save_run(baseline, args.out)
    specs = args.specs or ["newest: " + " ".join(requirements.NEWEST_DEFAULT)]
    try:
        lock, specs = _candidate_lock(args)
    except environments.EnvironmentFailure as exc:
        candidate = runner.not_verified("candidate", str(exc), requirements=specs)
    else:
        candidate = _build_and_run("candidate", lock, args, requirements=specs)
    _save_run(candidate, args.out)
    return write_reports(compare.compare(baseline, candidate), args.out)


def compare_runs(args: argparse.Namespace) -> int:
    load = lambda p: json.loads(Path(p).read_text(encoding="utf-8"))  # noqa: E731
    return write_reports(compare.compare(load(args.baseline_run), load(args.candidate_run)), args.out)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="optax-gate", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    g = sub.add_parser("gate", help="run the contracts in the baseline and a candidate, write the report")
    g.add_argument("specs", nargs="*", help="candidate requirements, e.g. optax==0.2.8 jax==0.12.0.1 jaxlib==0.12.0.1")
    g.add_argument("--baseline-lock", type=Path, default=Path("requirements-lock.txt"))
    g.add_argument("--candidate-lock", type=Path, default=None)
    g.add_argument("--requirements-in", type=Path, default=Path("requirements.in"))
    g.add_argument("--out", type=Path, default=Path("reports/gate"))
    g.add_argument("--envs-dir", type=Path, default=Path(".nox/gate-envs"))
    g.add_argument("--python", default=sys.executable, help="interpreter to build environments with")
    g.add_argument("--project-root", type=Path, default=Path.cwd())
    g.add_argument("--timeout", type=float, default=1800, help="seconds for one pytest run")
    g.set_defaults(func=gate)
    c = sub.add_parser("compare", help="compare two run records and write the report")
    c.add_argument("baseline_run", type=Path)
    c.add_argument("candidate_run", type=Path)
    c.add_argument("--out", type=Path, default=Path("reports/gate"))
    c.set_defaults(func=compare_runs)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.func(args)
    except Exception as exc:  # fail closed: a crash of the gate is "not verified", with a report
        reason = f"gate error: {type(exc).__name__}: {exc}"
        traceback.print_exc()
        out = getattr(args, "out", Path("reports/gate"))
        empty = runner.not_verified("?", reason)
        return write_reports(compare.compare(empty, empty), out)
