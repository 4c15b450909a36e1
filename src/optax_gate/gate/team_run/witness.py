"""The second witness of ``gate --run``: what the team's run itself gives, read without the recorder. Its exit
status, its output (stdout and stderr) and the files it wrote in ``--run-dir`` (kept by ``team_files`` per
run) are compared, baseline against candidate, where the two baseline runs agree (what differs between them is
noise: timings, dates, progress bars).

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any

from optax_gate.gate.team_run import ensemble, leaves, output_arrays

#: Masked in each line of output before it is compared (what differs between two runs of one program).
MASKS = (
    (re.compile(r"0x[0-9a-fA-F]{4,}"), "0x…"),
    (re.compile(r"\b\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?"), "<date>"),
    (re.compile(r"\b\d{1,2}:\d{2}:\d{2}(\.\d+)?\b"), "<time>"),
    (
        re.compile(r"\b\d+(\.\d+)?(e[-+]?\d+)?\s?(s|sec|secs|seconds|ms|us|µs|ns|min|it/s|s/it|steps/s|examples/s)\b"),
        "<duration>",
    ),
    (re.compile(r"\bpid[ =:]\d+", re.I), "pid …"),
)
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?\b(?:nan|inf|NaN|Inf|infinity)\b")


def mask(line: str) -> str:
    """One line of output with what differs between runs of one program masked (:data:`MASKS`)."""
    for pattern, text in MASKS:
        line = pattern.sub(text, line)
    return line.rstrip()


def _numbers(line: str) -> tuple[str, list[float]]:
    words = _NUMBER.sub("#", line)
    return words, [float(x) for x in _NUMBER.findall(line)]


def _within(a: float, b: float, ulps: int, spread: float = 0.0) -> bool:
    """Whether ``b`` is ``a`` within ``ulps`` float32 ULPs, or within ``ensemble.FACTOR`` times ``spread`` (the
    largest deviation of the same number over the perturbed baseline runs; ``inf``: it leaves the finite numbers there
    too)."""
    if a == b or (math.isnan(a) and math.isnan(b)):
        return True
    if math.isinf(spread):
        return True
    if not (math.isfinite(a) and math.isfinite(b)):
        return False
    return abs(a - b) <= max(ulps * leaves.EPS["float32"] * max(abs(a), abs(b)), ensemble.FACTOR * spread)


def output_spreads(base: list[str], members: list[str]) -> dict[int, list[float]]:
    """Per line of the baseline's output (masked), the largest deviation of each of its numbers over the members'
    outputs (the perturbed baseline runs), lines matched by their words as the candidate's are."""
    spreads: dict[int, list[float]] = {}
    skeleton = [_numbers(x)[0] for x in base]
    for text in members:
        theirs = [mask(x) for x in text.splitlines()]
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(
            None, skeleton, [_numbers(x)[0] for x in theirs], autojunk=False
        ).get_opcodes():
            if tag != "equal":
                continue
            for i, j in zip(range(i1, i2), range(j1, j2), strict=False):
                bn, mn = _numbers(base[i])[1], _numbers(theirs[j])[1]
                row = spreads.setdefault(i, [0.0] * len(bn))
                for k, (x, y) in enumerate(zip(bn, mn, strict=False)):
                    row[k] = max(row[k], ensemble.deviation(x, y))
    return spreads


def compare_output(
    baseline: str, repeat: str, candidate: str, ulps: int, members: list[str] | None = None
) -> dict[str, Any]:
    """Compare the candidate's output with the lines both baseline runs share;
    ``members``: the outputs of the perturbed baseline runs (a number within
    ``ensemble.FACTOR`` times its spread over them is rounding: ``noise_ratio``,
    the largest deviation as a multiple of its spread, among the numbers that moved there).

    Returns:
      ``{"lines": lines compared, "noise": baseline lines left out (they differ
      between the two baseline runs), "differs": beyond the budget,
      "within_budget": number lines that differ within it, "first": the first
      difference beyond the budget ({"line": 1-based line of the baseline's
      output, "baseline", "candidate", "change"}) or None, "warnings": the
      warning lines (and the source lines they echo) one side only writes,
      listed, not counted as a difference}``.
    """
    base = [mask(x) for x in baseline.splitlines()]
    again = [mask(x) for x in repeat.splitlines()]
    cand = [mask(x) for x in candidate.splitlines()]
    stable = [False] * len(base)
    for tag, i1, i2, _, _ in difflib.SequenceMatcher(None, base, again, autojunk=False).get_opcodes():
        if tag == "equal":
            stable[i1:i2] = [True] * (i2 - i1)
    out: dict[str, Any] = {
        "lines": sum(stable),
        "noise": len(base) - sum(stable),
        "differs": False,
        "within_budget": 0,
        "first": None,
        "warnings": [],
    }
    spreads = output_spreads(base, members or [])
    ratios: list[float] = []

    def note(line: int, b: str, c: str, change: str) -> None:
        if out["first"] is None:
            out["first"] = {"line": line, "baseline": b[:300], "candidate": c[:300], "change": change}
        out["differs"] = True

    # aligned by the lines' words, their numbers masked: a line only one side writes (a warning on stderr) does not
    # pair the lines after it with the wrong ones (a RuntimeWarning is never read against `step 0 lr=0.0099`)
    skeletons = ([_numbers(x)[0] for x in base], [_numbers(x)[0] for x in cand])
    warned = (_warning_lines(base), _warning_lines(cand))
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, *skeletons, autojunk=False).get_opcodes():
        if tag == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2), strict=False):
                if not stable[i] or base[i] == cand[j]:
                    continue
                bn, cn = _numbers(base[i])[1], _numbers(cand[j])[1]
                spread = spreads.get(i) or [0.0] * len(bn)
                ratios += [
                    ensemble.deviation(x, y) / s
                    for x, y, s in zip(bn, cn, spread, strict=False)
                    if 0 < s < math.inf and not _within(x, y, ulps)
                ]
                if all(_within(x, y, ulps, s) for x, y, s in zip(bn, cn, spread, strict=False)):
                    out["within_budget"] += 1
                else:
                    x, y, s = next(
                        (x, y, s) for x, y, s in zip(bn, cn, spread, strict=False) if not _within(x, y, ulps, s)
                    )
                    beyond = (
                        f", {ensemble.deviation(x, y) / s:.3g}x the spread of your run's perturbed baseline runs"
                        if 0 < s < math.inf
                        else ""
                    )
                    note(i + 1, base[i], cand[j], f"a number: {_said(x)} → {_said(y)}" + _sizes(x, y, beyond))
            continue
        rows = [i for i in range(i1, i2) if stable[i] and not warned[0][i]]
        added = [j for j in range(j1, j2) if not warned[1][j]]
        out["warnings"] += [base[i] for i in range(i1, i2) if warned[0][i] and _WARNING.search(base[i])]
        out["warnings"] += [cand[j] for j in range(j1, j2) if warned[1][j] and _WARNING.search(cand[j])]
        if rows:
            note(rows[0] + 1, base[rows[0]], "", "a line the baseline's run writes, not the candidate's")
        if added and (rows or i2 == i1):  # beside lines of the baseline's that are noise: the candidate's noise
            note(i1 + 1, "", cand[added[0]], "a line the candidate's run writes, not the baseline's")
    out["warnings"] = out["warnings"][:10]
    if members:
        out["noise_ratio"] = max(ratios, default=None)
    return out


#: A warning as Python prints it (``file:line: RuntimeWarning: divide by zero``); the source line it echoes follows,
#: indented. Such a line on one side only is listed (``warnings``), not a difference of what the run computes: the
#: recorder judges the warnings of Optax's calls.
_WARNING = re.compile(r"\b[A-Z]\w*Warning\b:")


def _warning_lines(lines: list[str]) -> list[bool]:
    out, after = [], False
    for line in lines:
        here = bool(_WARNING.search(line)) or (after and line.startswith((" ", "\t")))
        out.append(here)
        after = bool(_WARNING.search(line)) or (after and here)
    return out


def _said(x: float) -> str:
    return "NaN" if math.isnan(x) else f"{x:.9g}"


def _sizes(x: float, y: float, beyond: str = "") -> str:
    if not (math.isfinite(x) and math.isfinite(y)):
        return ""
    scale = max(abs(x), abs(y))
    return f" (|Δ| {abs(x - y):.2g}, relative {abs(x - y) / scale:.2g}{beyond})" if scale else ""


@dataclasses.dataclass(frozen=True)
class Others:
    """What a file is judged with beside the two runs' copies: ``members``, the same file as the perturbed
    baseline runs wrote it (an array or number within ``ensemble.FACTOR`` times its spread over them is rounding);
    ``python``, the baseline's interpreter, which reads the formats only the team's environment reads (a Flax
    msgpack checkpoint: ``optax_gate.kit.environment.arrays``; None: those are compared by their bytes)."""

    members: tuple[Path, ...] = ()
    python: Path | None = None


def compare_file(base: Path, cand: Path, ulps: int, others: Others = Others()) -> dict[str, Any]:
    """One file both runs wrote: ``{"how": "arrays" | "json" | "bytes",
    "differs", "within_budget", "first": {"key", "change"} or None,
    "not_judged": a file compared by its bytes whose bytes differ}``."""
    out: dict[str, Any] = {"how": "bytes", "differs": False, "within_budget": False, "first": None, "not_judged": False}
    members = list(others.members)
    in_environment = others.python is not None and (
        base.suffix == ".msgpack" or base.is_dir()
    )  # msgpack, an Orbax checkpoint
    if base.suffix in (".npy", ".npz") or in_environment:
        read = (
            output_arrays.arrays if not in_environment else lambda path: output_arrays.env_arrays(path, others.python)
        )
        b, c = read(base), read(cand)
        theirs = [a for a in (read(m) for m in members if m.exists()) if a is not None]
        if b is not None and c is not None:
            out["how"] = "arrays"
            for key in sorted(set(b) | set(c)):
                x, y = b.get(key), c.get(key)
                spread: ensemble.Spread = None
                for m in theirs:
                    if x is not None and (mx := m.get(key)) is not None:
                        spread = ensemble.merged(spread, ensemble.leaf_spread(x, mx))
                one_side = (
                    f"written by the {'baseline' if key in b else 'candidate'} only" if (key in b) != (key in c) else ""
                )
                change = one_side or _array_change(x, y, ulps, spread)
                if change == "within":
                    out["within_budget"] = True
                elif change:
                    out["differs"], out["first"] = True, {"key": key, "change": change}
                    break
            return out
    if base.suffix == ".json":
        try:
            b_json, c_json = json.loads(base.read_text()), json.loads(cand.read_text())
        except (OSError, ValueError):
            b_json = c_json = None
        if b_json is not None or c_json is not None:
            out["how"] = "json"
            bl, cl = output_arrays.json_leaves(b_json), output_arrays.json_leaves(c_json)
            if [k for k, _ in bl] != [k for k, _ in cl]:
                out["differs"], out["first"] = True, {"key": "", "change": "its keys or lengths differ"}
                return out
            spreads = _json_spreads(bl, members)
            for (key, x), (_, y) in zip(bl, cl, strict=False):
                numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (x, y))
                if x == y:
                    continue
                if numbers and _within(float(x), float(y), ulps, spreads.get(key, 0.0)):
                    out["within_budget"] = True
                    continue
                out["differs"] = True
                out["first"] = {
                    "key": key,
                    "change": f"{x!r} → {y!r}" + (_sizes(float(x), float(y)) if numbers else ""),
                }
                return out
            return out
    if _digest(base) != _digest(cand):  # not a format read here: named, not judged (it does not set the verdict)
        out["not_judged"], out["first"] = (
            True,
            {"key": "", "change": "not judged: its bytes differ, and it is not a format the gate reads as values"},
        )
    return out


def _json_spreads(base: list[tuple[str, Any]], members: list[Path]) -> dict[str, float]:
    """Per number of a JSON file, its largest deviation over the members' copies of the file."""
    out: dict[str, float] = {}
    for path in members:
        try:
            theirs = dict(output_arrays.json_leaves(json.loads(path.read_text())))
        except (OSError, ValueError):
            continue
        for key, x in base:
            y = theirs.get(key)
            if (
                isinstance(x, (int, float))
                and isinstance(y, (int, float))
                and not isinstance(x, bool)
                and not isinstance(y, bool)
            ):
                out[key] = max(out.get(key, 0.0), ensemble.deviation(float(x), float(y)))
    return out


def _array_change(x: dict[str, Any] | None, y: dict[str, Any] | None, ulps: int, spread: ensemble.Spread = None) -> str:
    """Empty when equal, "within" when within the budget (``spread``: its spread over the perturbed baseline runs), else
    what changed."""
    if x is None or y is None:
        return "" if x == y else "not readable on one side"
    if x["sha256"] == y["sha256"] and x["dtype"] == y["dtype"] and x["shape"] == y["shape"]:
        return ""
    if x["dtype"] != y["dtype"] or x["shape"] != y["shape"]:
        moved = leaves.value_change(x, y) if x["shape"] == y["shape"] else ""
        return f"dtype {x['dtype']}{x['shape']} → {y['dtype']}{y['shape']}" + (f"; value {moved}" if moved else "")
    error = leaves.leaf_error(x, y)
    if isinstance(spread, float):
        return "within"  # rounding alone moves its integers or non-finite elements
    out_of, ratio = ensemble.beyond(x, y, spread, ulps) if ensemble.moved(spread) else (error > ulps, None)
    if not out_of and x["dtype"] in leaves.EPS:
        return "within"
    moved = leaves.value_change(x, y)
    said = (
        f"beyond {ensemble.FACTOR}x your run's own rounding noise there: {ratio:.3g}x the spread of its "
        "perturbed baseline runs"
        if ratio is not None
        else f"budget {ulps}"
    )
    return (
        f"{moved}"
        if x["dtype"] not in leaves.EPS
        else f"largest error {leaves.said_ulps(error)} ULP ({said})" + (f": {moved}" if moved else "")
    ) or "differs"


def _differs(one: dict[str, Any]) -> bool:
    """Whether :func:`compare_file` tells two files apart (beyond the budget, or by bytes)."""
    return bool(one["differs"] or one["not_judged"])


def _digest(path: Path) -> str:
    """SHA-256 of a file, or of a checkpoint folder's files (their names and bytes)."""
    if path.is_dir():
        whole = hashlib.sha256()
        for p in sorted(path.rglob("*")):
            if p.is_file():
                whole.update(str(p.relative_to(path)).encode() + b"\0" + _digest(p).encode())
        return whole.hexdigest()
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


#: The file that marks an Orbax checkpoint's PyTree item folder: the folder is one written output, read as arrays.
ORBAX_ITEM = "_METADATA"


def _files(folder: Path | None) -> dict[str, Path]:
    """The outputs a run wrote in ``folder``, by name: each file, and each Orbax checkpoint item folder as one
    (``ckpt/5/default/``; its data files have names of their own in every run)."""
    if folder is None or not folder.is_dir():
        return {}
    items = sorted({p.parent for p in folder.rglob(ORBAX_ITEM) if p.is_file()})
    out: dict[str, Path] = {}
    for p in sorted(folder.rglob("*")):
        if not p.is_file():
            continue
        item = next((i for i in items if i in p.parents), None)
        if item is not None:
            out[f"{item.relative_to(folder)}/"] = item
        else:
            out[str(p.relative_to(folder))] = p
    return out


def compare_files(
    baseline: Path | None, repeat: Path | None, candidate: Path | None, ulps: int, others: Others = Others()
) -> dict[str, Any]:
    """Compare the files the runs wrote (each run's kept outputs): those the
    two baseline runs wrote alike (by :func:`compare_file`) against the
    candidate's; ``others.members``: the perturbed baseline runs' kept outputs (folders).

    Returns:
      ``{"files": compared, "noise": files left out (they differ between the
      two baseline runs), "differs", "within_budget": files that differ
      within the budget, "first": {"file", "key", "change"} or None,
      "not_judged": the files compared by their bytes whose bytes differ (named, not judged), "noise_files": the
      first 10 names left out, "checkpoint_folders": the Orbax checkpoint folders among the outputs, each one}``.
    """
    b, r, c = _files(baseline), _files(repeat), _files(candidate)
    theirs = [_files(m) for m in others.members]
    folders = sum(1 for name in set(b) | set(c) if name.endswith("/"))
    out: dict[str, Any] = {
        "files": 0,
        "noise": 0,
        "differs": False,
        "within_budget": 0,
        "first": None,
        "not_judged": [],
        "noise_files": [],
        "checkpoint_folders": folders,
    }
    for name in sorted(set(b) | set(c)):
        if name in b and (name not in r or _differs(compare_file(b[name], r[name], 0, Others(python=others.python)))):
            out["noise"] += 1
            out["noise_files"] = (out["noise_files"] + [name])[:10]
            continue
        out["files"] += 1
        if name not in b or name not in c:
            change = {
                "file": name,
                "key": "",
                "change": f"written by the {'candidate' if name in c else 'baseline'}'s run only",
            }
            out["differs"], out["first"] = True, out["first"] or change
            continue
        one = compare_file(b[name], c[name], ulps, Others(tuple(m[name] for m in theirs if name in m), others.python))
        out["within_budget"] += int(one["within_budget"] and not one["differs"])
        if one["not_judged"]:
            out["not_judged"].append(name)
        if one["differs"]:
            out["differs"] = True
            out["first"] = out["first"] or {"file": name, **(one["first"] or {"key": "", "change": "differs"})}
    return out


def witness(
    folder: Path, runs: list[dict[str, Any]], ulps: int, members: list[str] | None = None, python: Path | None = None
) -> dict[str, Any]:
    """The second witness of three runs (baseline, baseline-repeat,
    candidate; their logs and kept files in ``folder``): ``{"exit": [three
    exit statuses], "output": compare_output(...), "files":
    compare_files(...), "differs": the output or a file differs beyond the
    budget, "first": where first, in words, or ""}``; ``members``: the labels of
    the perturbed baseline runs (``team-run-<label>.log`` and ``-files`` in ``folder``); ``python``: the baseline's
    interpreter (:class:`Others`)."""
    logs = {
        r["label"]: (folder / r["log"]).read_text(encoding="utf-8", errors="replace")
        if (folder / r.get("log", "")).is_file()
        else ""
        for r in runs
    }
    theirs = [
        (folder / f"team-run-{m}.log").read_text(encoding="utf-8", errors="replace")
        for m in members or []
        if (folder / f"team-run-{m}.log").is_file()
    ]
    output = compare_output(
        logs.get("baseline", ""), logs.get("baseline-repeat", ""), logs.get("candidate", ""), ulps, theirs
    )
    baseline, repeat, candidate = (
        folder / f"team-run-{label}-files" for label in ("baseline", "baseline-repeat", "candidate")
    )
    files = compare_files(
        baseline, repeat, candidate, ulps, Others(tuple(folder / f"team-run-{m}-files" for m in members or []), python)
    )
    first = ""
    if output["first"]:
        o = output["first"]
        first = f"output line {o['line']}: {o['change']}" + (
            f" (`{o['baseline']}` → `{o['candidate']}`)"
            if o["baseline"] and o["candidate"]
            else f" (`{o['baseline'] or o['candidate']}`)"
        )
    elif files["first"]:
        f = files["first"]
        key = f" key {f['key']}" if f["key"] else ""
        first = f"file {f['file']}{key}: {f['change']}"
    return {
        "exit": [r.get("exit") for r in runs],
        "output": output,
        "files": files,
        "differs": output["differs"] or files["differs"],
        "first": first,
    }
