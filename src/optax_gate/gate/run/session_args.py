"""Reading the arguments a user passes to ``./noxw -s tests -- ARGS``, and
what the session's pytest processes selected. No JAX: the noxfile imports it.

The session runs two pytest processes (the single-device contracts and the
suite's own tests, split over pytest-xdist; then the multi-device contracts
with eight simulated devices, ``optax_gate.gate.run.devices``): paths go to the
process they belong to, options to both.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

from optax_gate.gate.run.devices import MULTIDEVICE_DIR as MULTIDEVICE


def _exists(arg: str) -> bool:
    """Whether the file or folder part of a path argument (before ``::``) exists."""
    return Path(arg.split("::")[0]).exists()


def _read_one(arg: str, user: Path, project: Path) -> str:
    """One test path (``file`` or ``file::test``) read from ``user``, else
    from ``project`` (see :func:`read_paths`); others unchanged."""
    file, sep, node = arg.partition("::")
    if not file or Path(file).is_absolute():
        return arg
    mine = Path(os.path.normpath(user / file))
    if not mine.exists():  # not from where the user stands: the project folder's meaning, if it names something
        return arg
    try:
        shown = mine.relative_to(project).as_posix() or "."
    except ValueError:
        shown = str(mine)
    return shown + sep + node


def read_paths(args: list[str], user: str | Path | None, project: Path) -> list[str]:
    """``args`` with each test path read as the gate reads its paths: from the
    folder the user ran ``./noxw`` from (``user``, ``$NOXW_INVOKED_FROM``),
    written relative to ``project`` (pytest runs there) or absolute outside
    it; a path that names nothing from there keeps the project folder's
    meaning (what it meant before, and what it means from the project folder
    itself). Options and their values (``-k EXPR``) are left as they are."""
    if not user:
        return list(args)
    user, project = Path(user).resolve(), Path(project).resolve()
    out, after_option = [], False
    for a in args:
        out.append(a if a.startswith("-") or after_option else _read_one(a, user, project))
        after_option = a in VALUE_OPTIONS
    return out


def missing_paths(args: list[str]) -> list[str]:
    """Arguments that look like test paths (``tests/...``, ``*.py``, ``::``)
    but name nothing on disk; the value of an option (``-k EXPR``) is not one."""
    missing, after_option = [], False
    for a in args:
        looks_like_path = not a.startswith("-") and ("/" in a or "::" in a or a.endswith(".py"))
        if looks_like_path and not after_option and not _exists(a):
            missing.append(a)
        after_option = a in VALUE_OPTIONS
    return missing


#: pytest options whose value is the next argument (it is never taken for a path).
VALUE_OPTIONS = {
    "-k",
    "-m",
    "-p",
    "-n",
    "--dist",
    "-c",
    "-o",
    "--rootdir",
    "--basetemp",
    "--deselect",
    "--ignore",
    "--ignore-glob",
    "--confcutdir",
    "--junitxml",
    "--report-log",
    "--maxfail",
    "--timeout",
    "--hypothesis-profile",
    "--hypothesis-seed",
    "-W",
    "--durations",
    "--tb",
}


def split_multidevice(args: list[str]) -> tuple[list[str], list[str] | None]:
    """Pytest arguments of the single-device process and of the multi-device
    one (None: no second process). Without a path among ``args`` both run,
    with the same options; with paths, the paths inside ``MULTIDEVICE`` go to
    the second process, the others to the first, and a path above it (``tests``,
    ``tests/contracts``) starts the second process on the whole folder."""
    paths = [a for a in args if not a.startswith("-") and _exists(a)]
    options = [a for a in args if a not in paths]
    if not paths:
        return args, [*options, MULTIDEVICE]
    multi = Path(MULTIDEVICE).resolve()
    inside = [
        p
        for p in paths
        if multi == Path(p.split("::")[0]).resolve() or multi in Path(p.split("::")[0]).resolve().parents
    ]
    above = any(Path(p).resolve() in multi.parents for p in paths)
    single = [*options, *(p for p in paths if p not in inside)] if len(inside) < len(paths) else None
    second = [*options, *inside] if inside else ([*options, MULTIDEVICE] if above else None)
    return single or [], second


def selected(folder: Path) -> int:
    """Tests run, from the JUnit files pytest wrote into ``folder``."""
    total = 0
    for xml in folder.glob("*.xml"):
        root = ET.parse(xml).getroot()
        suites = [root] if root.tag == "testsuite" else root.iter("testsuite")
        total += sum(int(suite.get("tests", 0)) for suite in suites)
    return total
