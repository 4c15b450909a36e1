"""The team's own run (``gate --run CMD``): run the team's command in the
baseline's environment twice and in the candidate's once, each under the
recorder (``optax_gate.recorder``), compare the traces
(``optax_gate.gate.team_run.divergence``) and give the report its ``team_run`` and the
verdict about the team.

How ``CMD`` runs: through ``bash -c`` with the working folder ``--run-dir``
(default: the folder the gate was started from), ``PATH`` starting with the
environment's ``bin/`` (so ``python``, ``pytest`` are the environment's),
``VIRTUAL_ENV`` set to it, and ``PYTHONPATH`` = the recorder's start-up folder,
the team's folder and its ``src/`` when there is one (the team's code is
importable as its own tests import it; an inherited ``PYTHONPATH`` is dropped
so both sides see the same code). Nothing else of the command changes.

Outcome (``team_run["outcome"]``):

===============  ==============================================================
outcome          when
===============  ==============================================================
``same``         the candidate's trace matches the baseline's: no call differs
                 beyond the ULP budget, no exception or warning appears.
``diverged``     a call differs (``divergence.compare``): FAIL.
``broke``        the run exits non-zero (or times out) in the candidate only:
                 FAIL, named at the line that raised.
``not-verified`` the run cannot start, fails or times out in the baseline,
                 records no Optax call from the team's files, or its two
                 baseline runs differ (not deterministic): exit 2.
===============  ==============================================================

With ``--run`` each contract finding gets its scope (``optax_gate.gate.team_code.scope``):
``yours`` when one of its APIs is an API whose call caused a divergence of the
run, else ``elsewhere`` ("Optax changed elsewhere": it does not set the
verdict; ``--fail-on all`` keeps today's verdict).
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from optax_gate.gate.team_run import divergence, team_files
from optax_gate.recorder import REPLAY_ENV, ROOT_ENV, TRACE_ENV
from optax_gate.gate.judge import verdict

#: The recorder's start-up folder (its ``sitecustomize.py``), put first on ``PYTHONPATH``.
RECORDER_SITE = Path(__file__).resolve().parents[2] / "recorder" / "site"
#: Characters of the command's output kept in the report (its end).
TAIL_CHARS = 2000
#: Divergences listed in report.json (all are counted).
LISTED = 50
#: Lines of the team's code where the run called Optax, listed in report.json (``called``; the first, by name).
CALLED = 1000


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """What ``--run`` asks: the command, the team's folder, the time limit of
    one run (seconds); and the gate's own folders (its output, caches and
    environments: ``not_watched``), which the gate writes while the command
    runs: never looked at nor put back, should they lie in the team's folder."""

    command: str
    run_dir: Path
    timeout: float
    not_watched: tuple[Path, ...] = ()


def environment(python: Path, run_dir: Path, trace: Path) -> dict[str, str]:
    """The environment variables of one run of the team's command (see the module docstring)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")}
    bin_dir = Path(os.path.abspath(python)).parent  # the gate's own paths are relative to the project; the command runs elsewhere
    env["PATH"] = os.pathsep.join([str(bin_dir), env.get("PATH", "")])
    env["VIRTUAL_ENV"] = str(bin_dir.parent)
    run_dir = Path(os.path.abspath(run_dir))
    paths = [str(RECORDER_SITE), str(run_dir)] + ([str(run_dir / "src")] if (run_dir / "src").is_dir() else [])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env[TRACE_ENV] = os.path.abspath(trace)
    env[ROOT_ENV] = str(run_dir)
    return env


def run_once(spec: RunSpec, python: Path, label: str, folder: Path) -> dict[str, Any]:
    """Run the command once in ``python``'s environment; its trace goes to
    ``folder/team-run-<label>/``, its output to ``folder/team-run-<label>.log``.

    Returns:
      ``{"label", "exit" (None: could not start or timed out), "seconds",
      "timed_out", "error", "tail", "log", "trace"}``.
    """
    trace, log = folder / f"team-run-{label}", folder / f"team-run-{label}.log"
    shutil.rmtree(trace, ignore_errors=True)
    trace.mkdir(parents=True)
    start = time.monotonic()
    row: dict[str, Any] = {"label": label, "exit": None, "timed_out": False, "error": "", "log": log.name, "trace": trace.name}
    try:
        with open(log, "wb") as out:
            env = environment(python, spec.run_dir, trace)
            if not label.endswith("-replay"):  # the equation replays cost a compilation per operation: only when read
                env[REPLAY_ENV] = "0"
            # its own process group: on a timeout or an interruption the whole command is stopped (bash and the
            # team's Python under it) before the folder is put back; a Python left running wrote into the folder after
            # it was put back (the trial: `python train.py && echo done` under Ctrl-C lost the team's checkpoint)
            proc = subprocess.Popen(["bash", "-c", spec.command], cwd=spec.run_dir, env=env, stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
            try:
                row["exit"] = proc.wait(timeout=spec.timeout)
            except BaseException:  # a timeout, Ctrl-C, the gate's own stop
                _stop_group(proc)
                raise
    except subprocess.TimeoutExpired:
        row["timed_out"] = True
        row["error"] = f"timed out after {spec.timeout:.0f} s"
    except OSError as exc:
        row["error"] = f"could not start: {exc.strerror or exc}"
    row["seconds"] = round(time.monotonic() - start, 2)
    text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    row["tail"] = text[-TAIL_CHARS:]
    return row


#: Seconds the team's command has to end after SIGTERM before its process group is killed.
STOP_GRACE = 5.0


def _stop_group(proc: subprocess.Popen) -> None:
    """Stop the command's whole process group: SIGTERM, then SIGKILL after
    :data:`STOP_GRACE` seconds; wait for it."""
    for sig, grace in ((signal.SIGTERM, STOP_GRACE), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            break
        try:
            proc.wait(timeout=grace)
            if sig == signal.SIGTERM:
                os.killpg(proc.pid, signal.SIGKILL)  # what is left of the group (a child the shell did not wait for)
            break
        except subprocess.TimeoutExpired:
            continue
        except ProcessLookupError:
            break
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass


def _raised_at(tail: str, run_dir: Path) -> str:
    """The last ``file:line`` of the team's files in a Python traceback of ``tail``, or ""."""
    root = str(Path(run_dir).resolve())
    found = ""
    for path, line in re.findall(r'File "([^"]+)", line (\d+)', tail):
        resolved = str(Path(path).resolve()) if os.path.isabs(path) else str((Path(run_dir) / path).resolve())
        if resolved.startswith(root + os.sep) and "site-packages" not in resolved:
            found = f"{os.path.relpath(resolved, root)}:{line}"
    return found


def _failed(row: dict[str, Any]) -> bool:
    return row["exit"] != 0


_ERROR_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Warning)\b.*")


def _why(row: dict[str, Any]) -> str:
    """The exit status and the error line of a run's output (the last line
    that names an exception, else the last line)."""
    if row["error"]:
        return row["error"]
    lines = [re.sub(r"^E\s+", "", line.strip()) for line in row["tail"].strip().splitlines() if line.strip()]  # pytest's "E   "
    errors = [line for line in lines if _ERROR_LINE.match(line)]
    last = (errors or lines)[-1:] or ["(no output)"]
    return f"exit {row['exit']}: {last[0][:300]}"


def user_names(run_dir: Path) -> Callable[[str], str]:
    """A site of the run (``train.py:34``, relative to ``run_dir`` as the
    recorder writes it) named as ``--usage`` names the team's files: relative
    to the folder the user started the gate from
    (``usage_files.display_name``), so one line has one name in the whole
    report (``../team/train.py:34`` in "Your code" and in the findings alike)."""
    from optax_gate.gate.inputs import usage_files

    def name(site: str) -> str:
        path, sep, line = site.rpartition(":")
        if not sep or not line.isdigit():
            return site
        return f"{usage_files.display_name(Path(run_dir) / path, usage_files.user_folder())}:{line}"
    return name


def _renamed(diff: dict[str, Any], name: Callable[[str], str] | None) -> dict[str, Any]:
    """``divergence.compare``'s result with every site named by ``name`` (None: as it is)."""
    if name is None:
        return diff
    out = dict(diff)
    for key in ("divergences", "causes"):
        if key in out:
            out[key] = [{**row, "site": name(row["site"])} for row in out[key] or []]
    if out.get("first"):
        out["first"] = {**out["first"], "site": name(out["first"]["site"])}
    for key in ("sites", "called", "not_in_candidate"):
        if key in out:
            out[key] = [name(s) for s in out[key] or []]
    if out.get("compared_by"):
        out["compared_by"] = {**out["compared_by"], "value_sites": [name(s) for s in out["compared_by"]["value_sites"]]}
    if out.get("within_budget"):
        within = out["within_budget"]
        out["within_budget"] = {**within, "sites": [name(s) for s in within["sites"]],
                                **({"first": {**within["first"], "site": name(within["first"]["site"])}} if within.get("first") else {})}
    return out


def run(spec: RunSpec, pythons: tuple[Path, Path], folder: Path, say=lambda message: None,
        name: Callable[[str], str] | None = None) -> dict[str, Any]:
    """Run the command (baseline, baseline again, candidate) and compare.
    ``name``: how the report names a site of the run (:func:`user_names`;
    None: relative to ``--run-dir``, as the recorder writes it).

    Each run starts from ``--run-dir`` as it was before the gate, and the
    folder is left so (``optax_gate.gate.team_run.team_files``): what a run
    created or changed there is kept in ``folder/team-run-<label>-files/``
    (the baseline's and the candidate's; the repeat's is dropped).

    Returns the report's ``team_run`` (``{"command", "run_dir", "outcome",
    "reason", "runs", "compared", "differing", "first", "divergences",
    "causes", "sites", "raised_at"}``, see the module docstring for
    ``outcome``), and ``wrote`` (``{"files": the first 10 names, "count",
    "existed", "kept", "not_restored"}``) when the runs created, changed or
    deleted files in ``--run-dir``. Never raises for what the command does.

    Raises:
      OSError: the copies of the team's files cannot be written into ``folder``.
    """
    before = team_files.take(spec.run_dir, folder / "team-run-before", (*spec.not_watched, folder))
    settled: list[str] = []

    def after(label: str) -> None:
        if before is not None:
            # the repeat's only until the witness has read them; a replay run's are not kept
            keep = None if label.endswith("-replay") else folder / f"team-run-{label}-files"
            if team_files.settle(before, keep) and keep is not None and label != "baseline-repeat":
                settled.append(keep.name)
    try:
        result = _runs(spec, pythons, folder, _Around(say, after), name)
        if len(result["runs"]) == 3 and result["outcome"] != "not-verified":
            _witnessed(result, folder)
            within = result.get("within_budget") or {}
            if result["outcome"] in ("diverged", "broke") or (within.get("calls") and not within.get("shadow_only")):
                _births(result, folder, name, lambda: _replayed(spec, pythons, folder, _Around(say, after), result))
        result.pop("first_differs", None)
    finally:  # an interrupted run too: the folder is put back before the gate stops
        shutil.rmtree(folder / "team-run-baseline-repeat-files", ignore_errors=True)
        if before is not None:
            team_files.settle(before, None)
            team_files.discard(before)
    if before is not None and before.changed:
        changed, existed, lost = before.changed, before.existed, before.not_restored
        result["wrote"] = {"files": changed[:10], "count": len(changed), "existed": existed[:10],
                           "kept": settled, "not_restored": lost[:10]}
        if result["outcome"] == "not-verified" and result["reason"].startswith("the team's run is not deterministic") and lost:
            result["reason"] += (f"; your command wrote {', '.join(lost[:3])} in its folder, too large for the gate to put "
                                 "back between the runs: a run that reads what the run before it wrote differs from it "
                                 "(point its outputs elsewhere)")
        back = (f"{len(lost)} of them could not be put back and hold the last run's output ({', '.join(lost[:3])}), the "
                "others are as they were before the gate" if lost else
                "each run started from your folder as it was before the gate, and it is so again")
        say(f"--run: your command wrote {len(changed)} file(s) in {spec.run_dir} ({', '.join(changed[:3])}"
            f"{', …' if len(changed) > 3 else ''}); {back}" + (f"; the runs' outputs are in {folder}/{' and '.join(settled)}"
                                                               if settled else ""))
    elif before is None:
        say(f"--run: {spec.run_dir} holds more than {team_files.WATCHED_FILES} files: what your command writes there is "
            "not looked at, nor put back")
    return result


def _witnessed(result: dict[str, Any], folder: Path) -> None:
    """Add the second witness (``witness.witness``: the runs' output and the
    files they wrote, compared without the recorder) to a compared run: a run
    the recorder found the same whose outputs differ beyond the budget
    diverged (its outputs are the evidence: ``outcome`` ``diverged``,
    ``witnessed``: the first differing output); it never reads "computes the same"."""
    from optax_gate.gate.team_run import witness
    seen = witness.witness(folder, result["runs"], result.get("budget_ulps") or divergence.budget(1))
    result["witness"] = seen
    if seen["differs"] and result["outcome"] == "same":
        result["outcome"] = "diverged"
        result["witnessed"] = seen["first"]


def _births(result: dict[str, Any], folder: Path, name: Callable[[str], str] | None, replay: Callable[[], None]) -> None:
    """Where the run's difference is born (``result["born"]``): when some step
    the team transformed differs at its first call, the command runs once
    more on each side with the replays on (``replay``: :func:`_replayed`; then :func:`_born`);
    when every step's first call is the same, each is born ``later``, at the
    call where it first differs, and nothing is replayed (a replay is of a
    first call: the corpus' nnx_mlp_adam, 1 ULP apart from step 8, read of an
    operation that did not make the difference)."""
    firsts = {k: v for k, v in (result.get("first_differs") or {}).items() if divergence.transformed(k.partition("@")[0])}
    if any(v == 1 for v in firsts.values()):
        replay()
        _born(result, folder, name)
    elif firsts:
        result["born"] = [{"function": k.partition("@")[0], "site": name(k.partition("@")[2]) if name else k.partition("@")[2],
                           "kind": "later", "call": v} for k, v in firsts.items()]


def _replayed(spec: RunSpec, pythons: tuple[Path, Path], folder: Path, around: "_Around", result: dict[str, Any]) -> None:
    """Run the command once more on each side with the equation-by-equation
    replays on (``recorder/replay.py``: a compilation per operation, so only
    when a difference is to be traced to its birth); their traces go to
    ``team-run-{baseline,candidate}-replay/`` (``result["replay_runs"]``)."""
    rows = []
    for label, python in (("baseline-replay", pythons[0]), ("candidate-replay", pythons[1])):
        around.say(f"--run: the team's command in the {label.split('-')[0]} again, its step replayed operation by "
                   "operation to find where the difference is born")
        rows.append(run_once(spec, python, label, folder))
        around.after(label)
    result["replay_runs"] = [{k: r[k] for k in ("label", "exit", "seconds", "timed_out", "error")} for r in rows]


def _born(result: dict[str, Any], folder: Path, name: Callable[[str], str] | None) -> None:
    """Add where the run's difference is born (``divergence.birth`` over the
    two sides' equation-by-equation replays of the functions the team
    transformed): ``born``, its sites named by ``name``."""
    rows = divergence.birth(*(divergence.read_replays(folder / f"team-run-{label}-replay") for label in ("baseline", "candidate")))
    rows = [r for r in rows if r["kind"] != "unknown"] or rows
    firsts = result.pop("first_differs", {}) or {}
    for row in rows:  # the replay is of the first call: it tells the birth only if that call's results already differ
        at = firsts.get(f"{row['function']}@{row['site']}")
        if row["kind"] not in ("before", "unknown") and at is not None and at > 1:
            row.update(kind="later", call=at)
    if not rows:
        return
    if name is not None:
        for row in rows:
            for key in ("site", "team"):
                if row.get(key):
                    row[key] = name(row[key])
            if row.get("at") and row.get("by") == "your code" and " → " not in row["at"]:
                row["at"] = name(row["at"])
    result["born"] = rows


def born_words(row: dict[str, Any]) -> str:
    """Where one replayed function's difference is born, in words a team reads (``divergence.birth``'s row)."""
    called = f"`{row['function']}` (called at `{row['site']}`)"
    team = f" at your line `{row['team']}`" if row.get("team") and row.get("team") != row.get("at") else ""
    if row["kind"] == "before":
        return (f"{called} already gets other inputs ({row['inputs']} arrays differ): the difference is born before it, "
                "in code that is not an Optax call (the data, jax.random, the model's initialisation, an earlier step)")
    if row["kind"] == "operation":
        size = (f" ({_ulp_text(row.get('error_ulps'))}{'; ' + row['change'] if row.get('change') else ''})"
                if row.get("error_ulps") is not None or row.get("change") else "")
        return (f"in {called}, the first operation that gives other results is `{row['primitive']}`{team} (traced at "
                f"`{row['at']}`), on bit-identical inputs: JAX/XLA computes that operation otherwise{size}")
    if row["kind"] == "program":
        if not row.get("at"):
            return f"in {called}, the two sides trace programs of different lengths: the code the step calls changed"
        return (f"in {called}, from operation {row['index'] + 1} on the two sides trace other programs, at `{row['at']}`"
                f"{team}: {row['by']} computes something else there")
    if row["kind"] == "compiled":
        return (f"in {called}, every operation replayed one at a time gives the same results: the difference comes from "
                "how JAX/XLA compiles the program as a whole (fusion), not from what Optax or your code computes")
    if row["kind"] == "later":
        return (f"{called} gives bit-identical results at its first call; they first differ at call {row['call']}: born in "
                "a later step, which a replay of a first call cannot tell (what changes there: a schedule's boundary, "
                "rounding that builds up from step to step)")
    return f"where the difference is born in {called} cannot be told: {row.get('why', '')}"


def eager_births(team_run: dict[str, Any]) -> list[str]:
    """Where a difference is born at an Optax call of the team's own, outside
    any function it transformed: a cause (its inputs the same, its results
    other), observed directly. The trial (medium): a schedule logged with
    ``float(schedule(step))`` went NaN → 0.01 at its own line, and the
    headline spoke of a matmul in the jitted step."""
    out = []
    for c in team_run.get("causes") or []:
        if c.get("phase") == "call" and not divergence.transformed(c["api"]) and c.get("side", "both") == "both":
            out.append(f"in the Optax call `{c['call']}` at `{c['site']}`: other results on the same inputs (Optax's code, "
                       "or the JAX operations it runs)")
    return list(dict.fromkeys(out))


def born_short(row: dict[str, Any]) -> str:
    """Where one difference is born, in a few words for the verdict's reason ("Your code" says :func:`born_words`)."""
    mine = f" (your line `{row['team']}`)" if row.get("team") and row.get("team") != row.get("at") else ""
    if row["kind"] == "operation":
        size = _ulp_text(row["error_ulps"]) if row.get("error_ulps") is not None else row.get("change") or ""
        return (f"in JAX/XLA: `{row['primitive']}` at `{row['at']}`{mine} gives other results on identical inputs"
                + (f" ({size})" if size else ""))
    if row["kind"] == "program" and row.get("at"):
        return f"in {row['by']}: the step computes something else from `{row['at']}`{mine}"
    if row["kind"] == "before":
        return f"before `{row['function']}`: its inputs already differ (the data, jax.random, the initialisation, an earlier step)"
    if row["kind"] == "compiled":
        return "in JAX/XLA's compilation of the whole step (no single operation differs alone)"
    if row["kind"] == "later":
        return f"at call {row['call']} of `{row['function']}` (its first call gives the same results)"
    return "where, cannot be told" if row["kind"] == "unknown" else "in the code the step calls (its programs differ in length)"


def _ulp_text(x: float | None) -> str:
    return "beyond any ULP count" if x is None else f"{x:.3g} ULP"


@dataclasses.dataclass(frozen=True)
class _Around:
    """What :func:`_runs` calls around each run of the command: ``say`` before
    it (the console), ``after(label)`` once it has ended (the team's folder put back)."""

    say: Callable[[str], None]
    after: Callable[[str], None]


def _runs(spec: RunSpec, pythons: tuple[Path, Path], folder: Path, around: _Around,
          name: Callable[[str], str] | None) -> dict[str, Any]:
    """:func:`run`'s runs and comparison."""
    result: dict[str, Any] = {"command": spec.command, "run_dir": str(spec.run_dir), "runs": [], "outcome": "not-verified",
                              "reason": "", "compared": 0, "differing": 0, "first": None, "divergences": [], "causes": [],
                              "sites": [], "raised_at": ""}
    traces = {}
    for label, python in (("baseline", pythons[0]), ("baseline-repeat", pythons[0]), ("candidate", pythons[1])):
        around.say(f"--run: the team's command in the {label.replace('-repeat', ' (again, for determinism)')}")
        row = run_once(spec, python, label, folder)
        around.after(label)
        try:
            traces[label] = divergence.read(folder / row["trace"])
        except (OSError, ValueError) as exc:
            row["error"] = row["error"] or f"its trace cannot be read: {exc}"
            traces[label] = []
        row["calls"] = len(traces[label])
        result["runs"].append(row)
        if label == "baseline" and (_failed(row) or not traces[label]):
            result["reason"] = (f"the team's run fails in the baseline ({_why(row)}; it ran in {spec.run_dir}: --run-dir sets "
                                f"the folder)" if _failed(row) else
                                "the team's run records no Optax call from the team's files (is --run-dir the team's folder?)")
            return result
        if label == "baseline-repeat":
            again = _renamed(divergence.compare(traces["baseline"], traces[label]), name)
            if _failed(row) or again["differing"]:
                first = again["first"]
                result["reason"] = ("the team's run is not deterministic: " +
                                    (f"its two baseline runs differ first at {first['site']} {first['call']}: {'; '.join(first['texts'])}"
                                     if first else f"the second baseline run fails ({_why(row)})"))
                return result
    cand = result["runs"][-1]
    if cand["timed_out"] or (cand["exit"] is None and cand["error"]):
        result["reason"] = f"the team's run in the candidate: {cand['error']}"
        return result
    if not traces["candidate"] and not _failed(cand):  # the run went through, yet the recorder saw nothing of it
        said = [line for line in cand["tail"].splitlines() if "sitecustomize" in line or "optax_gate" in line][:2]
        result["reason"] = ("the recorder recorded no call of your run in the candidate, which ran to its end: the "
                            "recorder did not start there" + (f" ({'; '.join(s.strip() for s in said)[:300]})" if said else ""))
        return result
    diff = _renamed(divergence.compare(traces["baseline"], traces["candidate"], LISTED), name)
    longest = max(Counter((o["site"], o["api"], o["call"], o["phase"]) for o in traces["baseline"]).values(), default=1)
    result["budget_ulps"] = divergence.budget(longest)  # the witness judges the run's outputs as after its longest loop
    result.update({k: diff[k] for k in ("compared", "differing", "first", "divergences", "causes", "sites", "within_budget",
                                        "compared_by")})
    result["first_differs"] = diff["first_differs"]  # keyed by sites as the recorder names them: read by _born, then dropped
    called = sorted({str(o["site"]) for o in traces["baseline"] if o.get("site")})[:CALLED]
    missing = sorted(set(called) - {str(o["site"]) for o in traces["candidate"] if o.get("site")})  # a run that failed first
    result.update(_renamed({"called": called, **({"not_in_candidate": missing} if missing else {})}, name))
    if name is not None:  # the folder the sites' names are relative to: compare --team-run names them anew from another
        from optax_gate.gate.inputs import usage_files
        result["named_from"] = usage_files.user_folder()
    if _failed(cand):
        result["outcome"] = "broke"
        result["raised_at"] = _raised_at(cand["tail"], spec.run_dir)
        if name is not None and result["raised_at"]:
            result["raised_at"] = name(result["raised_at"])
        result["failure"] = _why(cand) + (f", raised at {result['raised_at']}" if result["raised_at"] else "")
        result["reason"] = f"your run fails in the candidate ({result['failure']})"
    elif diff["differing"]:
        result["outcome"] = "diverged"
    elif not diff["compared_by"]["value"]:  # nothing computed was compared: no evidence that it computes the same
        result["reason"] = (f"no value of your run could be compared: {no_values(diff['compared_by'])} (claims are made only "
                            "of what was compared by value)")
    else:
        result["outcome"] = "same"
    return result


def no_values(by: dict[str, Any]) -> str:
    """Why no call was compared by value, in words: the counts by structure only and not at all, with their reasons."""
    parts = []
    for kind, label in (("structure", "compared by structure only"), ("none", "not compared")):
        if by.get(kind):
            parts.append(f"{by[kind]} call(s) {label}")
    reasons = "; ".join(f"{n}: {divergence.WHY.get(k, k)}" for k, n in sorted((by.get("why") or {}).items(), key=lambda kv: -kv[1]))
    return (", ".join(parts) or "no call recorded") + (f" ({reasons})" if reasons else "")


def _short_api(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def cause_apis(team_run: dict[str, Any], reached: dict[str, set[str]] | None = None) -> set[str]:
    """The APIs (short names: ``adamw``, ``MultiSteps``) of the calls that caused a divergence (:func:`_apis_of`)."""
    return {a for c in team_run.get("causes") or [] for a in _apis_of(c, reached)}


def _apis_of(cause: dict[str, Any], reached: dict[str, set[str]] | None) -> set[str]:
    """A cause's APIs, short names: its own; for ``flax.nnx.Optimizer.update``
    the Optax API that built the optimizer's transformation (``via``:
    ``optax.adamw``) and, by the composition probe (``reached``), the public
    callables that one is built from (``add_decayed_weights``)."""
    out = {_short_api(cause["api"])}
    via = cause.get("via")
    if via:
        out.add(_short_api(via))
        out.update(_short_api(p) for p in (reached or {}).get(via, ()))
    return out


def _reached(report: dict[str, Any]) -> dict[str, set[str]]:
    """Public path -> the public callables it is built from, by the composition
    probe of the report's environments; {} when no cause needs it (none came
    through an ``nnx.Optimizer``) or the probe cannot run."""
    team = report.get("team_run") or {}
    if not any(c.get("via") for c in team.get("causes") or []):
        return {}
    from optax_gate.gate.team_code import composition
    return composition.of_records(report.get("baseline") or {}, report.get("candidate") or {})[0]


def finding_apis(finding: dict[str, Any]) -> list[str]:
    return list(finding.get("apis") or [finding.get("api", "")])


_STOP = {"the", "a", "an", "of", "to", "in", "is", "at", "by", "or", "and", "not", "no", "now", "but", "be", "was", "were",
         "with", "from", "for", "on", "instead", "result", "results", "got", "expected", "given", "only", "input", "inputs"}


def _words(text: str) -> set[str]:
    """The words of a change or a finding's cause that can tie them: dtype, error and argument names (no digits, no stop words)."""
    return {w for w in re.findall(r"[a-z][a-z0-9]*", text.lower()) if w not in _STOP and len(w) > 2}


def _explaining(report: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]], list[dict[str, Any]]]]:
    """Per site of a cause (in order): (site, its causes, the findings on the
    same APIs that explain it): those whose cause shares words with the change
    (a dtype, an error, an argument's name), at least half as many as the best
    one's, most first, surface findings first; all of them when none shares a word."""
    team = report.get("team_run") or {}
    out = []
    reached = _reached(report)
    for site in team.get("sites") or []:
        causes = [c for c in team.get("causes") or [] if c["site"] == site]
        shorts = {a for c in causes for a in _apis_of(c, reached)}
        related = [f for f in report.get("findings") or []
                   if f.get("change") in ("broken", "changed") and shorts & {_short_api(a) for a in finding_apis(f)}]
        words = _words(" ".join(t for c in causes for t in c["texts"]))
        overlap = {id(f): len(words & _words(str(f.get("cause") or f.get("text") or ""))) for f in related}
        best = max(overlap.values(), default=0)
        if best:  # the findings that speak of what changed here (its dtypes, its error, its argument), at least half as much as the best
            related = [f for f in related if 2 * overlap[id(f)] >= best]
        related.sort(key=lambda f: (-overlap[id(f)], f.get("section", "contracts") == "contracts"))
        out.append((site, causes, related))
    return out


def unchanged(team_run: dict[str, Any]) -> dict[str, Any] | None:
    """What of a diverged run computes the same, when that can be told
    (every differing call listed, and whether the others are bit for bit
    the same recorded; else None): ``{"dtypes_only": every differing call
    differs in dtypes alone, its values equal (0 ULP), "lines": the team's
    lines where the run called Optax and every result is bit for bit the
    same}``. The fifth trial: a bfloat16 team whose MultiSteps accumulator
    became float32 read FAIL at its MultiSteps line, and nothing said that
    its updates and params came out bit for bit the same."""
    divergences, within = team_run.get("divergences") or [], team_run.get("within_budget")
    if team_run.get("outcome") != "diverged" or not divergences or len(divergences) < team_run.get("differing", 0) or within is None:
        return None
    dtypes_only = not within.get("calls") and all(
        set(d.get("kinds") or []) <= {"dtype", "arguments"} and d.get("max_ulps") == 0.0 for d in divergences)
    moved = {str(d.get("site")) for d in divergences} | set(within.get("sites") or [])
    by_value = (team_run.get("compared_by") or {}).get("value_sites")  # None: a report written before they were counted
    return {"dtypes_only": dtypes_only, "lines": [s for s in team_run.get("called") or []
                                                  if s not in moved and (by_value is None or s in by_value)]}


def affected(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The report's "Your code" lines: per site of a cause (in order), its
    APIs, what changed there (the causes' texts, largest ULP error) and the
    findings that explain it (their numbers, :func:`_explaining`)."""
    lines = []
    for site, causes, related in _explaining(report):
        apis = list(dict.fromkeys(c["api"] for c in causes))
        ulps = [c["max_ulps"] for c in causes if c.get("max_ulps")]
        lines.append({"site": site, "apis": apis, "calls": list(dict.fromkeys(c["call"] for c in causes)),
                      "changes": list(dict.fromkeys(t for c in causes for t in c["texts"])),
                      "max_ulps": max(ulps) if ulps else None, "findings": [f["number"] for f in related]})
    return lines


def _point_sites(report: dict[str, Any], lines: list[dict[str, Any]]) -> None:
    """Tie the findings' call sites to the lines where the run diverges ("Your code").

    - A finding the run put elsewhere: the API surface's word on a line
      (``your_code_notes``: ``breaks: delta is keyword-only``) is the cause of
      that line's divergence only on the finding that explains the line; on
      any other finding it read as that finding's cause (the re-trial). Such a
      finding loses those notes (they stay on the finding that is the line's
      cause, and in the API surface rows), and each of its sites where the run
      diverges gets ``your_code_run``: site -> ``{"run": "diverges",
      "findings": the numbers of the findings that explain it there}``. A
      site where the run calls Optax and nothing differs gets ``{"run":
      "same"}`` (with ``"bits": "within the budget"`` where its results are
      not bit-identical, none beyond the ULP budget), one the run does not reach ``{"run": "not-reached"}`` (the
      re-trial: "elsewhere" named a float32 team's ``l2_loss`` line for the
      losses' integer-input checks with no word that its run had settled it).
      Reports of runs that did not record their calls (``called``) say only
      where the run diverges. A site whose calls were compared by structure
      only (nothing computed there was compared by value: an optimizer built,
      a call traced where no value is recorded) is ``{"run": "structure"}``,
      never "same". A run that failed in the candidate: a site it
      reached there is the same ``until`` the failure's line (its later calls
      never ran: the fourth trial read "computes the same" on an AdamW line
      whose update the candidate never reached), one it reached in the
      baseline only is ``not-reached-candidate``.
    - A finding that explains a line of the run gets ``run_sites``: those
      lines, with their calls (``train.py:34 optax.MultiSteps(...).init``):
      the run names the call where a result differs, the finding's call sites
      the constructor (``train.py:33``), and the reader could not tie the two.
    """
    explained = {line["site"]: line["findings"] for line in lines}
    team = report.get("team_run") or {}
    called, missing = team.get("called"), set(team.get("not_in_candidate") or [])
    drifted = set((team.get("within_budget") or {}).get("sites") or [])  # the same within the budget, not bit for bit
    by_value = (team.get("compared_by") or {}).get("value_sites")  # None: a report written before they were counted
    failed_at = (team.get("raised_at") or "") if team.get("outcome") == "broke" else None  # "": not a line of the team's
    for f in report.get("findings") or []:
        shown = [f"{line['site']} {', '.join(line['calls'])}".strip() for line in lines if f.get("number") in line["findings"]]
        if shown:
            f["run_sites"] = shown
        if f.get("scope") != "elsewhere" or not f.get("your_code"):
            continue
        f.pop("your_code_notes", None)
        here = {}
        for site in f["your_code"]:
            if site in explained:
                here[site] = {"run": "diverges", "findings": explained[site]}
            elif called is not None and site in missing:  # reached in the baseline only: the candidate's run failed before
                here[site] = {"run": "not-reached-candidate"}
            elif called is not None:
                here[site] = {"run": "same" if site in called else "not-reached"}
                if site in called and by_value is not None and site not in by_value:  # nothing computed there was compared
                    here[site] = {"run": "structure"}
                    continue
                if site in called and failed_at is not None:  # the same up to the failure, not after it
                    here[site]["until"] = failed_at
                if site in called and site in drifted:  # the eighth trial: "computes the same" of a line not bit-identical
                    here[site]["bits"] = "within the budget"
        if here:
            f["your_code_run"] = here


def _breaks_unreached(finding: dict[str, Any]) -> list[str]:
    """The team's lines that a contract finding's joined API surface part
    breaks (``your_code_notes`` saying ``breaks: ...``; ``causes.merge`` joined
    the surface row to the contracts of one cause). Such a row sets the verdict
    (``--usage`` scoped it: "beyond the contracts: N API surface findings
    broken") whatever the run does, so its finding is the team's: the third
    trial read a FAIL whose only causes, ``huber_loss(pred, y, 2.0)`` and
    ``optax.monte_carlo`` in helpers the run never calls, were listed under
    "Optax changed elsewhere … do not set the verdict". Empty for a finding
    without a broken surface part. (A line the run reaches and that breaks
    makes the run diverge there: that finding explains it.)"""
    if not any(p.get("section") == "surface" and p.get("change") == "broken" for p in finding.get("parts") or []):
        return []
    notes = finding.get("your_code_notes") or {}
    return [w for w in finding.get("your_code") or [] if str(notes.get(w, "")).startswith("breaks")]


def apply(report: dict[str, Any], team_run: dict[str, Any], fail_on: str = "broken") -> dict[str, Any]:
    """Put ``team_run`` into the report and make the verdict the team's (see the
    module docstring): the findings are scoped (``scope.apply``, ``by`` run),
    a run that broke or diverged fails the gate, one not verified makes it
    not verified. ``team_run["affected"]`` gets the "Your code" lines.
    Returns ``report``, changed in place."""
    from optax_gate.gate.team_code import scope

    report["team_run"] = team_run
    outcome = team_run["outcome"]
    if outcome != "not-verified":
        apis = cause_apis(team_run, _reached(report))
        explaining = {id(f) for _, _, related in _explaining(report) for f in related}
        for f in report.get("findings") or []:
            if f.get("section", "contracts") != "contracts":
                continue
            hit = sorted(apis & {_short_api(a) for a in finding_apis(f)})
            breaks = _breaks_unreached(f)
            if hit and id(f) in explaining:
                scope.set_scope(f, "yours", f"your run diverges at a call of {', '.join(hit)}, and this finding speaks of what changed there")
            elif breaks:  # its API surface part breaks a line of theirs: that sets the verdict, so the finding is theirs
                f["breaks_unreached"] = breaks
                scope.set_scope(f, "yours", f"its API surface change breaks your line{'s' if len(breaks) > 1 else ''} "
                                            f"{', '.join(breaks)}, which your run does not reach: it fails when called")
            elif hit:  # the run meets the API, but what changed at that call is another finding's (see "Your code")
                scope.set_scope(f, "elsewhere", f"your run calls {', '.join(hit)} and diverges there for another cause (see Your code)")
            else:
                scope.set_scope(f, "elsewhere", "your run does not diverge at a call of its APIs")
        scope.apply(report, fail_on, "run")
    team_run["affected"] = affected(report)
    if outcome != "not-verified":
        _point_sites(report, team_run["affected"])
    if outcome == "not-verified":
        verdict.at_least(report, "not-verified", f"--run not verified: {team_run['reason']}", at=0)
    elif outcome in ("diverged", "broke"):
        first = team_run.get("first")
        where = ", ".join(team_run.get("sites") or []) or team_run.get("raised_at") or ""
        why = ("your run diverges" + (f" at {where}" if where else "")
               + (f" (first: {first['site']} {first['call']}: {'; '.join(first['texts'][:2])})" if first else "")
               ) if where or first else ""
        born = [r for r in team_run.get("born") or [] if r["kind"] in ("operation", "compiled", "before", "program", "later")]
        optax_first = eager_births(team_run)
        if optax_first:  # an Optax call of the team's own, outside any step, that differs on identical inputs: said first
            why += "; born " + optax_first[0] + ("; in the steps you transformed: " + born_short(born[0]) if born else "")
        elif born:  # where the difference is born: JAX/XLA, Optax, Flax or the team's code (the getting-started case)
            why += "; born " + " and ".join(born_short(r) for r in [born[0], *[r for r in born[1:3] if r.get("also")]])
        seen = team_run.get("witness") or {}
        if seen.get("differs"):  # the second witness: what the run itself gives, without the recorder
            why = (f"{why}; " if why else "") + (f"your run's own outputs differ in the candidate: {seen['first']}"
                                                  + ("" if where else " (no recorded Optax call differs: the difference "
                                                     "is born outside the calls the recorder compares)"))
        same = unchanged(team_run)
        if same and same["dtypes_only"]:  # memory and checkpoints change, results do not: say so where the verdict is
            why += "; in dtypes only: every value your run computes is the same"
        if outcome == "broke":
            why = f"{team_run['reason']}; " + why if team_run.get("sites") else team_run["reason"]
        verdict.at_least(report, "fail", why, at=0)
    return report


def check(command: str | None, run_dir: Path | None, timeout: float) -> RunSpec | None:
    """The ``--run`` inputs, checked before anything runs; None without ``--run``.

    Raises:
      validate.InvalidInput: an empty command, or a ``--run-dir`` that is not a folder.
    """
    from optax_gate.gate.inputs import validate
    from optax_gate.gate.inputs.typed_path import INVOKED_FROM

    if command is None:
        if run_dir is not None:
            raise validate.InvalidInput("--run-dir is given without --run")
        return None
    if not command.strip():
        raise validate.InvalidInput("--run is empty: give the team's command, e.g. --run \"python train.py --steps 3\"")
    folder = Path(run_dir) if run_dir is not None else Path(os.environ.get(INVOKED_FROM) or os.getcwd())
    if not folder.exists():
        raise validate.InvalidInput(f"--run-dir {folder} does not exist")
    if not folder.is_dir():
        raise validate.InvalidInput(f"--run-dir {folder} is not a folder")
    return RunSpec(command, folder.resolve(), timeout)


#: The outcomes a recorded team run may hold (see the module docstring).
OUTCOMES = ("same", "diverged", "broke", "not-verified")


def recorded(path: Path, baseline: dict[str, Any], candidate: dict[str, Any], usage: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The team run a gate recorded (``compare --team-run``): the ``team_run``
    of a gate's ``report.json``, or of the ``report.json`` of a run folder
    given instead, for re-use by ``compare`` on the same run records (compare
    runs no code). Its ``affected`` lines are left out: :func:`apply` makes
    them anew from the findings compare forms.

    Args:
      path: a gate's ``report.json``, or the run folder holding it.
      baseline, candidate: the run records compare judges (``evidence/*.json``).
      usage: compare's ``--usage`` paths: the recorded run's folder must lie
        under one of them, or hold one (the re-trial re-used another team's
        run, and its verdict was that team's).

    Returns a copy of the recorded ``team_run``.

    Raises:
      validate.InvalidInput: the file cannot be read, is not a gate's
        ``report.json`` (a run record, another JSON), holds no team run (the
        gate ran without ``--run``), its sides are not the records' (another
        Optax, JAX or Flax on either side: its run judged other versions), or
        it ran in a folder that ``usage`` neither holds nor lies in.
    """
    import copy
    import json

    from optax_gate.gate.inputs import validate
    from optax_gate.gate.run import runner

    file = Path(path) / "report.json" if Path(path).is_dir() else Path(path)
    try:
        report = json.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise validate.InvalidInput(f"--team-run {validate.shown(file)} cannot be read: {exc.strerror or exc} "
                                    "(give a gate's report.json, or its run folder)") from None
    except ValueError as exc:
        raise validate.InvalidInput(f"--team-run {validate.shown(file)} is not a gate's report.json (not JSON: {exc})") from None
    if runner.is_run_record(report):
        raise validate.InvalidInput(f"--team-run {validate.shown(file)} is a run record, not a gate's report.json (give the "
                                    "run folder, or its report.json)")
    if not isinstance(report, dict) or "verdict" not in report:
        raise validate.InvalidInput(f"--team-run {validate.shown(file)} is not a gate's report.json (give the run folder, "
                                    "or its report.json)")
    team = report.get("team_run")
    if not isinstance(team, dict) or team.get("outcome") not in OUTCOMES:
        raise validate.InvalidInput(f"--team-run {validate.shown(file)} holds no team run: its gate ran without --run "
                                    "(give the report.json of a gate run with --run)")
    for label, record in (("baseline", baseline), ("candidate", candidate)):
        theirs = (report.get(label) or {}).get("versions") or {}
        ours = record.get("versions") or {}
        moved = sorted(p for p in ("optax", "jax", "jaxlib", "flax") if theirs.get(p) != ours.get(p))
        if moved:
            said = ", ".join(f"{p} {theirs.get(p) or '(none)'} there, {ours.get(p) or '(none)'} here" for p in moved)
            raise validate.InvalidInput(f"--team-run {validate.shown(file)} ran the team's command against another {label} "
                                        f"({said}): give the report.json of the gate that recorded these run records")
    ran_in = Path(os.path.abspath(str(team.get("run_dir") or "")))
    given = [Path(os.path.abspath(p)) for p in usage]
    if given and not any(ran_in == p or ran_in.is_relative_to(p) or p.is_relative_to(ran_in) for p in given):
        raise validate.InvalidInput(f"--team-run {validate.shown(file)} ran `{team.get('command')}` in {ran_in}, which is "
                                    f"not the code of --usage {', '.join(map(str, usage))}: give the report.json of a gate "
                                    "that ran this team's command")
    team = copy.deepcopy(team)
    team.pop("affected", None)
    return _named_here(team)


def _named_here(team: dict[str, Any]) -> dict[str, Any]:
    """A recorded team run with its sites named relative to this command's
    user folder, as ``--usage`` names the same files here: the gate named
    them relative to its own (``named_from``), and a compare started from
    another folder matched none of its call sites with the run's lines."""
    from optax_gate.gate.inputs import usage_files

    base, here = team.get("named_from"), usage_files.user_folder()
    if not base or os.path.abspath(base) == here:
        return team

    def name(site: str) -> str:
        path, sep, line = site.rpartition(":")
        if not sep or not line.isdigit():
            return site
        return f"{usage_files.display_name(Path(base) / path, here)}:{line}"
    old = [s for s in team.get("sites") or []] + [c["site"] for c in team.get("causes") or []] + [team.get("raised_at") or ""]
    moved = {s: name(s) for s in old if s and name(s) != s}
    out = _renamed(team, name)
    if out.get("raised_at"):
        out["raised_at"] = name(out["raised_at"])
    for key in ("reason", "failure"):  # sentences that name the sites
        text = out.get(key) or ""
        for before in sorted(moved, key=len, reverse=True):
            text = text.replace(before, moved[before])
        if key in out:
            out[key] = text
    out["named_from"] = here
    return out
