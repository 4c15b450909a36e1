"""The ``--run`` inputs, checked before anything runs: the command quoted whole, the team's folder."""

from __future__ import annotations

import os
from pathlib import Path

from optax_gate.gate.team_run import ensemble
from optax_gate.gate.team_run.command import RunSpec


def refuse_unquoted(command: str | None, specs: list[str], known: set[str]) -> None:
    """Refuse ``--run python train.py`` unquoted: the shell gave ``--run`` its first word only, and the rest
    arrived as SPECs (a file, an option, no package of the baseline).

    Raises:
      validate.InvalidInput: saying to quote the whole command.
    """
    from optax_gate.gate.inputs import requirements, validate
    from optax_gate.gate.inputs.typed_path import user_path

    if not command or any(c.isspace() for c in command.strip()):
        return

    def argument(spec: str) -> bool:  # a word of the team's command, not a requirement of the baseline's packages
        try:
            if requirements.canonical_name(spec) in known:
                return False
        except ValueError:
            pass
        return (
            spec.startswith("-") or spec.endswith((".py", ".ipynb", ".sh")) or "/" in spec or user_path(spec).exists()
        )

    words = [spec for spec in specs if argument(spec)]
    if words:
        raise validate.InvalidInput(
            f'--run takes the whole command as one argument: quote it, --run "{command} {" ".join(words)}" '
            f"({words[0]!r} arrived as a SPEC)"
        )


def check(command: str | None, run_dir: Path | None, timeout: float, exact: bool = False) -> RunSpec | None:
    """The ``--run`` inputs, checked before anything runs; None without ``--run``.

    Raises:
      validate.InvalidInput: an empty command, a ``--run-dir`` that is not a folder, ``--run-dir`` or ``--exact``
      without ``--run``.
    """
    from optax_gate.gate.inputs import validate
    from optax_gate.gate.inputs.typed_path import INVOKED_FROM

    if command is None:
        if run_dir is not None:
            raise validate.InvalidInput("--run-dir is given without --run")
        if exact:
            raise validate.InvalidInput("--exact is given without --run (it says how --run is judged)")
        return None
    if not command.strip():
        raise validate.InvalidInput('--run is empty: give the team\'s command, e.g. --run "python train.py --steps 3"')
    folder = run_dir if run_dir is not None else Path(os.environ.get(INVOKED_FROM) or os.getcwd())
    if not folder.exists():
        raise validate.InvalidInput(f"--run-dir {validate.shown(folder)} does not exist")
    if not folder.is_dir():
        raise validate.InvalidInput(f"--run-dir {validate.shown(folder)} is not a folder")
    return RunSpec(command, folder.resolve(), timeout, members=0 if exact else ensemble.MEMBERS)
