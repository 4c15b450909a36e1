"""The split by cause of a cross-run's behaviour failures where the two environments differ beyond optax: each re-run
with one side's optax on the other side's packages (``docs/upstream-tests.md``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from optax_gate.gate.base.plain_text import shorten
from optax_gate.gate.upstream.failures import BEHAVIOUR, OTHERS, Direction, read_junit
from optax_gate.gate.upstream.pytest_run import CrossRunFailure, Pytest, process_env, run_pytest, with_overlay

_VERSIONS = (
    "import importlib.metadata as m, json, re\n"
    "print(json.dumps({re.sub(r'[-_.]+', '-', d.metadata['Name']).lower(): d.version for d in "
    "m.distributions() if d.metadata['Name']}))"
)


def installed_versions(python: Path, env: dict[str, str], timeout: float = 120) -> dict[str, str]:
    """Normalised distribution name -> version of what ``python`` imports with the variables ``env`` (its
    ``PYTHONPATH``).

    Raises:
      CrossRunFailure: the interpreter cannot list them.
    """
    proc = subprocess.run(
        [str(python), "-c", _VERSIONS], capture_output=True, text=True, timeout=timeout, env=process_env(env)
    )
    if proc.returncode != 0:
        raise CrossRunFailure(f"the environment's distributions cannot be listed: {shorten(proc.stderr, 200)}")
    versions: dict[str, str] = json.loads(proc.stdout.strip().splitlines()[-1])
    return versions


def other_packages(pythons: dict[str, Path], extra_env: dict[str, dict[str, str]]) -> list[str]:
    """The distributions besides optax (and this project) that differ between the two environments: a version
    that moved (``"jax 0.11.2 → 0.12.0.1"``) first, then one installed on one side only (``"chex only in the
    baseline"``: often a test dependency an overlay brings), each group sorted by name; empty when only optax
    differs.

    Raises:
      CrossRunFailure: an environment cannot list its distributions.
    """
    base, cand = (installed_versions(pythons[side], extra_env.get(side, {})) for side in ("baseline", "candidate"))
    names = sorted(
        n for n in base.keys() | cand.keys() if n not in ("optax", "optax-gate") and base.get(n) != cand.get(n)
    )
    moved = [f"{n} {base[n]} → {cand[n]}" for n in names if n in base and n in cand]
    one_side = [
        f"{n} only in the {'baseline' if n in base else 'candidate'}" for n in names if (n in base) != (n in cand)
    ]
    return moved + one_side


#: A failing test of a direction passes in the ``baseline`` (its own environment, for the baseline's tests) or
#: fails there (the candidate's tests): its outcome with every package of the baseline.
_BASELINE_PASSES = {"baseline": True, "candidate": False}


@dataclass(frozen=True)
class Split:
    """What :func:`split_by_cause` runs with: the run's folder (``root``) and ``direction``, each side's optax
    package folder (``pkg``), interpreter (``pythons``), overlay of missing test dependencies (``deps``) and
    process variables (``env``), and each pytest run's ``timeout`` (seconds)."""

    root: Path
    direction: Direction
    pkg: dict[str, Path]
    pythons: dict[str, Path]
    deps: dict[str, Path | None]
    env: dict[str, dict[str, str]]
    timeout: float


def _mixed_outcomes(split: Split, ids: list[str], optax_of: str, packages_of: str) -> dict[str, bool] | None:
    """Test id -> passed, of ``ids`` run with ``optax_of``'s optax (copied into ``root``) on ``packages_of``'s
    interpreter and packages; None when that optax does not import there or a test did not run."""
    folder = split.root / f"_optax_of_{optax_of}"
    if not folder.is_dir():
        shutil.copytree(split.pkg[optax_of], folder / "optax", ignore=shutil.ignore_patterns("__pycache__"))
    env = with_overlay(with_overlay(split.env.get(packages_of, {}), split.deps.get(packages_of)), folder)
    python = split.pythons[packages_of]
    probe = subprocess.run(
        [
            os.path.abspath(python),
            "-c",
            "import optax, sys; sys.exit(0 if optax.__file__.startswith(sys.argv[1]) else 3)",
            str(folder),
        ],
        capture_output=True,
        cwd=split.root,
        timeout=split.timeout,
        env=process_env(env),
    )
    if probe.returncode != 0:
        return None
    xml = split.root / f"split-{optax_of}-on-{packages_of}.xml"
    run_pytest(python, split.root, ids, xml, Pytest(env, 1, split.timeout))
    if not xml.is_file():
        raise CrossRunFailure(
            f"pytest wrote no report for the split by cause of {len(ids)} test{'s' if len(ids) > 1 else ''}"
        )
    ran, failed = read_junit(xml.read_text(encoding="utf-8"), split.direction.files)
    if ran != len(ids):
        return None
    bad = {f.test for f in failed}
    return {t: t not in bad for t in ids}


def split_by_cause(split: Split, others: list[str]) -> None:
    """Which change moves each behaviour failure of ``split.direction`` when the two environments differ beyond optax
    (``others``, :func:`other_packages`): its test id re-run with the candidate's optax on the baseline's
    packages, and, where that leaves it as in the baseline, with the baseline's optax on the candidate's.
    Optax alone moves it: a behaviour finding (``moved_by`` "optax"). The other packages alone: kind
    :data:`OTHERS`, listed, never a finding. Neither alone: "both together", still a finding. A run that
    cannot be made (that optax does not import there): "not split", still a finding. Records in the direction the
    tests re-run, the seconds and why a run could not be made.

    Raises:
      CrossRunFailure: pytest wrote no report.
    """
    start, d = time.monotonic(), split.direction
    suspects = [f for f in d.failed if f.kind == BEHAVIOUR and "::" in f.test]
    ids = sorted({f.test for f in suspects})
    if not others or not ids:
        return
    at_baseline = _BASELINE_PASSES[d.tests_of]
    optax_alone = _mixed_outcomes(split, ids, "candidate", "baseline")
    unmoved = [t for t in ids if optax_alone is not None and optax_alone[t] == at_baseline]
    others_alone = _mixed_outcomes(split, unmoved, "baseline", "candidate") if unmoved else {}
    d.split_tests = len(ids) + len(unmoved)
    if optax_alone is None or others_alone is None:
        d.split_error = (
            f"the {'candidate' if optax_alone is None else 'baseline'}'s optax does not import or run on the "
            "other side's packages"
        )
    versions = [o for o in others if " → " in o] or others  # a moved version, not a test dependency one side lacks
    moved = ", ".join(versions[:3]) + (f" and {len(versions) - 3} more" if len(versions) > 3 else "")
    for f in suspects:
        if optax_alone is None:
            f.moved_by = "not split"
        elif optax_alone[f.test] != at_baseline:
            f.moved_by = "optax"
        elif others_alone is None:
            f.moved_by = "not split"
        elif others_alone[f.test] != at_baseline:
            f.moved_by, f.kind, f.change = "other packages", OTHERS, ""
            f.subject = (
                f"moves with the other packages ({moved}), not with optax: the candidate's optax alone leaves it "
                "as in the baseline"
            )
        else:
            f.moved_by = "both together"
    d.split_seconds = round(time.monotonic() - start, 1)
