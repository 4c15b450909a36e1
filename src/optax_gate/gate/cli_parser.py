"""The command line's grammar: the argparse parser of each command with its own options (the shared option groups and
value types: ``cli_options``), and the parse that takes SPECs between options."""

from __future__ import annotations

import argparse
import difflib
from pathlib import Path

from optax_gate.gate import cli_options as options
from optax_gate.gate.bisect import command as bisect_command
from optax_gate.gate.compare_flow import compare_runs
from optax_gate.gate.gate_flow import gate
from optax_gate.gate.inputs.typed_path import project_default
from optax_gate.gate.matrix import plan as matrix
from optax_gate.gate.matrix_flow import run_matrix
from optax_gate.gate.rebaseline_flow import rebaseline

# Each command is wired to its flow here (set_defaults func): gate in gate_flow, compare in compare_flow,
# matrix in matrix_flow, rebaseline in rebaseline_flow, bisect in bisect/command.


def parser() -> argparse.ArgumentParser:
    """The command line's parser: one subcommand per command (gate, matrix, compare, bisect, rebaseline)."""
    p = argparse.ArgumentParser(
        prog="optax-gate", description=options.help(), formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest="command", required=True)
    g = sub.add_parser(
        "gate",
        help="run the contracts in the baseline and a candidate, write the report",
        description="Judge an upgrade:\n"
        + options.help("``gate [SPEC ...]``", "``matrix")
        + "\n"
        + options.help("Exit status (gate", "Exit status (matrix"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    g.add_argument(
        "specs",
        nargs="*",
        metavar="SPEC",
        help="a candidate requirement (PEP 508), e.g. optax==0.2.8 jax==0.12.0.1 jaxlib==0.12.0.1; only packages "
        "of the baseline lock unless --allow-extra",
    )
    g.add_argument(
        "--candidate-lock",
        type=options.path,
        default=None,
        metavar="FILE",
        help="judge this hash-pinned lock file instead of SPECs (what a bump pull request changes)",
    )
    g.add_argument(
        "--source",
        action="append",
        default=None,
        metavar="NAME=PATH_OR_URL[@REF]",
        help="build optax or flax from a git repository (a local checkout or bare repository, or a URL) at REF "
        "(default: HEAD, a remote's default branch) and judge that wheel; repeatable; the same as the SPEC "
        "'optax @ git+URL@REF' or, for a local checkout's HEAD, 'optax @ file:///PATH'. jax and jaxlib are "
        "compiled and are refused",
    )
    g.add_argument("--allow-extra", action="store_true", help="let SPECs add packages the baseline does not require")
    g.add_argument(
        "--sequential",
        dest="concurrent",
        action="store_false",
        help="run the baseline's and the candidate's contracts one after the other (default: at the same time when "
        "both need a run)",
    )
    g.add_argument(
        "--contracts",
        action="append",
        type=options.path,
        default=None,
        metavar="DIR",
        help="a folder of the team's own contract modules (test_*.py, labelled as in tests/contracts/team/), run "
        "beside ours in both environments; repeat it for more",
    )
    g.add_argument(
        "--run",
        default=None,
        metavar="CMD",
        help='the team\'s own command (e.g. "python train.py --steps 3" or "pytest tests"), run with bash in '
        "--run-dir in the baseline (twice) and the candidate, the team's Optax calls traced: the verdict "
        "is about the team's run, its first divergence named at its line (docs/team-run.md)",
    )
    g.add_argument(
        "--run-dir",
        type=options.path,
        default=None,
        metavar="DIR",
        help="the team's folder, where --run runs (importable, with its src/ if any; default: the current folder)",
    )
    g.add_argument(
        "--run-timeout",
        type=options.seconds,
        default=1800,
        metavar="SECONDS",
        help="time limit of one run of --run (default: %(default)s)",
    )
    g.add_argument(
        "--exact",
        action="store_true",
        help="judge --run by the ULP budget alone, without the ensemble of perturbed baseline runs that tells your "
        "run's own rounding noise from a change (for teams that check digests of their params)",
    )
    g.add_argument(
        "--keep",
        type=options.count,
        default=10,
        metavar="N",
        help="runs that judged both sides kept under OUT/runs, at least 1; a run refused or stopped before both sides "
        "ran does not count (only the newest such run is kept, OUT/not-judged.md) (default: %(default)s)",
    )
    options.environment_options(g, "reports/gate")
    options.beyond_contracts_options(g)
    options.speed_options(g)
    g.add_argument(
        "--bisect",
        action="store_true",
        help="after the report is complete, name the optax/flax commit that changed each broken, changed or "
        "fixed finding (builds commits from source; see --history)",
    )
    options.bisect_options(g)
    g.add_argument(
        "--upstream-tests",
        action="store_true",
        help="also run optax's own shipped tests of the modules that differ across: the baseline's in the candidate "
        "environment and the candidate's in the baseline's (findings listed, the verdict unchanged; "
        "docs/upstream-tests.md)",
    )
    g.set_defaults(func=gate)
    m = sub.add_parser(
        "matrix",
        help="every newer release of optax, jax/jaxlib and flax against the baseline",
        description="The release matrix:\n"
        + options.help("``matrix", "``compare")
        + "\n"
        + options.help("Exit status (matrix"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    what = m.add_mutually_exclusive_group()
    what.add_argument("--plan", action="store_true", help="print the planned environments as JSON and stop")
    what.add_argument("--only", action="append", metavar="NAME", help="run only these environments (and 'baseline')")
    what.add_argument("--merge", action="store_true", help="combine the runs in OUT/runs into the report")
    m.add_argument("--include-older", action="store_true", help="also plan releases older than the baseline")
    m.add_argument(
        "--upstream",
        action="store_true",
        help="also plan optax-main and flax-main: each package built from its public repository's default branch "
        "(unreleased), the rest at baseline",
    )
    m.add_argument(
        "--fail-on",
        choices=matrix.FAIL_ON,
        default=None,
        help="for scheduled jobs (with a full run or --merge): exit 1 when an environment has a broken contract "
        "(broken) or any contract that differs (changed); else 2 when an environment is not verified",
    )
    m.add_argument(
        "--upstream-tests",
        action="store_true",
        help="in each candidate environment that ran its contracts, also cross-run optax's own shipped tests "
        "against the baseline's environment (with --merge: expect it in every such run record); its counts "
        "and findings are shown per environment, the verdicts unchanged; one that cannot run leaves its "
        "environment not verified (docs/upstream-tests.md)",
    )
    m.add_argument(
        "--heartbeat",
        type=options.seconds,
        default=25.0,
        metavar="SECONDS",
        help="longest silence on the console while an environment runs (default: %(default)s)",
    )
    options.environment_options(m, "reports/matrix")
    options.speed_options(m)
    m.set_defaults(func=run_matrix)
    c = sub.add_parser(
        "compare",
        help="compare two run records and write the report",
        description="Compare two runs:\n"
        + options.help("``compare", "``bisect")
        + "\n"
        + options.help("Exit status (gate", "Exit status (matrix"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument("baseline_run", type=options.path, help="the baseline's run record (JSON)")
    c.add_argument("candidate_run", type=options.path, help="the candidate's run record (JSON)")
    c.add_argument(
        "--out",
        type=options.path,
        default=project_default("reports/compare"),
        metavar="DIR",
        help="output folder, never a gate's own (default: %(default)s)",
    )
    c.add_argument(
        "--team-run",
        type=options.path,
        default=None,
        metavar="REPORT",
        help="re-use the team run (--run) of the gate that recorded these run records: its report.json, "
        "or its run folder; the verdict is then about that run, as the gate's was (compare runs no code)",
    )
    options.beyond_contracts_options(c)
    c.set_defaults(func=compare_runs)
    b = sub.add_parser(
        "bisect",
        help="name the commit behind each finding of an existing gate report",
        description="Bisect a report:\n" + options.help("``bisect", "Exit status (gate"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    b.add_argument(
        "report",
        nargs="?",
        type=options.path,
        default=project_default("reports/gate"),
        metavar="DIR",
        help="a gate output folder (its latest run that judged both sides) or run folder (default: %(default)s)",
    )
    b.add_argument(
        "--baseline-lock",
        type=options.path,
        default=Path("requirements-lock.txt"),
        metavar="FILE",
        help="the baseline's lock, for --bisect-env baseline (default: %(default)s)",
    )
    options.one_environment_options(b, "the candidate's environment")
    options.bisect_options(b)
    b.set_defaults(func=bisect_command.command)
    r = sub.add_parser(
        "rebaseline",
        help="run the contracts at another baseline and accept what it does into the ledger",
        description="Rebaseline:\n" + options.help("``rebaseline", "Exit status (gate"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    r.add_argument(
        "lock",
        type=options.path,
        metavar="LOCK",
        help="the other baseline's hash-pinned lock (uv pip compile --generate-hashes)",
    )
    r.add_argument(
        "--move",
        action="store_true",
        help="make LOCK the pinned baseline too: copied over requirements-lock.txt, the snapshot files re-recorded "
        "in place",
    )
    r.add_argument(
        "--out",
        type=options.path,
        default=project_default("reports/rebaseline"),
        metavar="DIR",
        help="where the run's evidence and summary.md go (default: %(default)s)",
    )
    r.add_argument(
        "--cache-dir",
        type=options.path,
        default=Path(".nox/gate-cache"),
        metavar="DIR",
        help="the gate's cache folder, for the shared compilation cache (default: %(default)s)",
    )
    options.one_environment_options(r, "LOCK's environment")
    r.set_defaults(func=rebaseline, baseline_lock=Path("requirements-lock.txt"))
    return p


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line's arguments; the gate's SPECs may sit between options
    (``--usage src optax==0.2.8 --usage nb jax==0.12.0.1``: argparse alone
    takes one run of them). Exits 2 on an unknown option."""
    p = parser()
    args, rest = p.parse_known_args(argv)
    if rest and args.command == "gate" and not any(r.startswith("-") for r in rest):
        args.specs += rest
    elif rest:  # the command's own usage (``optax-gate gate [-h] ...``), with a close option named where there is one
        sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction)).choices[args.command]
        known = [o for a in sub._actions for o in a.option_strings]
        near = difflib.get_close_matches(next((r.split("=")[0] for r in rest if r.startswith("-")), ""), known, n=1)
        command = getattr(args, "run", None)
        if command and not any(c.isspace() for c in command.strip()):  # --run python train.py --steps 3, unquoted
            sub.error(
                f"unrecognized arguments: {' '.join(rest)} (--run takes the whole command as one argument: "
                f'quote it, --run "{command} ...")'
            )
        sub.error(f"unrecognized arguments: {' '.join(rest)}" + (f" (did you mean {near[0]}?)" if near else ""))
    return args
