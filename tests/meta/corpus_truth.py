#!/usr/bin/env python3
"""Establish the ground truth of the team-program corpus by brute force.

For every folder under tests/meta/teams/corpus/ that holds a train.py, this
script copies the folder to a fresh temporary directory, runs

    PY train.py --out OUTDIR

once with the candidate interpreter and twice with the baseline interpreter
(cwd = the copy, PYTHONPATH removed from the environment, with a timeout),
and compares what came out:

* the exit status;
* stdout, line by line (the first differing line is reported);
* every .npz / .npy / .json file written into OUTDIR, array by array:
  bit-identical, or else the largest absolute difference and the largest
  ULP distance / relative difference (NaN-aware).

The two baseline runs tell whether the program is deterministic; baseline
versus candidate is the program's truth: "same" or "differs" (with the
first difference).  Each train.py states its expected truth in its module
docstring ("EXPECTED TRUTH: same" / "EXPECTED TRUTH: differs"); the table
says whether what was established agrees with it.

With --attribute, a third environment is run: the baseline interpreter with
the candidate's (pure-Python) optax package put first on PYTHONPATH, i.e.
"new optax on old jax/jaxlib".  Baseline vs hybrid isolates what the Optax
upgrade alone changes; hybrid vs candidate what everything else (jax, jaxlib,
ml_dtypes...) changes.  The table then says where each difference is born.
With --four as well, the fourth environment runs: the candidate interpreter
with the baseline's optax (and chex, toolz) first on PYTHONPATH, i.e. "old
optax on new jax"; the JSON then holds `jax_alone_new_jax` (baseline vs it)
and `optax_alone_new_jax` (it vs the candidate).

Usage:
    python tests/meta/corpus_truth.py --baseline PY --candidate PY \
        [--only NAME[,NAME...]] [--json OUT] [--timeout S] [--no-repeat] \
        [--attribute [--four]]

Only the Python standard library is required; NumPy, when the interpreter
running this script has it, is used for the array-by-array comparison
(without it, files are compared byte by byte per array member).

Exit status: 0 when every program's truth agrees with its docstring and every
program is deterministic; 1 otherwise; 2 on a usage error.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from typing import Any

try:  # optional
    import numpy as np
except Exception:  # pragma: no cover - numpy missing
    np = None  # type: ignore[assignment]  # optional: the module reads np as None without NumPy

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CORPUS = os.path.join(HERE, "teams", "corpus")
ARTIFACT_SUFFIXES = (".npz", ".npy", ".json")


# ----------------------------------------------------------------------------
# running one program


XLA_FLAGS_FOR_RUNS = None  # --xla-flags (diagnostics only)


def _clean_env(pythonpath: Any = None) -> Any:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    env.pop("PYTHONHOME", None)
    env.pop("PYTHONSTARTUP", None)
    # Keep each program's own XLA_FLAGS decisions its own.
    env.pop("XLA_FLAGS", None)
    if XLA_FLAGS_FOR_RUNS:
        env["XLA_FLAGS"] = XLA_FLAGS_FOR_RUNS
    env.pop("JAX_PLATFORMS", None)
    env.pop("JAX_ENABLE_X64", None)
    env["PYTHONHASHSEED"] = "0"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def run_program(python: Any, folder: Any, workdir: Any, timeout: Any, pythonpath: Any = None) -> Any:
    """Copies `folder` into `workdir`, runs it, returns a result dict."""
    copy = os.path.join(workdir, "prog")
    out = os.path.join(workdir, "out")
    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.npz", "*.npy"))
    os.makedirs(out)
    cmd = [python, "train.py", "--out", out]
    start = time.monotonic()
    timed_out = False
    try:
        proc = subprocess.run(cmd, cwd=copy, env=_clean_env(pythonpath), capture_output=True, timeout=timeout)
        rc, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        timed_out = True
        rc = None
        stdout = exc.stdout or b""
        stderr = exc.stderr or b""
    seconds = time.monotonic() - start
    files = {}
    for root, _, names in os.walk(out):
        for name in names:
            if name.endswith(ARTIFACT_SUFFIXES):
                path = os.path.join(root, name)
                files[os.path.relpath(path, out)] = path
    return {
        "rc": rc,
        "timed_out": timed_out,
        "stdout": stdout.decode("utf-8", "replace"),
        "stderr": stderr.decode("utf-8", "replace"),
        "seconds": seconds,
        "files": files,
    }


# ----------------------------------------------------------------------------
# comparing arrays


def _ordered_ints(a: Any) -> Any:
    """Maps IEEE floats to integers whose difference is the ULP distance."""
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    i = a.view(bits).astype(np.int64)
    lo = np.int64(np.iinfo(bits).min)
    return np.where(i < 0, lo - i, i)


def compare_arrays(a: Any, b: Any) -> Any:
    """Returns None when bit-identical, else a dict describing the difference."""
    if a.dtype != b.dtype:
        return {"kind": "dtype", "text": f"dtype {a.dtype} vs {b.dtype}"}
    if a.shape != b.shape:
        return {"kind": "shape", "text": f"shape {a.shape} vs {b.shape}"}
    if a.dtype.kind in "biuc" or a.dtype.kind == "f":
        if a.tobytes() == b.tobytes():
            return None
    elif a.dtype.kind == "O":
        if a.tolist() == b.tolist():
            return None
        return {"kind": "value", "text": "object arrays differ"}
    else:
        if a.tobytes() == b.tobytes():
            return None
        return {"kind": "value", "text": f"raw bytes differ ({a.dtype})"}
    n = a.size
    if a.dtype.kind == "f":
        an, bn = np.isnan(a), np.isnan(b)
        nan_mismatch = int(np.count_nonzero(an != bn))
        both = ~(an | bn)
        af = a[both].astype(np.float64)
        bf = b[both].astype(np.float64)
        with np.errstate(all="ignore"):
            diff = np.abs(af - bf)
            finite = np.isfinite(diff)
            inf_mismatch = int(np.count_nonzero(~finite & (af != bf)))
            max_abs = float(diff[finite].max()) if finite.any() else 0.0
            denom = np.maximum(np.maximum(np.abs(af), np.abs(bf)), np.finfo(np.float64).tiny)
            rel = np.where(finite, diff / denom, 0.0)
            max_rel = float(rel.max()) if rel.size else 0.0
        ulp_unit = "ulp"
        if a.dtype.itemsize in (2, 4, 8):
            oa, ob = _ordered_ints(a[both]), _ordered_ints(b[both])
            ulps = np.abs(oa.astype(np.float64) - ob.astype(np.float64))
            # bfloat16 values saved as float32: count in bfloat16 ulps
            if a.dtype == np.float32 and not np.any((a.view(np.uint32) | b.view(np.uint32)) & 0xFFFF):
                ulps = ulps / 65536.0
                ulp_unit = "bf16 ulp"
            max_ulp = int(ulps.max()) if ulps.size else 0
        else:
            max_ulp = None
        n_diff = int(np.count_nonzero(af != bf)) + nan_mismatch
        parts = [f"{n_diff}/{n} elements differ"]
        if n_diff == 0:
            # equal values, different bits: +0.0 vs -0.0 (or NaN payloads)
            u = {2: np.uint16, 4: np.uint32, 8: np.uint64}.get(a.dtype.itemsize)
            n_bits = int(np.count_nonzero(a.view(u) != b.view(u))) if u is not None else n
            parts = [f"equal values but {n_bits}/{n} bit patterns differ (signed zeros / NaN payloads)"]
        parts.append(f"max abs {max_abs:.3g}")
        parts.append(f"max rel {max_rel:.3g}")
        if max_ulp is not None:
            parts.append(f"max {max_ulp} {ulp_unit}")
        if nan_mismatch:
            parts.append(f"{nan_mismatch} NaN mismatches")
        if inf_mismatch:
            parts.append(f"{inf_mismatch} inf mismatches")
        return {
            "kind": "value",
            "text": ", ".join(parts),
            "n_diff": n_diff,
            "size": n,
            "max_abs": max_abs,
            "max_rel": max_rel,
            "max_ulp": max_ulp,
            "nan_mismatch": nan_mismatch,
        }
    diff_count = int(np.count_nonzero(a != b))
    text = f"{diff_count}/{n} elements differ"
    if a.dtype.kind in "iu" and diff_count:
        d = np.abs(a.astype(np.int64) - b.astype(np.int64))
        text += f", max abs {int(d.max())}"
    return {"kind": "value", "text": text, "n_diff": diff_count, "size": n}


def _load_arrays(path: Any) -> Any:
    """Returns {name: array} (numpy) or {name: raw bytes} (no numpy)."""
    if path.endswith(".npy"):
        if np is not None:
            return {"": np.load(path, allow_pickle=False)}
        with open(path, "rb") as f:
            return {"": f.read()}
    with zipfile.ZipFile(path) as zf:
        names = sorted(zf.namelist())
        if np is None:
            return {n[:-4] if n.endswith(".npy") else n: zf.read(n) for n in names}
        out = {}
        for n in names:
            out[n[:-4] if n.endswith(".npy") else n] = np.load(io.BytesIO(zf.read(n)), allow_pickle=False)
        return out


def _json_first_diff(a: Any, b: Any, path: Any = "$") -> Any:
    if type(a) is not type(b):
        return f"{path}: {a!r} vs {b!r}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                return f"{path}.{k}: present in only one"
            d = _json_first_diff(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: length {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            d = _json_first_diff(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    if isinstance(a, float) and a != a and b != b:
        return None
    return None if a == b else f"{path}: {a!r} vs {b!r}"


def compare_file(rel: Any, pa: Any, pb: Any) -> Any:
    """Returns a list of difference records for one artifact file."""
    diffs = []
    if rel.endswith(".json"):
        with open(pa) as f:
            ja = json.load(f)
        with open(pb) as f:
            jb = json.load(f)
        d = _json_first_diff(ja, jb)
        if d:
            diffs.append({"file": rel, "array": None, "text": d})
        return diffs
    try:
        aa, ab = _load_arrays(pa), _load_arrays(pb)
    except Exception as exc:  # unreadable: fall back to bytes
        with open(pa, "rb") as f:
            ba = f.read()
        with open(pb, "rb") as f:
            bb = f.read()
        if ba != bb:
            diffs.append({"file": rel, "array": None, "text": f"files differ (unreadable: {exc})"})
        return diffs
    for name in sorted(set(aa) | set(ab)):
        if name not in aa or name not in ab:
            where = "baseline" if name in aa else "candidate"
            diffs.append({"file": rel, "array": name, "text": f"only in {where}"})
            continue
        x, y = aa[name], ab[name]
        if np is None:
            if x != y:
                diffs.append({"file": rel, "array": name, "text": "bytes differ"})
            continue
        d = compare_arrays(x, y)
        if d:
            rec = {"file": rel, "array": name}
            rec.update(d)
            diffs.append(rec)
    return diffs


_EXC_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b.*")


def _last_line(text: Any) -> Any:
    """The exception line of a traceback if any, else the last line."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    for line in reversed(lines):
        if _EXC_LINE.match(line):
            return line
    return lines[-1] if lines else ""


def compare_runs(ra: Any, rb: Any, label_a: Any = "baseline", label_b: Any = "candidate") -> Any:
    """Compares two run results. Returns (first_difference or None, details)."""
    details: Any = {"exit": None, "stdout": None, "files": []}
    first = None
    if ra["timed_out"] or rb["timed_out"]:
        who = [label for label, r in ((label_a, ra), (label_b, rb)) if r["timed_out"]]
        first = f"timed out in {' and '.join(who)}"
        details["exit"] = first
    elif ra["rc"] != rb["rc"]:
        msg = f"exit status {ra['rc']} vs {rb['rc']}"
        for label, r in ((label_a, ra), (label_b, rb)):
            if r["rc"] != 0:
                msg += f" ({label}: {_last_line(r['stderr'])[:160]})"
        first = msg
        details["exit"] = msg
    la, lb = ra["stdout"].splitlines(), rb["stdout"].splitlines()
    for i in range(max(len(la), len(lb))):
        xa = la[i] if i < len(la) else "<no line>"
        xb = lb[i] if i < len(lb) else "<no line>"
        if xa != xb:
            details["stdout"] = {"line": i + 1, label_a: xa, label_b: xb}
            if first is None:
                first = f"stdout line {i + 1}: {xa!r} vs {xb!r}"
            break
    fa, fb = ra["files"], rb["files"]
    for rel in sorted(set(fa) | set(fb)):
        if rel not in fa or rel not in fb:
            where = label_a if rel in fa else label_b
            details["files"].append({"file": rel, "array": None, "text": f"written only in {where}"})
            continue
        details["files"].extend(compare_file(rel, fa[rel], fb[rel]))
    if first is None and details["files"]:
        d = details["files"][0]
        arr = f"[{d['array']}]" if d.get("array") else ""
        first = f"{d['file']}{arr}: {d['text']}"
    return first, details


# ----------------------------------------------------------------------------


def expected_truth(folder: Any) -> Any:
    """Reads 'EXPECTED TRUTH: same|differs' from train.py's docstring."""
    with open(os.path.join(folder, "train.py"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"EXPECTED TRUTH:\s*(same|differs)", text, re.IGNORECASE)
    return m.group(1).lower() if m else None


def born_in(folder: Any) -> Any:
    """Reads 'born in JAX|Optax' from train.py's docstring (what the four environments established); None when
    absent."""
    with open(os.path.join(folder, "train.py"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"born in (JAX|Optax)\b", text)
    return m.group(1) if m else None


def discover(corpus: Any) -> Any:
    names = []
    for name in sorted(os.listdir(corpus)):
        if os.path.isfile(os.path.join(corpus, name, "train.py")):
            names.append(name)
    return names


def make_hybrid(candidate: Any, package: Any = "optax", also: Any = ()) -> Any:
    """Returns a folder to put on PYTHONPATH: it holds a link to the
    candidate's copy of `package` (which must be pure Python), and of each
    of `also` the candidate has (pure-Python requirements of that package)."""
    folder = tempfile.mkdtemp(prefix="corpus_hybrid_")
    for name in (package, *also):
        out = subprocess.run(
            [candidate, "-c", f"import os, {name}; print(os.path.dirname({name}.__file__))"],
            env=_clean_env(),
            capture_output=True,
            text=True,
            check=name == package,
        )
        if out.returncode == 0:
            os.symlink(out.stdout.strip().splitlines()[-1], os.path.join(folder, name))
    return folder


def evaluate(
    name: Any,
    corpus: Any,
    baseline: Any,
    candidate: Any,
    timeout: Any,
    repeat: Any,
    hybrid_path: Any = None,
    old_optax_path: Any = None,
) -> Any:
    folder = os.path.join(corpus, name)
    row = {"program": name, "expected": expected_truth(folder)}
    with tempfile.TemporaryDirectory(prefix=f"corpus_{name}_") as tmp:
        runs = {}
        labels = [("baseline", baseline, None), ("candidate", candidate, None)]
        if repeat:
            labels.append(("baseline_again", baseline, None))
        if hybrid_path:
            labels.append(("hybrid", baseline, hybrid_path))
        if old_optax_path:  # the fourth environment: the candidate's JAX with the baseline's optax
            labels.append(("old_optax", candidate, old_optax_path))
        for label, py, pypath in labels:
            wd = os.path.join(tmp, label)
            os.makedirs(wd)
            runs[label] = run_program(py, folder, wd, timeout, pypath)
        first, details = compare_runs(runs["baseline"], runs["candidate"])
        row["truth"] = "same" if first is None else "differs"
        row["first_difference"] = first
        row["details"] = details
        if repeat:
            nd_first, _ = compare_runs(runs["baseline"], runs["baseline_again"], "baseline", "baseline_again")
            row["deterministic"] = nd_first is None
            row["nondeterminism"] = nd_first
        else:
            row["deterministic"] = None
            row["nondeterminism"] = None
        if hybrid_path:
            by_optax, _ = compare_runs(runs["baseline"], runs["hybrid"], "baseline", "hybrid")
            by_rest, _ = compare_runs(runs["hybrid"], runs["candidate"], "hybrid", "candidate")
            row["optax_alone"] = by_optax
            row["rest_alone"] = by_rest
            born = []
            if by_optax:
                born.append("optax")
            if by_rest:
                born.append("jax")
            row["born_in"] = "+".join(born) or "-"
        if old_optax_path:
            jax_alone, _ = compare_runs(runs["baseline"], runs["old_optax"], "baseline", "old_optax")
            optax_on_new_jax, _ = compare_runs(runs["old_optax"], runs["candidate"], "old_optax", "candidate")
            row["jax_alone_new_jax"] = jax_alone
            row["optax_alone_new_jax"] = optax_on_new_jax
        for label, r in runs.items():
            row[f"{label}_seconds"] = round(r["seconds"], 2)
            row[f"{label}_rc"] = r["rc"]
            row[f"{label}_stdout_tail"] = r["stdout"].splitlines()[-1:] or []
            if r["rc"] != 0:
                row[f"{label}_stderr_tail"] = r["stderr"].splitlines()[-3:]
    ok = row["expected"] is None or row["expected"] == row["truth"]
    if row["deterministic"] is False:
        ok = False
    row["agrees_with_docstring"] = None if row["expected"] is None else row["expected"] == row["truth"]
    row["ok"] = ok
    return row


def _fmt_truth(row: Any) -> Any:
    text = "same" if row["truth"] == "same" else f"differs: {row['first_difference']}"
    if row["deterministic"] is False:
        text = f"NOT DETERMINISTIC ({row['nondeterminism']}); " + text
    return text


def print_table(rows: Any, width: Any = 150) -> None:
    attribute = any("born_in" in r for r in rows)
    name_w = max([len("program")] + [len(r["program"]) for r in rows])
    born = f" | {'born in':<9}" if attribute else ""
    print(f"{'program':<{name_w}} | {'expected':<8} | {'seconds b/c':<11}{born} | truth")
    print("-" * min(width, name_w + 40 + 60))
    for r in rows:
        secs = f"{r['baseline_seconds']:.1f}/{r['candidate_seconds']:.1f}"
        exp = r["expected"] or "?"
        mark = "" if r["ok"] else "  <-- MISMATCH"
        born = f" | {r.get('born_in', '?'):<9}" if attribute else ""
        print(f"{r['program']:<{name_w}} | {exp:<8} | {secs:<11}{born} | {_fmt_truth(r)}{mark}")
    if attribute:
        print()
        print(
            "born in: optax = baseline vs (baseline + candidate optax) differ; jax = (baseline + candidate "
            "optax) vs candidate differ"
        )
        for r in rows:
            if r.get("optax_alone") or r.get("rest_alone"):
                print(f"  {r['program']}:")
                if r.get("optax_alone"):
                    print(f"    optax alone: {r['optax_alone']}")
                if r.get("rest_alone"):
                    print(f"    jax & co alone: {r['rest_alone']}")
        for r in rows:
            if "jax_alone_new_jax" in r:
                print(f"  {r['program']} (fourth environment, old optax on new jax):")
                print(f"    jax alone (baseline vs old optax on new jax): {r['jax_alone_new_jax'] or 'the same'}")
                print(f"    optax alone on new jax (old vs new optax): {r['optax_alone_new_jax'] or 'the same'}")


def main(argv: Any = None) -> Any:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True, help="python interpreter of the baseline environment")
    parser.add_argument("--candidate", required=True, help="python interpreter of the candidate environment")
    parser.add_argument("--only", action="append", default=[], help="program name(s), comma separated; repeatable")
    parser.add_argument("--json", help="write the table as JSON here")
    parser.add_argument("--corpus", default=DEFAULT_CORPUS, help="corpus folder (default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds per program run (default: %(default)s)")
    parser.add_argument("--no-repeat", action="store_true", help="skip the second baseline run (determinism check)")
    parser.add_argument(
        "--attribute",
        action="store_true",
        help="also run baseline python + candidate optax, to tell Optax-born from JAX-born differences",
    )
    parser.add_argument(
        "--four",
        action="store_true",
        help="with --attribute, also the candidate python + baseline optax (with chex, toolz): all four environments",
    )
    parser.add_argument(
        "--xla-flags",
        default=None,
        help="diagnostics: XLA_FLAGS for every run (e.g. '--xla_cpu_experimental_ynn_fusion_type=' switches off "
        "XLA:CPU's YNNPACK dot fusions); normally unset",
    )
    args = parser.parse_args(argv)

    for py in (args.baseline, args.candidate):
        if not (os.path.isfile(py) and os.access(py, os.X_OK)):
            parser.error(f"not an executable interpreter: {py}")
    names = discover(args.corpus)
    if args.only:
        wanted = [n for item in args.only for n in item.split(",") if n]
        unknown = [n for n in wanted if n not in names]
        if unknown:
            parser.error(f"unknown program(s): {', '.join(unknown)}; known: {', '.join(names)}")
        names = [n for n in names if n in wanted]
    if not names:
        parser.error(f"no programs found under {args.corpus}")

    global XLA_FLAGS_FOR_RUNS
    XLA_FLAGS_FOR_RUNS = args.xla_flags
    hybrid_path = None
    old_optax_path = None
    if args.attribute:
        hybrid_path = make_hybrid(os.path.abspath(args.candidate))
    if args.attribute and args.four:
        old_optax_path = make_hybrid(os.path.abspath(args.baseline), "optax", ("chex", "toolz"))
    rows = []
    for name in names:
        print(f"... {name}", file=sys.stderr, flush=True)
        row = evaluate(
            name,
            args.corpus,
            os.path.abspath(args.baseline),
            os.path.abspath(args.candidate),
            args.timeout,
            not args.no_repeat,
            hybrid_path,
            old_optax_path,
        )
        rows.append(row)
        print(
            f"    {_fmt_truth(row)}  [{row['baseline_seconds']:.1f}s/{row['candidate_seconds']:.1f}s]",
            file=sys.stderr,
            flush=True,
        )
    for path in (hybrid_path, old_optax_path):
        if path:
            shutil.rmtree(path, ignore_errors=True)
    print_table(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(
                {"baseline": args.baseline, "candidate": args.candidate, "numpy": np is not None, "programs": rows},
                f,
                indent=2,
                default=str,
            )
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
