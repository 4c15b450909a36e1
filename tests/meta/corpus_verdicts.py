#!/usr/bin/env python3
"""The gate's verdict about each program of the team corpus
(``tests/meta/teams/corpus/``), beside the program's ground truth.

For each program this runs what ``gate --run "python train.py"`` runs
(``optax_gate.gate.team_run.recording.run``: the command in the baseline twice,
then in the candidate, recorded, compared, witnessed, the birth of a
difference replayed) and prints one row: the program, its truth (``same`` or
``differs``, as established by ``corpus_truth.py`` and written in its
docstring's ``EXPECTED TRUTH``), the outcome and verdict, the lines named,
the calls compared by value out of all matched calls, where the difference
is born, and the recorder's overhead (the baseline run's wall time recorded
against one plain run of the same command). A verdict is right when a
program the same is PASS, one whose difference Optax makes is FAIL, and one
whose difference JAX alone makes by rounding ("born in JAX" in its docstring,
established with the four environments) is PASS against the run's own
rounding noise, not bit for bit.

Usage (from the repository root, with the gate's tests environment):
    python tests/meta/corpus_verdicts.py --baseline PY --candidate PY [--only NAME,...] [--json OUT]

Not part of the test suite: it needs a candidate environment (optax 0.2.8,
jax 0.12.0.1) and takes minutes. Exit status 0 when every verdict is right,
1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from optax_gate.gate import assemble  # noqa: E402
from optax_gate.gate.team_run import birth_words, recording  # noqa: E402
from optax_gate.gate.team_run import command as run_command  # noqa: E402
from tests.meta import corpus_truth  # noqa: E402

CORPUS = ROOT / "tests" / "meta" / "teams" / "corpus"


def plain_seconds(python: str, folder: Path, timeout: float) -> float:
    """Wall time of one plain run of ``python train.py`` (no recorder), in a copy of ``folder``."""
    work = Path(tempfile.mkdtemp(prefix="corpus-plain-"))
    try:
        shutil.copytree(folder, work / "team")
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "OPTAX_GATE_TRACE")}
        start = time.monotonic()
        subprocess.run(
            [os.path.abspath(python), "train.py"], cwd=work / "team", env=env, capture_output=True, timeout=timeout
        )
        return time.monotonic() - start
    finally:
        shutil.rmtree(work, ignore_errors=True)


def verdict_of(name: str, baseline: str, candidate: str, timeout: float) -> dict[str, Any]:
    """One program's row (see the module docstring)."""
    folder = CORPUS / name
    work = Path(tempfile.mkdtemp(prefix=f"corpus-{name}-"))
    try:
        shutil.copytree(folder, work / "team")
        spec = run_command.RunSpec("python train.py", work / "team", timeout)
        result: Any = recording.run(spec, (Path(baseline), Path(candidate)), work / "evidence")
        report: Any = {"team_run": result, "findings": [], "verdict": "pass", "reasons": []}
        report = assemble.with_team_run(report, result)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    by = result.get("compared_by") or {}
    total = sum(by.get(k, 0) for k in ("value", "structure", "none"))
    recorded = next((r["seconds"] for r in result["runs"] if r["label"] == "baseline"), None)
    plain = plain_seconds(baseline, folder, timeout)
    truth = corpus_truth.expected_truth(str(folder))
    verdict = report["verdict"]
    within = result.get("within_budget") or {}
    bit_for_bit = (
        result["outcome"] == "same"
        and (not within.get("calls") or within.get("shadow_only"))
        and not (result.get("witness") or {}).get("output", {}).get("within_budget")
        and not (result.get("witness") or {}).get("files", {}).get("within_budget")
    )
    # right: a program the same bit for bit is PASS, saying so; one that differs is FAIL, or PASS that says it is not
    # bit for bit (every difference within the ULP budget of docs/contracts.md, where it is born said)
    # (a program the same by its outputs may still differ by a ULP mid-run, healed by the end: nnx_mlp_adam's Adam nu
    # from step 8; the gate sees it and says "not bit for bit" of those calls, its outputs the same: PASS is right)
    # and a program whose difference JAX alone makes by rounding (its docstring: "born in JAX", optax 0.2.8 on jax
    # 0.11.2 the same as the baseline) is PASS against the run's own rounding noise; one Optax makes is FAIL
    born_in = corpus_truth.born_in(str(folder))
    right = (truth == "same" and verdict == "pass") or (
        truth == "differs" and (verdict == "fail" if born_in == "Optax" else verdict == "pass" and not bit_for_bit)
    )
    born = [birth_words.born_short(r) for r in result.get("born") or [] if r["kind"] != "unknown"]
    return {
        "program": name,
        "truth": truth,
        "outcome": result["outcome"],
        "verdict": verdict,
        "right": right,
        "reason": (report["reasons"] or [result.get("reason", "")])[0][:400],
        "lines": result.get("sites") or [],
        "by_value": by.get("value", 0),
        "calls": total,
        "bit_for_bit": bit_for_bit,
        "born": born[:2],
        "recorded_s": recorded,
        "plain_s": round(plain, 2),
        "overhead": round(recorded / plain, 2) if recorded and plain else None,
        "born_in": born_in,
        "ensemble": result.get("ensemble"),
        "isolated": result.get("isolated"),
        "memory": result.get("memory"),
        "noise_ratio": within.get("noise_ratio"),
        "output_noise_ratio": ((result.get("witness") or {}).get("output") or {}).get("noise_ratio"),
    }


def _alone(found: dict[str, Any] | None) -> str:
    """The Optax calls run alone on the baseline's inputs, in a few words."""
    if not found:
        return ""
    differ = "; ".join(f"{r['site']} {r['call']}" for r in found.get("differ") or [])
    return (
        f"; alone on the baseline's inputs: {found['same']}/{found['calls']} the same"
        + (f", differ: {differ}" if differ else "")
        + (f", skipped {sum(found.get('skipped', {}).values())}" if found.get("skipped") else "")
    )


def _memory(found: dict[str, Any] | None) -> str:
    """The compiled memory of the program's steps, in a few words."""
    if not found:
        return "; memory: not measured"
    moved = "; ".join(f"{r['site']} {r['figure']} x{r['ratio']}" for r in found["grew"] + found["shrank"])
    return (
        f"; memory: {found['same']}/{found['steps']} steps the same"
        + (f", moved: {moved}" if moved else "")
        + (f", not measured {len(found['not_measured'])}" if found["not_measured"] else "")
    )


def main(argv: Any = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True)
    parser.add_argument("--candidate", required=True)
    parser.add_argument("--only", default="")
    parser.add_argument("--json")
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args(argv)
    names = [
        n
        for n in (
            args.only.split(",")
            if args.only
            else sorted(p.name for p in CORPUS.iterdir() if (p / "train.py").is_file())
        )
    ]
    rows = []
    for name in names:
        row = verdict_of(name, args.baseline, args.candidate, args.timeout)
        rows.append(row)
        print(
            f"{row['program']:28} truth {row['truth']:8} verdict {row['verdict'].upper():13} "
            f"{'right' if row['right'] else 'WRONG'}  lines {','.join(row['lines'][:3]) or '-':22} "
            f"by value {row['by_value']}/{row['calls']}  overhead {row['overhead']}x",
            flush=True,
        )
        print(
            f"    {'bit for bit' if row['bit_for_bit'] else 'not bit for bit'}; born: {' | '.join(row['born']) or '-'}",
            flush=True,
        )
        noise = row["ensemble"] or {}
        print(
            f"    truth born in {row['born_in'] or '-'}; ensemble: {noise.get('members', '-')} members"
            + (
                f", {noise.get('seconds')} s, reached {noise.get('reached')}/{noise.get('calls')} calls"
                if noise.get("used")
                else f" ({noise.get('why', 'not needed')})"
            )
            + f"; noise ratio calls {row['noise_ratio']}, output {row['output_noise_ratio']}"
            + _alone(row.get("isolated"))
            + _memory(row.get("memory")),
            flush=True,
        )
        print(f"    {row['reason'][:300]}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0 if all(r["right"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
