"""Command line of the gate: ``python -m optax_gate <command>``.

Commands:

``gate [SPEC ...]``
    Build (or reuse) the baseline environment from the baseline lock and a
    candidate environment (the baseline with the packages named by ``SPEC``
    replaced, e.g. ``optax==0.2.8``; with no ``SPEC``, the newest releases of
    optax, jax, jaxlib and flax), run the contracts in both, write
    ``report.md`` and ``report.json`` to ``--out``. ``--candidate-lock`` uses
    a lock file as the candidate instead of ``SPEC``. ``--usage PATH...``
    scopes the API surface and dependency diffs to the team's code;
    ``--fail-on-new-deprecations`` makes a new deprecation warning broken
    (``optax_gate.gate.unseen``).
``matrix [--plan | --only NAME ... | --merge] [--include-older]``
    Discover the releases of optax, jax/jaxlib and flax newer than the
    baseline on the package index, run the contracts in the baseline and in
    each candidate environment (``optax_gate.gate.matrix``), and write
    ``report.md``, ``report.json`` and ``report.html`` to ``--out``
    (default ``reports/matrix``). ``--plan`` only prints the environments as
    JSON (for fanning out over CI runners), ``--only`` runs the named ones
    (``baseline`` included) into ``runs/``, ``--merge`` combines ``runs/``
    into the report. Exit 0 when the report was written with a verified
    baseline, 2 otherwise; per-environment verdicts are in the report.
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

from optax_gate.gate import atomic, compare, environments, matrix, report_json, report_markdown, report_matrix, requirements, runner
from optax_gate.gate import surface, unseen

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


def _forget_previous_evidence(label: str, out: Path) -> None:
    """Remove the files an earlier run of ``label`` left in ``out/runs``, so a
    run that stops early never sits beside evidence that is not its own."""
    for old in (out / "runs").glob(f"{label}.*"):
        old.unlink()


def _run_lock(label: str, lock: Path, args: argparse.Namespace, **extra: Any) -> dict[str, Any]:
    """Build (or reuse) the environment of ``lock`` and run the contracts there."""
    _forget_previous_evidence(label, args.out)
    extra["lock_file"] = str(lock)  # for the dependency diff (optax_gate.gate.unseen)
    try:
        python = environments.ensure(environments.folder_for(args.envs_dir, lock), lock, args.python, args.project_root)
    except environments.EnvironmentFailure as exc:
        return runner.not_verified(label, str(exc), **extra)
    extra["site_packages"] = str(unseen.site_packages(python) or "")  # for the API surface diff
    checkpoints = args.out / "checkpoints"
    if label == "baseline":  # the baseline writes the checkpoints every environment resumes from
        extra["checkpoint_writer"] = runner.write_checkpoints(python, checkpoints, args.project_root) or "written"
    return runner.run(python, label, args.project_root, args.out / "runs", args.timeout, checkpoints=checkpoints, **extra)


def _run_specs(label: str, specs: list[str], lock_path: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Resolve the baseline with ``specs`` replaced into ``lock_path``, then run it."""
    _forget_previous_evidence(label, args.out)
    try:
        text = requirements.replace(args.requirements_in.read_text(encoding="utf-8"), specs)
        req_in = atomic.write_text(lock_path.with_suffix(".in"), text)
        upgrade = [requirements.canonical_name(s) for s in specs]
        lock = environments.compile_lock(req_in, lock_path, args.baseline_lock, upgrade, PYTHON_VERSION)
    except environments.EnvironmentFailure as exc:
        return runner.not_verified(label, str(exc), requirements=specs)
    return _run_lock(label, lock, args, requirements=specs)


def gate(args: argparse.Namespace) -> int:
    if args.candidate_lock and args.specs:
        print("optax-gate: give either requirement SPECs or --candidate-lock, not both", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    baseline = _run_lock("baseline", args.baseline_lock, args, requirements=[f"lock file {args.baseline_lock}"])
    _save_run(baseline, args.out)
    if args.candidate_lock:
        candidate = _run_lock("candidate", args.candidate_lock, args, requirements=[f"lock file {args.candidate_lock}"])
    else:
        specs = args.specs or [f"{name} (newest)" for name in requirements.NEWEST_DEFAULT]
        candidate = _run_specs("candidate", args.specs or list(requirements.NEWEST_DEFAULT), args.out / "candidate-lock.txt", args)
        candidate["requirements"] = specs
    _save_run(candidate, args.out)
    return write_reports(_beyond_contracts(compare.compare(baseline, candidate), baseline, candidate, args), args.out)


# --- beyond the contracts (issue 10): API surface, warnings, dependencies ----------------------
def _beyond_contracts(report: dict[str, Any], baseline: dict[str, Any], candidate: dict[str, Any],
                      args: argparse.Namespace) -> dict[str, Any]:
    packages = surface.configured_packages(Path(getattr(args, "project_root", Path.cwd())) / "pyproject.toml")
    return unseen.attach(report, baseline, candidate, usage_paths=args.usage, packages=packages,
                         fail_on_new_deprecations=args.fail_on_new_deprecations)


def _beyond_contracts_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--usage", nargs="+", type=Path, default=None, metavar="PATH",
                   help="the team's code (.py, .ipynb): scope the API surface and dependency diffs to what it uses")
    p.add_argument("--fail-on-new-deprecations", action="store_true",
                   help="a deprecation warning new in the candidate is broken (for code run with -W error)")
# ------------------------------------------------------------------------------------------------


def _load(path: Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def run_matrix(args: argparse.Namespace) -> int:
    out = args.out
    plan_path = out / "plan.json"
    if args.merge or (args.only and plan_path.exists()):
        # Merge, and runners fanned out by CI, use the plan already made: every
        # runner sees the same environments even if a release appears meanwhile.
        if not plan_path.exists():
            print(f"optax-gate: no {plan_path}; run the plan first (--plan or a full matrix run)", file=sys.stderr)
            return 2
        plan = _load(plan_path)
    else:
        envs, discovered = matrix.plan(args.requirements_in.read_text(encoding="utf-8"), include_older=args.include_older)
        plan = {"discovered": discovered, "environments": [e.to_json() for e in envs]}
        atomic.write_text(plan_path, json.dumps(plan, indent=2) + "\n")
        if args.plan:
            print(json.dumps(plan, indent=2))
            return 0
    names = {e["name"]: e for e in plan["environments"]}
    wanted = args.only or ([] if args.merge else ["baseline", *names])
    unknown = [n for n in wanted if n != "baseline" and n not in names]
    if unknown:
        print(f"optax-gate: not in the plan: {unknown}; planned: {sorted(names)}", file=sys.stderr)
        return 2
    for name in wanted:
        if name == "baseline":
            record = _run_lock("baseline", args.baseline_lock, args, requirements=[f"lock file {args.baseline_lock}"])
        else:
            record = _run_specs(name, list(names[name]["specs"]), out / "locks" / f"{name}.txt", args)
        _save_run(record, out)
        print(f"optax-gate: {name}: {record['status']} {record.get('reason', '')}", flush=True)
    if args.only:
        return 0
    runs_dir = out / "runs"
    base_path = runs_dir / "baseline.json"
    baseline = _load(base_path) if base_path.exists() else runner.not_verified("baseline", "no run record")
    runs = {n: _load(runs_dir / f"{n}.json") for n in names if (runs_dir / f"{n}.json").exists()}
    report = matrix.merge(baseline, runs, plan["environments"], plan["discovered"])
    atomic.write_text(out / "report.json", report_json.render(report))
    atomic.write_text(out / "report.md", report_matrix.markdown(report))
    atomic.write_text(out / "report.html", report_matrix.html_grid(report))
    for e in report["environments"]:
        print(f"optax-gate: {e['name']:24s} {e['verdict']:13s} {'; '.join(e['reasons'])}")
    print(f"optax-gate: matrix report — {out / 'report.md'}, {out / 'report.html'}")
    return 0 if baseline.get("status") == "ran" else 2


def compare_runs(args: argparse.Namespace) -> int:
    baseline, candidate = _load(args.baseline_run), _load(args.candidate_run)
    return write_reports(_beyond_contracts(compare.compare(baseline, candidate), baseline, candidate, args), args.out)


def _environment_options(p: argparse.ArgumentParser, out: str) -> None:
    p.add_argument("--baseline-lock", type=Path, default=Path("requirements-lock.txt"))
    p.add_argument("--requirements-in", type=Path, default=Path("requirements.in"))
    p.add_argument("--out", type=Path, default=Path(out))
    p.add_argument("--envs-dir", type=Path, default=Path(".nox/gate-envs"))
    p.add_argument("--python", default=sys.executable, help="interpreter to build environments with")
    p.add_argument("--project-root", type=Path, default=Path.cwd())
    p.add_argument("--timeout", type=float, default=1800, help="seconds for one pytest run")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="optax-gate", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    g = sub.add_parser("gate", help="run the contracts in the baseline and a candidate, write the report")
    g.add_argument("specs", nargs="*", help="candidate requirements, e.g. optax==0.2.8 jax==0.12.0.1 jaxlib==0.12.0.1")
    g.add_argument("--candidate-lock", type=Path, default=None, help="judge this lock file instead of SPECs")
    _environment_options(g, "reports/gate")
    _beyond_contracts_options(g)
    g.set_defaults(func=gate)
    m = sub.add_parser("matrix", help="every newer release of optax, jax/jaxlib and flax against the baseline")
    what = m.add_mutually_exclusive_group()
    what.add_argument("--plan", action="store_true", help="print the planned environments as JSON and stop")
    what.add_argument("--only", action="append", metavar="NAME", help="run only these environments (and 'baseline')")
    what.add_argument("--merge", action="store_true", help="combine the runs in OUT/runs into the report")
    m.add_argument("--include-older", action="store_true", help="also plan releases older than the baseline")
    _environment_options(m, "reports/matrix")
    m.set_defaults(func=run_matrix)
    c = sub.add_parser("compare", help="compare two run records and write the report")
    c.add_argument("baseline_run", type=Path)
    c.add_argument("candidate_run", type=Path)
    c.add_argument("--out", type=Path, default=Path("reports/gate"))
    _beyond_contracts_options(c)
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
