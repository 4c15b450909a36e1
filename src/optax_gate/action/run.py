"""``keys`` and ``gate`` of the action's entry script (``optax_gate.action``).

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from optax_gate.action import comment
from optax_gate.gate.run import evidence  # standard library only, like this script

ROOT = Path(os.environ.get("GITHUB_ACTION_PATH") or Path(__file__).resolve().parents[3])
FAIL_ON = ("broken", "changed", "all")
#: GitHub's limit of one step's job summary is 1 MiB; the summary is built to
#: stay under this (``comment.fit``), whatever the report's size.
SUMMARY_LIMIT = 1_000_000


def _items(name: str, default: str = "") -> list[str]:
    return shlex.split(os.environ.get(name, "").strip() or default)


def _flag(name: str, default: bool) -> bool:
    text = os.environ.get(name, "").strip().lower()
    if text in ("", "true", "false"):
        return default if text == "" else text == "true"
    raise ValueError(f"{name.removeprefix('INPUT_').lower().replace('_', '-')}: expected true or false, got {text!r}")


def workspace() -> Path:
    """The repository the action runs in: ``$GITHUB_WORKSPACE``, else the working folder."""
    return Path(os.environ.get("GITHUB_WORKSPACE") or os.getcwd())


def gate_args(out: Path) -> list[str]:
    """The ``gate`` arguments of the inputs.

    Raises:
      ValueError: an input that is not one of its allowed values.
    """
    args = list(_items("INPUT_CANDIDATE"))
    lock = os.environ.get("INPUT_CANDIDATE_LOCK", "").strip()
    if lock:
        args += ["--candidate-lock", lock]
    baseline = os.environ.get("INPUT_BASELINE_LOCK", "").strip()
    args += ["--baseline-lock", baseline or str(ROOT / "requirements-lock.txt")]
    for path in _items("INPUT_USAGE", "."):
        args += ["--usage", path]
    for folder in _items("INPUT_CONTRACTS"):
        args += ["--contracts", folder]
    run = os.environ.get("INPUT_RUN", "").strip()
    if run:  # the team's command, run in the workspace (the folder the gate is started from)
        args += ["--run", run]
    args += ["--out", str(out)]
    if os.environ.get("INPUT_FAIL_ON", "").strip() == "all":
        args += ["--fail-on", "all"]
    if not _flag("INPUT_SPEED", True):
        args.append("--no-speed")
    return args


def command() -> list[str]:
    """How the gate is started: ``ROOT/noxw -s gate --`` (``OPTAX_GATE_ACTION_GATE``, a JSON list, replaces it)."""
    replaced = os.environ.get("OPTAX_GATE_ACTION_GATE")
    return json.loads(replaced) if replaced else [str(ROOT / "noxw"), "-s", "gate", "--"]


def status_of(gate_status: int, report: dict[str, Any] | None, fail_on: str) -> tuple[str, int]:
    """(verdict, the action's exit status) from the gate's exit status and its report."""
    if gate_status not in (0, 1) or report is None:
        return "not-verified", 2
    verdict = report.get("verdict", "not-verified")
    if (
        gate_status == 0
        and fail_on == "changed"
        and any(n for k, n in report.get("summary", {}).items() if k != "unchanged")
    ):
        return verdict, 1
    return verdict, gate_status


def _append(variable: str, text: str) -> None:
    target = os.environ.get(variable)
    if target:
        with open(target, "a", encoding="utf-8") as f:
            f.write(text)


def run_url() -> str:
    """This workflow run's page (its artifacts are listed there)."""
    server = os.environ.get("GITHUB_SERVER_URL", "https://github.com")
    return f"{server}/{os.environ.get('GITHUB_REPOSITORY', '')}/actions/runs/{os.environ.get('GITHUB_RUN_ID', '')}"


def summary(report_md: Path | None, verdict: str, status: int, fail_on: str) -> str:
    """The job summary: report.md (its verdict and findings first, a sample of
    rows per finding), cut to whole lines within GitHub's limit
    (:data:`SUMMARY_LIMIT`, ``comment.fit``), and where the whole report is:
    the artifact (``INPUT_ARTIFACT_NAME``) on this run's page."""
    head = f"optax-gate: verdict **{verdict}**, exit status {status} (fail-on: {fail_on})\n\n"
    if report_md is None:
        return head + "The gate wrote no report: not verified (see the step's log).\n"
    artifact = os.environ.get("INPUT_ARTIFACT_NAME", "").strip() or "upgrade-gate-report"
    link = (
        f"Every row, folded per finding: `report.html` in the artifact **{artifact}** of [this run]({run_url()}) "
        "(with report.md, report.json and the evidence).\n"
    )
    return comment.fit(head + report_md.read_text(encoding="utf-8"), SUMMARY_LIMIT, link)


def run_folders(out: Path) -> set[str]:
    """The names of the run folders under ``out/runs`` now (none when it does not exist)."""
    try:
        return {p.name for p in (out / "runs").iterdir() if p.is_dir()}
    except OSError:
        return set()


def this_run(out: Path, before: set[str]) -> Path | None:
    """The run folder the gate just made under ``out/runs`` (the newest folder not in ``before``), judged or
    not: the action shows *this* run's report, a refusal included, while ``out/report.md`` keeps showing
    the last run that judged both sides (``optax_gate.gate.run.evidence``). None when the gate made none."""
    new = sorted(run_folders(out) - before)
    return out / "runs" / new[-1] if new else None


def gate() -> int:
    """Run the gate with the action's inputs; its exit status (2, not verified, for an input refused here)."""
    try:
        fail_on = os.environ.get("INPUT_FAIL_ON", "").strip() or "broken"
        if fail_on not in FAIL_ON:
            raise ValueError(f"fail-on: expected one of {', '.join(FAIL_ON)}, got {fail_on!r}")
        out = Path(
            os.environ.get("INPUT_OUT", "").strip() or Path(os.environ.get("RUNNER_TEMP") or workspace()) / "optax-gate"
        )
        out = out if out.is_absolute() else workspace() / out
        args = gate_args(out)
    except ValueError as exc:
        print(f"optax-gate action: {exc} (not verified)", file=sys.stderr)
        _append("GITHUB_OUTPUT", "verdict=not-verified\nexit-status=2\nreport=\n")
        return 2
    cmd = [*command(), *args]
    print("optax-gate action: " + shlex.join(cmd), flush=True)
    before = run_folders(out)
    gate_status = subprocess.run(cmd, cwd=workspace()).returncode
    run = this_run(out, before)
    report_md = (run or out) / "report.md"
    try:  # a pass or fail without a readable report is not verified (fail closed)
        report = (
            json.loads(((run or out) / "report.json").read_text(encoding="utf-8")) if gate_status in (0, 1) else None
        )
    except (OSError, ValueError) as exc:
        print(f"optax-gate action: the gate's report.json cannot be read ({exc}): not verified", file=sys.stderr)
        report = None
    verdict, status = status_of(gate_status, report, fail_on)
    if status != gate_status:
        print(f"optax-gate action: fail-on changed: contracts differ from the baseline, exit status {status}")
    shown = report_md if run is not None and report_md.exists() and gate_status in (0, 1, 2) else None
    if shown is not None and run is not None and not evidence.is_judged(run):
        print(f"optax-gate action: this run judged nothing; {evidence.report_now(out)}")
    _append(
        "GITHUB_OUTPUT", f"verdict={verdict}\nexit-status={status}\nreport={shown or ''}\nreport-folder={run or ''}\n"
    )
    _append("GITHUB_STEP_SUMMARY", summary(shown, verdict, status, fail_on))
    print(f"optax-gate action: verdict {verdict}, exit status {status}; report {shown or 'none'}")
    return status


#: What each actions/cache step's key hashes, relative to the action's folder
#: (the baseline lock, the contracts, this package and pytest's configuration).
KEY_FILES = {
    "uv": ("requirements-lock.txt", "requirements-tools.txt"),
    "gate": ("requirements-lock.txt", "tests/contracts", "src/optax_gate", "conftest.py", "pyproject.toml"),
}


def _digest(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for top in paths:
        files = (
            sorted(p for p in top.rglob("*") if p.is_file() and "__pycache__" not in p.parts) if top.is_dir() else [top]
        )
        for path in files:
            if path.exists():
                h.update(path.relative_to(top.parent).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:32]


_JAXLIB = re.compile(r"^\s*jaxlib\s*==\s*([^\s;\\]+)", re.MULTILINE)


def _jaxlib(text: str) -> str:
    """The jaxlib version pinned in a lock or a list of requirements, "" when none is."""
    m = _JAXLIB.search(text)
    return m[1] if m else ""


def jax_cache_key(system: str) -> tuple[str, str]:
    """(key, restore prefixes) of the shared JAX compilation cache's actions/cache entry. Its entries are
    keyed by the jaxlib version (``optax_gate.gate.install.compilation_cache``), so is this: the baseline's
    jaxlib and the candidate's (``same`` when the candidate does not name one: an Optax-only bump). The
    key ends with the run's id, so that each run saves what it compiled; a run restores the newest entry
    of its jaxlib pair, else of its baseline's jaxlib."""
    base_lock = os.environ.get("INPUT_BASELINE_LOCK", "").strip()
    base_path = workspace() / base_lock if base_lock else ROOT / "requirements-lock.txt"
    base = _jaxlib(base_path.read_text(encoding="utf-8")) if base_path.is_file() else ""
    cand_lock = os.environ.get("INPUT_CANDIDATE_LOCK", "").strip()
    cand_text = (
        (workspace() / cand_lock).read_text(encoding="utf-8")
        if cand_lock and (workspace() / cand_lock).is_file()
        else "\n".join(_items("INPUT_CANDIDATE"))
    )
    cand = _jaxlib(cand_text) or "same"
    prefix = f"jax-{system}-{base or 'unknown'}-"
    run = f"{os.environ.get('GITHUB_RUN_ID', '0')}-{os.environ.get('GITHUB_RUN_ATTEMPT', '1')}"
    return f"{prefix}{cand}-{run}", f"{prefix}{cand}-\n{prefix}"


def keys() -> int:
    """Write ``uv``, ``gate`` and ``jax`` (cache keys; ``jax-restore``: its restore prefixes) to
    ``$GITHUB_OUTPUT``, and print them. The gate's key also covers the baseline lock input and the
    team's contract folders; ``jax`` is :func:`jax_cache_key`'s."""
    system = os.environ.get("RUNNER_OS", sys.platform)
    extra = [
        workspace() / p for p in (*_items("INPUT_CONTRACTS"), os.environ.get("INPUT_BASELINE_LOCK", "").strip()) if p
    ]
    jax_key, jax_restore = jax_cache_key(system)
    text = (
        f"uv=uv-{system}-{_digest([ROOT / p for p in KEY_FILES['uv']])}\n"
        f"gate=gate-{system}-{_digest([ROOT / p for p in KEY_FILES['gate']] + extra)}\n"
        f"jax={jax_key}\njax-restore<<EOF\n{jax_restore}\nEOF\n"
    )
    _append("GITHUB_OUTPUT", text)
    print(text, end="")
    return 0
