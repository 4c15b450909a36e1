"""The matrix flow (``python -m optax_gate matrix``): plan the environments
(``optax_gate.gate.matrix.plan``), run each one's side (``optax_gate.gate.sides``)
into ``runs/`` with a heartbeat on the console, merge the runs into the grid
and write ``report.md``, ``report.json`` and ``report.html``."""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

from optax_gate.gate.base import atomic, model
from optax_gate.gate.base.heartbeat import Heartbeat
from optax_gate.gate.diffs import unseen
from optax_gate.gate.gate_flow import Started, fail
from optax_gate.gate.inputs.options import EnvironmentOptions, MatrixOptions
from optax_gate.gate.install import compilation_cache, environments
from optax_gate.gate.matrix import plan as matrix
from optax_gate.gate.report import json_file as report_json
from optax_gate.gate.report import matrix_page as report_matrix
from optax_gate.gate.run import runner
from optax_gate.gate.sides import load, run_lock, save_run
from optax_gate.gate.sides_prepare import (
    Folders,
    bound_compilation_cache,
    configured_packages,
    requirements_in,
    results_dir,
)
from optax_gate.gate.sides_resolve import run_specs
from optax_gate.gate.sides_speed import measure_speed
from optax_gate.gate.upstream import pytest_run, upstream_tests


def run_matrix(options: MatrixOptions, started: Started | None = None) -> int:
    """``python -m optax_gate matrix``: 0 after ``--plan`` or ``--only``; else the merged report's exit status."""
    out, env = options.out, options.environment
    plan_path = out / "plan.json"
    if options.fail_on and not options.merge and (options.only or options.plan_only):
        return fail("--fail-on judges the merged report: give it to a full run or to --merge, not to --plan or --only")
    if options.merge or (options.only and plan_path.exists()):
        # Merge, and runners fanned out by CI, use the plan already made: every
        # runner sees the same environments even if a release appears meanwhile.
        if not plan_path.exists():
            print(f"optax-gate: no {plan_path}; run the plan first (--plan or a full matrix run)", file=sys.stderr)
            return 2
        plan = json.loads(plan_path.read_text(encoding="utf-8"))
    else:
        envs, discovered = matrix.plan(
            requirements_in(env).read_text(encoding="utf-8"),
            include_older=options.include_older,
            upstream=options.upstream,
        )
        plan = {"discovered": discovered, "environments": [e.to_json() for e in envs]}
        atomic.write_text(plan_path, json.dumps(plan, indent=2) + "\n")
        if options.plan_only:
            print(json.dumps(plan, indent=2))
            return 0
    names = {e["name"]: e for e in plan["environments"]}
    wanted = list(options.only) or ([] if options.merge else ["baseline", *names])
    unknown = [n for n in wanted if n != "baseline" and n not in names]
    if unknown:
        print(f"optax-gate: not in the plan: {unknown}; planned: {sorted(names)}", file=sys.stderr)
        return 2
    folders = Folders(out / "runs", out / "checkpoints")
    bound_compilation_cache(env, print)
    with Heartbeat(options.heartbeat) as say:  # a line at least every --heartbeat seconds while an environment runs
        for i, name in enumerate(wanted, 1):
            say(f"{name}: environment {i} of {len(wanted)}")
            if name == "baseline":
                record = run_lock(
                    "baseline", env.baseline_lock, env, folders, say, requirements=[f"lock file {env.baseline_lock}"]
                )
            else:
                say(f"{name}: resolving {' '.join(names[name]['specs'])}")
                record = run_specs(name, list(names[name]["specs"]), out / "locks" / f"{name}.txt", env, folders, say)
                record = record.with_fields(
                    speed=measure_speed(env, options.speed, out / "locks" / f"{name}.txt", record, say)
                )
                if options.upstream_tests and record.ran:
                    record = record.with_fields(upstream_tests=cross_run(name, out / "locks" / f"{name}.txt", env, say))
            save_run(record, out / "runs")
            say.idle()
            cached = record.fields.get("from_cache")
            origin = (
                f" — baseline taken from the cache ({cached['key']}, recorded {cached['recorded']})" if cached else ""
            )
            print(f"optax-gate: {name}: {record.status} {record.reason or ''}{origin}", flush=True)
    if options.only:
        return 0
    runs_dir = out / "runs"
    base_path = runs_dir / "baseline.json"
    baseline = load(base_path) if base_path.exists() else runner.not_verified("baseline", "no run record")
    runs = {n: load(runs_dir / f"{n}.json") for n in names if (runs_dir / f"{n}.json").exists()}
    packages = configured_packages(env.project_root)
    report = matrix.merge(baseline, runs, plan, packages=packages, upstream_tests=options.upstream_tests)
    report["exit"] = matrix.exit_status(report, options.fail_on)
    atomic.write_text(out / "report.json", report_json.render(report))
    atomic.write_text(out / "report.md", report_matrix.markdown(report))
    atomic.write_text(out / "report.html", report_matrix.html_grid(report))
    for e in report["environments"]:
        print(f"optax-gate: {e['name']:24s} {e['verdict']:13s} {'; '.join(e['reasons'])}")
    print(f"optax-gate: matrix report — {out / 'report.md'}, {out / 'report.html'}")
    print(f"optax-gate: {matrix.exit_words(report['exit'])}")
    status: int = report["exit"]["status"]
    return status


def cross_run(
    name: str, lock: Path, env: EnvironmentOptions, say: Callable[[str], None]
) -> model.UpstreamTests | dict[str, str]:
    """``--upstream-tests``: optax's own shipped tests of the modules that
    differ, cross-run between the baseline's environment (built or reused
    here, as the speed readings do) and the environment ``name`` of ``lock``
    (``optax_gate.gate.upstream.upstream_tests.cross_run``); its section for the run
    record. One that cannot run (an environment not built, no site-packages,
    a crash of the cross-run) gives ``{"error": "Type: message"}``: the merge
    then reports the environment not verified (``matrix.upstream_row``)."""
    try:
        pythons, sites, jax_env = {}, {}, {}
        for side, side_lock in (("baseline", env.baseline_lock), ("candidate", lock)):
            folder = environments.folder_for(env.envs_dir, side_lock)
            pythons[side] = environments.ensure(folder, side_lock, env.python, env.project_root)
            site = unseen.site_packages(pythons[side])
            if site is None:
                raise pytest_run.CrossRunFailure(f"the {side}'s site-packages cannot be found")
            sites[side] = Path(site)
            jax_env[side] = compilation_cache.environment(
                compilation_cache.shared(env.cache_dir, env.envs_dir), env.compilation_cache
            )
        say(f"{name}: upstream tests: cross-running optax's shipped tests of the modules that differ")
        return upstream_tests.cross_run(
            sites, pythons, upstream_tests.CrossRunOptions(results_dir(env), env.timeout, jax_env), say=say
        )
    except Exception as exc:  # fail closed: recorded, the environment then not verified; the contract results kept
        traceback.print_exc()
        print(
            f"optax-gate: {name}: the upstream tests cross-run could not run: {type(exc).__name__}: {exc}",
            file=sys.stderr,
        )
        return {"error": f"{type(exc).__name__}: {exc}"}
