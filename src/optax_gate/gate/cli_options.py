"""The command line's shared parts: the argparse ``type`` of each option value (a path, a number above a bound) and
the option groups several commands take (environments, speed, beyond the contracts, bisection), with the help text
they draw on."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path

from optax_gate.gate import cli_help
from optax_gate.gate.inputs.typed_path import project_default, user_path
from optax_gate.gate.speed import readings
from optax_gate.gate.team_code import scope


def at_least[Number: (int, float)](
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


def path(text: str) -> Path:
    """An argparse ``type``: a path as the user typed it (``typed_path.user_path``); an empty one is
    refused (``--usage ""`` would scan the current folder)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return user_path(text)


seconds = at_least(float, 0, True, "a number of seconds greater than 0")
count = at_least(int, 1, False, "at least 1")
ratio = at_least(float, 0, True, "a positive ratio")
rounds = at_least(int, 2, False, "at least 2")


def speed_options(p: argparse.ArgumentParser) -> None:
    """Add ``--speed``, ``--speed-budget`` and ``--speed-rounds`` to ``p``."""
    p.add_argument(
        "--speed",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="time three training steps in both environments, interleaved (default: on; 18 compilations, about 20 "
        "s on an idle 2-core machine)",
    )
    p.add_argument(
        "--speed-budget",
        type=ratio,
        default=None,
        metavar="RATIO",
        help="a training step slower than RATIO x the baseline's (beyond noise) is broken (default: never)",
    )
    p.add_argument(
        "--speed-rounds",
        type=rounds,
        default=readings.ROUNDS,
        metavar="N",
        help="compile rounds of the speed readings, at least 2 (default: %(default)s)",
    )


def beyond_contracts_options(p: argparse.ArgumentParser) -> None:
    """Add the options that scope the findings (``--usage``, ``--fail-on``, ``--fail-on-new-deprecations``) to ``p``."""
    p.add_argument(
        "--usage",
        action="append",
        type=path,
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


def environment_options(p: argparse.ArgumentParser, out: str) -> None:
    """Add the options of the environments (locks, interpreter, where they are built) and ``--out`` (default
    ``out``) to ``p``."""
    p.add_argument(
        "--baseline-lock",
        type=path,
        default=Path("requirements-lock.txt"),
        metavar="FILE",
        help="hash-pinned lock of the baseline (default: %(default)s)",
    )
    p.add_argument(
        "--requirements-in",
        type=path,
        default=Path("requirements.in"),
        metavar="FILE",
        help="the baseline's direct requirements, which SPECs replace (default: %(default)s)",
    )
    p.add_argument(
        "--out", type=path, default=project_default(out), metavar="DIR", help="output folder (default: %(default)s)"
    )
    p.add_argument(
        "--envs-dir",
        type=path,
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
        type=path,
        default=Path.cwd(),
        metavar="DIR",
        help="the project folder holding tests/contracts (default: the current folder)",
    )
    p.add_argument(
        "--timeout",
        type=seconds,
        default=3600,
        metavar="SECONDS",
        help="time limit of one pytest run (default: %(default)s; a first gate runs about 4,700 contracts a side, "
        "30 min and more on a loaded 2-core machine)",
    )
    p.add_argument(
        "--no-cache",
        dest="baseline_cache",
        action="store_false",
        help="run both sides' contracts and time their steps even when the results are cached (the new results "
        "replace the entries)",
    )
    p.add_argument(
        "--all-modules",
        dest="select_modules",
        action="store_false",
        help="run every contract module of a candidate, also those that execute no function it changed (default: "
        "those take the baseline's outcomes)",
    )
    p.add_argument(
        "--cache-dir",
        type=path,
        default=Path(".nox/gate-cache"),
        metavar="DIR",
        help="where contract results (per module, every side) and speed readings are cached, content-addressed "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--no-compilation-cache",
        dest="compilation_cache",
        action="store_false",
        help="compile every program afresh (default: JAX's persistent compilation cache, one per environment; also "
        "off with OPTAX_GATE_COMPILATION_CACHE=0)",
    )


def bisect_options(p: argparse.ArgumentParser) -> None:
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
        type=path,
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
        type=seconds,
        default=600,
        metavar="SECONDS",
        help="time limit of one build, import check or contract run of a bisection step (default: %(default)s)",
    )


def one_environment_options(p: argparse.ArgumentParser, which: str) -> None:
    """``--envs-dir``, ``--python``, ``--project-root``, ``--no-compilation-cache`` of a command that builds one
    environment."""
    p.add_argument(
        "--envs-dir",
        type=path,
        default=Path(".nox/gate-envs"),
        metavar="DIR",
        help=f"where {which} is built or reused (default: %(default)s)",
    )
    p.add_argument(
        "--python", default=sys.executable, help="Python 3.12 interpreter to build it with (default: this one)"
    )
    p.add_argument(
        "--project-root",
        type=path,
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


def help(start: str = "", end: str | None = None) -> str:
    """The part of the help text (:data:`cli_help.TEXT`) from ``start`` up to ``end``, as plain
    help text (reST's double backticks dropped)."""
    text = cli_help.TEXT[cli_help.TEXT.index(start) :]
    text = text[: text.index(end)] if end else text
    return text.replace("``", "")
