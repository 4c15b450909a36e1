"""A path the user typed, read from the folder the user stands in.

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

INVOKED_FROM = "OPTAX_GATE_INVOKED_FROM"


if TYPE_CHECKING:  # the concrete class (PosixPath, WindowsPath) is picked at run time; mypy reads a Path
    _ConcretePath = Path
else:
    _ConcretePath = type(Path())


class UserPath(_ConcretePath):
    """A path the user typed; ``typed`` keeps the text as typed, for refusals
    (``validate.shown``)."""

    typed = ""


def user_path(text: str) -> Path:
    """``text`` as a path read from the folder the user invoked ``noxw`` from
    (``$OPTAX_GATE_INVOKED_FROM``; the current folder when unset), a
    :class:`UserPath` that remembers ``text``."""
    path = Path(text).expanduser()
    base = os.environ.get(INVOKED_FROM)
    if not path.is_absolute() and base:
        full = os.path.normpath(os.path.join(base, path))
        here = os.getcwd()
        path = Path(os.path.relpath(full, here)) if full == here or full.startswith(here + os.sep) else Path(full)
    out = UserPath(path)
    out.typed = text
    return out


def project_default(text: str) -> Path:
    """A default folder (not typed by the user), relative to the project
    folder (the current one): kept relative when the user invoked ``noxw``
    from the project folder (or ``$OPTAX_GATE_INVOKED_FROM`` is unset), else
    absolute, so that the paths printed on the console (``verdict fail —
    reports/gate/runs/.../report.md``) exist from where the user stands."""
    base = os.environ.get(INVOKED_FROM)
    path = Path(text)
    if base and os.path.normpath(base) != os.getcwd():
        return Path(os.getcwd()) / path
    return path
