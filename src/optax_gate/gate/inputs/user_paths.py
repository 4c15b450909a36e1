"""The checks of the paths the user types (``--usage``) made before anything
runs. The paths themselves are read from where the user stands
(:mod:`optax_gate.gate.inputs.typed_path`).

:func:`check_usage` refuses a ``--usage`` path that does not exist, is a
dangling symlink or a loop, cannot be read, or is a file that is not ``.py``
/ ``.ipynb``; the gate then scans the paths (``optax_gate.gate.team_code.usage``).

``--usage`` takes one path per occurrence and is repeated
(``--usage src --usage notebooks``): SPECs after it stay SPECs.
:func:`refuse_paths_as_specs` refuses a SPEC that names an existing file or
folder and no package of the baseline (``--usage a b`` would take ``b`` as a
SPEC) with the hint ``did you mean --usage b?``.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Iterable
from pathlib import Path

from optax_gate.gate.inputs import requirements, usage_files, validate
from optax_gate.gate.inputs.typed_path import user_path
from optax_gate.gate.inputs.usage_files import SUFFIXES


def _looks_like_lock(path: Path) -> bool:
    """Whether a file reads like a hashed lock (a ``name==version`` line and a ``--hash=``)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")[:200_000]
    except OSError:
        return False
    return "--hash=" in text and re.search(r"^[A-Za-z0-9][\w.-]*\s*==", text, re.MULTILINE) is not None


def _link_problem(path: Path) -> str | None:
    if not path.is_symlink() or path.exists():
        return None
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "is a symlink loop"
    return f"is a dangling symlink (to {os.readlink(path)})"


def check_usage(paths: Iterable[Path] | None, option: str = "--usage") -> list[Path]:
    """Check each ``--usage`` path before anything runs; returns the paths
    (empty without ``--usage``). The team's code is then scanned
    (``optax_gate.gate.team_code.usage.scan``): files that cannot be scanned are listed
    in the scan, never a reason to stop. ``option``: the option the paths came from, as the refusal names it
    (``--run-dir``: the team's code taken from the folder of its run, no ``--usage`` given).

    Raises:
      validate.InvalidInput: a path that does not exist, is a dangling
        symlink or a symlink loop, cannot be read, or is a file that is not
        ``.py`` / ``.ipynb``.
    """
    paths = list(paths or [])
    for path in paths:
        link = _link_problem(path)
        if link:
            raise validate.InvalidInput(f"{option} {validate.shown(path)} {link}")
        if not path.exists():
            raise validate.InvalidInput(f"{option} {validate.shown(path)} does not exist")
        if not os.access(path, os.R_OK):
            raise validate.InvalidInput(f"{option} {validate.shown(path)} cannot be read (permission denied)")
        if path.is_file() and not path.name.endswith(SUFFIXES):
            raise validate.InvalidInput(f"{option} {validate.shown(path)} is not a .py or .ipynb file (nor a folder)")
        if path.is_dir() and not usage_files.holds_code(path):  # nothing scanned is no evidence: never a pass
            raise validate.InvalidInput(
                f"{option} {validate.shown(path)} holds no .py or .ipynb file (hidden folders, "
                f"{', '.join(usage_files.SKIPPED_FOLDERS)} are not looked into): name the folder of your code"
            )
    return paths


#: The tool's other commands, as a user starts them: a SPEC naming one was meant as that command.
COMMANDS = {
    "compare": "./noxw -s compare -- BASELINE.json CANDIDATE.json [--usage DIR]",
    "bisect": "./noxw -s bisect -- [DIR] --history optax=PATH",
    "matrix": "./noxw -s matrix",
}


def refuse_paths_as_specs(specs: Iterable[str], known: set[str]) -> None:
    """Refuse a SPEC that names an existing file or folder and is not a
    package of the baseline lock (``known``): most likely a second path after
    ``--usage``, which takes one.

    A SPEC that names another command of the tool (``compare``) or a run
    record (``….json``) is refused with that command's line.

    Raises:
      validate.InvalidInput: with the hint ``did you mean --usage PATH?``,
        or the other command's line.
    """
    for spec in specs:
        try:
            named = requirements.canonical_name(spec) in known
        except ValueError:
            named = False
        if not named and spec in COMMANDS:  # ./noxw -s gate -- compare A B: the command of its own was meant
            raise validate.InvalidInput(f"{spec!r} is a command of its own, not a requirement SPEC: {COMMANDS[spec]}")
        if not named and spec.endswith(".json") and user_path(spec).is_file():
            raise validate.InvalidInput(
                f"{spec!r} is a file, not a requirement SPEC: to re-judge two run records, {COMMANDS['compare']}"
            )
        if not named and user_path(spec).is_file() and _looks_like_lock(user_path(spec)):
            raise validate.InvalidInput(
                f"{spec!r} is a lock file, not a requirement SPEC: did you mean --candidate-lock {spec} (the "
                "candidate) "
                f"or --baseline-lock {spec} (your baseline)?"
            )
        if not named and user_path(spec).exists():
            raise validate.InvalidInput(
                f"{spec!r} is a file or folder, not a requirement SPEC: did you mean --usage {spec}? "
                "(--usage takes one path; repeat it for more: --usage src --usage notebooks)"
            )
