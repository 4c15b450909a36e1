"""The command line's grammar: the argparse parser of each command, its argument types, and the parse that takes SPECs between options."""

from __future__ import annotations

import argparse
import difflib
import math
import sys
from collections.abc import Callable
from pathlib import Path

from optax_gate.gate import cli_help
from optax_gate.gate.bisect import command as bisect_command
from optax_gate.gate.compare_flow import compare_runs
from optax_gate.gate.gate_flow import gate
from optax_gate.gate.inputs.typed_path import project_default, user_path
from optax_gate.gate.matrix import plan as matrix
from optax_gate.gate.matrix_flow import run_matrix
from optax_gate.gate.rebaseline_flow import rebaseline
from optax_gate.gate.speed import readings
from optax_gate.gate.team_code import scope

# Each command is wired to its flow here (set_defaults func): gate in gate_flow, compare in compare_flow,
# matrix in matrix_flow, rebaseline in rebaseline_flow, bisect in bisect/command.


#: What an argparse ``type`` of :func:`_at_least` gives.
def _at_least[Number: (int, float)](
    convert: Callable[[str], Number], minimum: float, strict: bool, words: str
) -> Callable[[str], Number]:
    """An argparse ``type``: ``convert(text)`` when it is above ``minimum``
    (``strict``) or at least ``minimum``; NaN is refused either way."""

    def check(text: str) -> Number:
        try:
            value = convert(text)
        except ValueError:  # argparse would name this function ("invalid check value")
            raise argparse.ArgumentTypeError(f"must be {words}, got {text}") from None
        if not math.isfinite(value) or not (value > minimum if strict else value >= minimum):
            raise argparse.ArgumentTypeError(f"must be {words}, got {text}")
        return value

    return check


def _path(text: str) -> Path:
    """An argparse ``type``: a path as the user typed it (``typed_path.user_path``); an empty one is
    refused (``--usage ""`` would scan the current folder)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return user_path(text)


_seconds = _at_least(float, 0, True, "a number of seconds greater than 0")
_count = _at_least(int, 1, False, "at least 1")
_ratio = _at_least(float, 0, True, "a positive ratio")
_rounds = _at_least(int, 2, False, "at least 2")


def _speed_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--speed",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="time three training steps in both environments, interleaved (default: on; 18 compilations, about 20 s on an idle 2-core machine)",
    )
    p.add_argument(
        "--speed-budget",
        type=_ratio,
        default=None,
        metavar="RATIO",
        help="a training step slower than RATIO x the baseline's (beyond noise) is broken (default: never)",
    )
    p.add_argument(
        "--speed-rounds",
        type=_rounds,
        default=readings.ROUNDS,
        metavar="N",
        help="compile rounds of the speed readings, at least 2 (default: %(default)s)",
    )


def _beyond_contracts_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--usage",
        action="append",
        type=_path,
        default=None,
        metavar="PATH",
        help="the team's code (.py, .ipynb, or a folder of them): scope the API surface and dependency diffs "
        "to what it uses and name its call sites on every finding; one path each, repeat it for more "
        "(--usage src --usage notebooks); files that cannot be scanned are listed in the report",
    )
    p.add_argument(
        "--fail-on",
        choices=scope.FAIL_ON,
        default="broken",
        help="broken (default): a broken finding fails the gate when it is the team's (with --usage: on APIs "
        "its code reaches and not ruled out by its calls' literal arguments); the others are listed under "
        "'Optax changed elsewhere'. all: every broken finding fails the gate, whatever its scope",
    )
    p.add_argument(
        "--fail-on-new-deprecations",
        action="store_true",
        help="a deprecation warning new in the candidate is broken (for code run with -W error)",
    )


def _environment_options(p: argparse.ArgumentParser, out: str) -> None:
    p.add_argument(
        "--baseline-lock",
        type=_path,
        default=Path("requirements-lock.txt"),
        metavar="FILE",
        help="hash-pinned lock of the baseline (default: %(default)s)",
    )
    p.add_argument(
        "--requirements-in",
        type=_path,
        default=Path("requirements.in"),
        metavar="FILE",
        help="the baseline's direct requirements, which SPECs replace (default: %(default)s)",
    )
    p.add_argument(
        "--out", type=_path, default=project_default(out), metavar="DIR", help="output folder (default: %(default)s)"
    )
    p.add_argument(
        "--envs-dir",
        type=_path,
        default=Path(".nox/gate-envs"),
        metavar="DIR",
        help="where environments are built and reused, one per lock content (default: %(default)s)",
    )
    p.add_argument(
        "--python",
        default=sys.executable,
        help="Python 3.12 interpreter to build environments with (default: this one)",
    )
    p.add_argument(
        "--project-root",
        type=_path,
        default=Path.cwd(),
        metavar="DIR",
        help="the project folder holding tests/contracts (default: the current folder)",
    )
    p.add_argument(
        "--timeout",
        type=_seconds,
        default=3600,
        metavar="SECONDS",
        help="time limit of one pytest run (default: %(default)s; a first gate runs about 4,700 contracts a side, 30 min and more on a loaded 2-core machine)",
    )
    p.add_argument(
        "--no-cache",
        dest="baseline_cache",
        action="store_false",
        help="run both sides' contracts and time their steps even when the results are cached (the new results replace the entries)",
    )
    p.add_argument(
        "--all-modules",
        dest="select_modules",
        action="store_false",
        help="run every contract module of a candidate, also those that execute no function it changed (default: those take the baseline's outcomes)",
    )
    p.add_argument(
        "--cache-dir",
        type=_path,
        default=Path(".nox/gate-cache"),
        metavar="DIR",
        help="where contract results (per module, every side) and speed readings are cached, content-addressed (default: %(default)s)",
    )
    p.add_argument(
        "--no-compilation-cache",
        dest="compilation_cache",
        action="store_false",
        help="compile every program afresh (default: JAX's persistent compilation cache, one per environment; also off with OPTAX_GATE_COMPILATION_CACHE=0)",
    )


def _bisect_options(p: argparse.ArgumentParser) -> None:
    """``--history``, ``--bisect-cache``, ``--bisect-timeout`` (``gate --bisect`` and ``bisect``)."""
    p.add_argument(
        "--history",
        action="append",
        default=None,
        metavar="PACKAGE=PATH_OR_URL",
        help="where a pure-Python package's git history is read for the bisection (a local repository or a URL; "
        "default: its public repository); one each, e.g. --history optax=../optax",
    )
    p.add_argument(
        "--bisect-cache",
        type=_path,
        default=Path(".nox/gate-cache/bisect"),
        metavar="DIR",
        help="wheels built per commit SHA, their installs and cloned histories (default: %(default)s)",
    )
    p.add_argument(
        "--bisect-env",
        choices=("candidate", "baseline"),
        default="candidate",
        help="whose environment the commits are installed into: the candidate's (default), or the baseline's, "
        "where the package is the only thing that moves (for commits that need another version of jax "
        "than the candidate's)",
    )
    p.add_argument(
        "--bisect-timeout",
        type=_seconds,
        default=600,
        metavar="SECONDS",
        help="time limit of one build, import check or contract run of a bisection step (default: %(default)s)",
    )


def _one_environment_options(p: argparse.ArgumentParser, which: str) -> None:
    """``--envs-dir``, ``--python``, ``--project-root``, ``--no-compilation-cache`` of a command that builds one environment."""
    p.add_argument(
        "--envs-dir",
        type=_path,
        default=Path(".nox/gate-envs"),
        metavar="DIR",
        help=f"where {which} is built or reused (default: %(default)s)",
    )
    p.add_argument(
        "--python", default=sys.executable, help="Python 3.12 interpreter to build it with (default: this one)"
    )
    p.add_argument(
        "--project-root",
        type=_path,
        default=Path.cwd(),
        metavar="DIR",
        help="the project folder holding tests/contracts (default: the current folder)",
    )
    p.add_argument(
        "--no-compilation-cache",
        dest="compilation_cache",
        action="store_false",
        help="compile every program afresh (default: JAX's persistent compilation cache, shared)",
    )


def _help(start: str = "", end: str | None = None) -> str:
    """The part of the help text (:data:`cli_help.TEXT`) from ``start`` up to ``end``, as plain
    help text (reST's double backticks dropped)."""
    text = cli_help.TEXT[cli_help.TEXT.index(start) :]
    text = text[: text.index(end)] if end else text
    return text.replace("``", "")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="optax-gate", description=_help(), formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest="command", required=True)
    g = sub.add_parser(
        "gate",
        help="run the contracts in the baseline and a candidate, write the report",
        description="Judge an upgrade:\n"
        + _help("``gate [SPEC ...]``", "``matrix")
        + "\n"
        + _help("Exit status (gate", "Exit status (matrix"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    g.add_argument(
        "specs",
        nargs="*",
        metavar="SPEC",
        help="a candidate requirement (PEP 508), e.g. optax==0.2.8 jax==0.12.0.1 jaxlib==0.12.0.1; only packages of the baseline lock unless --allow-extra",
    )
    g.add_argument(
        "--candidate-lock",
        type=_path,
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
        help="run the baseline's and the candidate's contracts one after the other (default: at the same time when both need a run)",
    )
    g.add_argument(
        "--contracts",
        action="append",
        type=_path,
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
        type=_path,
        default=None,
        metavar="DIR",
        help="the team's folder, where --run runs (importable, with its src/ if any; default: the current folder)",
    )
    g.add_argument(
        "--run-timeout",
        type=_seconds,
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
        type=_count,
        default=10,
        metavar="N",
        help="runs that judged both sides kept under OUT/runs, at least 1; a run refused or stopped before both sides "
        "ran does not count (only the newest such run is kept, OUT/not-judged.md) (default: %(default)s)",
    )
    _environment_options(g, "reports/gate")
    _beyond_contracts_options(g)
    _speed_options(g)
    g.add_argument(
        "--bisect",
        action="store_true",
        help="after the report is complete, name the optax/flax commit that changed each broken, changed or "
        "fixed finding (builds commits from source; see --history)",
    )
    _bisect_options(g)
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
        description="The release matrix:\n" + _help("``matrix", "``compare") + "\n" + _help("Exit status (matrix"),
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
        help="also plan optax-main and flax-main: each package built from its public repository's default branch (unreleased), the rest at baseline",
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
        type=_seconds,
        default=25.0,
        metavar="SECONDS",
        help="longest silence on the console while an environment runs (default: %(default)s)",
    )
    _environment_options(m, "reports/matrix")
    _speed_options(m)
    m.set_defaults(func=run_matrix)
    c = sub.add_parser(
        "compare",
        help="compare two run records and write the report",
        description="Compare two runs:\n"
        + _help("``compare", "``bisect")
        + "\n"
        + _help("Exit status (gate", "Exit status (matrix"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument("baseline_run", type=_path, help="the baseline's run record (JSON)")
    c.add_argument("candidate_run", type=_path, help="the candidate's run record (JSON)")
    c.add_argument(
        "--out",
        type=_path,
        default=project_default("reports/compare"),
        metavar="DIR",
        help="output folder, never a gate's own (default: %(default)s)",
    )
    c.add_argument(
        "--team-run",
        type=_path,
        default=None,
        metavar="REPORT",
        help="re-use the team run (--run) of the gate that recorded these run records: its report.json, "
        "or its run folder; the verdict is then about that run, as the gate's was (compare runs no code)",
    )
    _beyond_contracts_options(c)
    c.set_defaults(func=compare_runs)
    b = sub.add_parser(
        "bisect",
        help="name the commit behind each finding of an existing gate report",
        description="Bisect a report:\n" + _help("``bisect", "Exit status (gate"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    b.add_argument(
        "report",
        nargs="?",
        type=_path,
        default=project_default("reports/gate"),
        metavar="DIR",
        help="a gate output folder (its latest run that judged both sides) or run folder (default: %(default)s)",
    )
    b.add_argument(
        "--baseline-lock",
        type=_path,
        default=Path("requirements-lock.txt"),
        metavar="FILE",
        help="the baseline's lock, for --bisect-env baseline (default: %(default)s)",
    )
    _one_environment_options(b, "the candidate's environment")
    _bisect_options(b)
    b.set_defaults(func=bisect_command.command)
    r = sub.add_parser(
        "rebaseline",
        help="run the contracts at another baseline and accept what it does into the ledger",
        description="Rebaseline:\n" + _help("``rebaseline", "Exit status (gate"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    r.add_argument(
        "lock",
        type=_path,
        metavar="LOCK",
        help="the other baseline's hash-pinned lock (uv pip compile --generate-hashes)",
    )
    r.add_argument(
        "--move",
        action="store_true",
        help="make LOCK the pinned baseline too: copied over requirements-lock.txt, the snapshot files re-recorded in place",
    )
    r.add_argument(
        "--out",
        type=_path,
        default=project_default("reports/rebaseline"),
        metavar="DIR",
        help="where the run's evidence and summary.md go (default: %(default)s)",
    )
    r.add_argument(
        "--cache-dir",
        type=_path,
        default=Path(".nox/gate-cache"),
        metavar="DIR",
        help="the gate's cache folder, for the shared compilation cache (default: %(default)s)",
    )
    _one_environment_options(r, "LOCK's environment")
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
                f'unrecognized arguments: {" ".join(rest)} (--run takes the whole command as one argument: quote it, --run "{command} ...")'
            )
        sub.error(f"unrecognized arguments: {' '.join(rest)}" + (f" (did you mean {near[0]}?)" if near else ""))
    return args
