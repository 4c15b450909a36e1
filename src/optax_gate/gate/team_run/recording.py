"""The team's own run (``gate --run CMD``): the command run under the recorder, twice in the baseline and once in the
candidate, and its outcome (``docs/module-notes.md``)."""

from __future__ import annotations

import dataclasses
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from optax_gate.gate.base import model
from optax_gate.gate.team_run import (
    birth,
    command,
    divergence,
    ensemble,
    ensemble_cache,
    isolated,
    memory,
    team_files,
    trace,
)
from optax_gate.gate.team_run.command import RunSpec
from optax_gate.gate.team_run.judging import no_values
from optax_gate.recorder.isolate import IN_ENV as ISOLATE_IN
from optax_gate.recorder.isolate import OUT_ENV as ISOLATE_OUT
from optax_gate.recorder.perturb import PERTURB_ENV

#: Divergences listed in report.json (all are counted).
LISTED = 50
#: Lines of the team's code where the run called Optax, listed in report.json (``called``; the first, by name).
CALLED = 1000


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


def renamed(diff: dict[str, Any], name: Callable[[str], str] | None) -> dict[str, Any]:
    """``divergence.compare``'s result with every site named by ``name`` (None: as it is)."""
    if name is None:
        return diff
    out = dict(diff)
    for key in ("divergences", "causes", "warned"):
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
        out["within_budget"] = {
            **within,
            **{key: [name(s) for s in within[key]] for key in ("sites", "inputs_differ_sites") if key in within},
            **({"first": {**within["first"], "site": name(within["first"]["site"])}} if within.get("first") else {}),
        }
    return out


def run(
    spec: RunSpec,
    pythons: tuple[Path, Path],
    folder: Path,
    say: Callable[[str], None] = lambda message: None,
    name: Callable[[str], str] | None = None,
) -> model.TeamRun:
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
            if (
                team_files.settle(before, keep)
                and keep is not None
                and label != "baseline-repeat"
                and not label.startswith(NOISE)
            ):
                settled.append(keep.name)

    try:
        result = _runs(spec, pythons, folder, _Around(say, after), name)
        if len(result["runs"]) == 3 and result["outcome"] != "not-verified":
            members, table = _noise(spec, pythons[0], folder, _Around(say, after), result)
            if table is not None:  # judged again, against the run's own rounding noise
                _judge(result, result["traces"], spec, name, table)
            _witnessed(result, folder, members, pythons[0])
            within = result.get("within_budget") or {}
            if result["outcome"] in ("diverged", "broke") or (within.get("calls") and not within.get("shadow_only")):
                births(result, folder, name, lambda: _replayed(spec, pythons, folder, _Around(say, after), result))
        result.pop("traces", None)
        result.pop("isolations", None)
        result.pop("memories", None)
        result.pop("first_differs", None)
    finally:  # an interrupted run too: the folder is put back before the gate stops
        shutil.rmtree(folder / "team-run-baseline-repeat-files", ignore_errors=True)
        for kept in folder.glob(f"team-run-{NOISE}*-files"):
            shutil.rmtree(kept, ignore_errors=True)
        if before is not None:
            team_files.settle(before, None)
            team_files.discard(before)
    if before is not None and before.changed:
        changed, existed, lost = before.changed, before.existed, before.not_restored
        result["wrote"] = {
            "files": changed[:10],
            "count": len(changed),
            "existed": existed[:10],
            "kept": settled,
            "not_restored": lost[:10],
        }
        if (
            result["outcome"] == "not-verified"
            and result["reason"].startswith("the team's run is not deterministic")
            and lost
        ):
            result["reason"] += (
                f"; your command wrote {', '.join(lost[:3])} in its folder, too large for the gate to put "
                "back between the runs: a run that reads what the run before it wrote differs from it "
                "(point its outputs elsewhere)"
            )
        back = (
            f"{len(lost)} of them could not be put back and hold the last run's output "
            f"({', '.join(lost[:3])}), the others are as they were before the gate"
            if lost
            else "each run started from your folder as it was before the gate, and it is so again"
        )
        say(
            f"--run: your command wrote {len(changed)} file(s) in {spec.run_dir} ({', '.join(changed[:3])}"
            f"{', …' if len(changed) > 3 else ''}); {back}"
            + (f"; the runs' outputs are in {folder}/{' and '.join(settled)}" if settled else "")
        )
    elif before is None:
        say(
            f"--run: {spec.run_dir} holds more than {team_files.WATCHED_FILES} files: what your command "
            "writes there is not looked at, nor put back"
        )
    return cast(model.TeamRun, result)  # the working record's traces, isolations and memories left out above


def _witnessed(
    result: dict[str, Any], folder: Path, members: list[str] | None = None, python: Path | None = None
) -> None:
    """Add the second witness (``witness.witness``: the runs' output and the
    files they wrote, compared without the recorder) to a compared run: a run
    the recorder found the same whose outputs differ beyond the budget
    diverged (its outputs are the evidence: ``outcome`` ``diverged``,
    ``witnessed``: the first differing output); it never reads "computes the same"."""
    from optax_gate.gate.team_run import witness

    seen = witness.witness(
        folder, result["runs"], result.get("budget_ulps") or divergence.budget(1), members or [], python
    )
    result["witness"] = seen
    if seen["differs"] and result["outcome"] == "same":
        result["outcome"] = "diverged"
        result["witnessed"] = seen["first"]


def births(result: dict[str, Any], folder: Path, name: Callable[[str], str] | None, replay: Callable[[], None]) -> None:
    """Where the run's difference is born (``result["born"]``): when some step
    the team transformed differs at its first call, the command runs once
    more on each side with the replays on (``replay``: :func:`_replayed`; then :func:`_born`);
    when every step's first call is the same, each is born ``later``, at the
    call where it first differs, and nothing is replayed (a replay is of a
    first call: the corpus' nnx_mlp_adam, 1 ULP apart from step 8, read of an
    operation that did not make the difference)."""
    firsts = {
        k: v for k, v in (result.get("first_differs") or {}).items() if divergence.transformed(k.partition("@")[0])
    }
    if any(v == 1 for v in firsts.values()):
        replay()
        _born(result, folder, name)
    elif firsts:
        result["born"] = [
            {
                "function": k.partition("@")[0],
                "site": name(k.partition("@")[2]) if name else k.partition("@")[2],
                "kind": "later",
                "call": v,
            }
            for k, v in firsts.items()
        ]


def _replayed(spec: RunSpec, pythons: tuple[Path, Path], folder: Path, around: _Around, result: dict[str, Any]) -> None:
    """Run the command once more on each side with the equation-by-equation
    replays on (``recorder/replay.py``: a compilation per operation, so only
    when a difference is to be traced to its birth); their traces go to
    ``team-run-{baseline,candidate}-replay/`` (``result["replay_runs"]``)."""
    rows = []
    for label, python in (("baseline-replay", pythons[0]), ("candidate-replay", pythons[1])):
        around.say(
            f"--run: the team's command in the {label.split('-')[0]} again, its step replayed operation by "
            "operation to find where the difference is born"
        )
        rows.append(command.run_once(spec, python, label, folder))
        around.after(label)
    result["replay_runs"] = [{k: r[k] for k in ("label", "exit", "seconds", "timed_out", "error")} for r in rows]


def _born(result: dict[str, Any], folder: Path, name: Callable[[str], str] | None) -> None:
    """Add where the run's difference is born (``birth.birth`` over the
    two sides' equation-by-equation replays of the functions the team
    transformed): ``born``, its sites named by ``name``."""
    rows = birth.birth(
        *(birth.read_replays(folder / f"team-run-{label}-replay") for label in ("baseline", "candidate"))
    )
    rows = [r for r in rows if r["kind"] != "unknown"] or rows
    firsts = result.pop("first_differs", {}) or {}
    for row in rows:  # the replay is of the first call: it tells the birth only if that call's results already differ
        at = firsts.get(f"{row['function']}@{row['site']}")
        if row["kind"] not in ("before", "unknown", "path") and at is not None and at > 1:
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


@dataclasses.dataclass(frozen=True)
class _Around:
    """What :func:`_runs` calls around each run of the command: ``say`` before
    it (the console), ``after(label)`` once it has ended (the team's folder put back)."""

    say: Callable[[str], None]
    after: Callable[[str], None]


def _runs(
    spec: RunSpec, pythons: tuple[Path, Path], folder: Path, around: _Around, name: Callable[[str], str] | None
) -> dict[str, Any]:
    """:func:`run`'s runs and comparison."""
    result: dict[str, Any] = {
        "command": spec.command,
        "run_dir": str(spec.run_dir),
        "runs": [],
        "outcome": "not-verified",
        "reason": "",
        "compared": 0,
        "differing": 0,
        "first": None,
        "divergences": [],
        "causes": [],
        "sites": [],
        "raised_at": "",
    }
    traces = {}
    inputs = folder / "team-run-isolated-inputs"  # the baseline's inputs of the Optax calls each side runs alone
    shutil.rmtree(inputs, ignore_errors=True)
    result["isolations"] = {}
    result["memories"] = {}
    for label, python in (("baseline", pythons[0]), ("baseline-repeat", pythons[0]), ("candidate", pythons[1])):
        around.say(f"--run: the team's command in the {label.replace('-repeat', ' (again, for determinism)')}")
        alone = {
            ISOLATE_IN: str(inputs.resolve()),
            **({ISOLATE_OUT: str(inputs.resolve())} if label == "baseline" else {}),
        }
        row = command.run_once(spec, python, label, folder, alone)
        around.after(label)
        try:
            traces[label] = trace.read(folder / row["trace"])
            result["isolations"][label] = isolated.read(folder / row["trace"])
            result["memories"][label] = memory.read(folder / row["trace"])
        except (OSError, ValueError) as exc:
            row["error"] = row["error"] or f"its trace cannot be read: {exc}"
            traces[label] = []
        row["calls"] = len(traces[label])
        result["runs"].append(row)
        if label == "baseline" and (command.run_failed(row) or not traces[label]):
            result["reason"] = (
                f"the team's run fails in the baseline ({command.exit_reason(row)}; it ran in {spec.run_dir}: "
                "--run-dir sets the folder)"
                if command.run_failed(row)
                else "the team's run records no Optax call from the team's files (is --run-dir the team's folder?)"
            )
            return result
        if label == "baseline-repeat":
            again = renamed(divergence.compare(traces["baseline"], traces[label]), name)
            if command.run_failed(row) or again["differing"]:
                first = again["first"]
                result["reason"] = "the team's run is not deterministic: " + (
                    f"its two baseline runs differ first at {first['site']} {first['call']}: "
                    f"{'; '.join(first['texts'])}"
                    if first
                    else f"the second baseline run fails ({command.exit_reason(row)})"
                )
                return result
    cand = result["runs"][-1]
    if cand["timed_out"] or (cand["exit"] is None and cand["error"]):
        result["reason"] = f"the team's run in the candidate: {cand['error']}"
        return result
    if not traces["candidate"] and not command.run_failed(
        cand
    ):  # the run went through, yet the recorder saw nothing of it
        said = [line for line in cand["tail"].splitlines() if "sitecustomize" in line or "optax_gate" in line][:2]
        result["reason"] = (
            "the recorder recorded no call of your run in the candidate, which ran to its end: the recorder "
            "did not start there" + (f" ({'; '.join(s.strip() for s in said)[:300]})" if said else "")
        )
        return result
    result["traces"] = traces
    _judge(result, traces, spec, name)
    return result


def _judge(
    result: dict[str, Any],
    traces: dict[str, list[dict[str, Any]]],
    spec: RunSpec,
    name: Callable[[str], str] | None,
    noise: Any = None,
) -> None:
    """Compare the baseline's trace with the candidate's (``noise``: the ensemble's spreads, ``ensemble.spreads``)
    and set the run's outcome from it and the candidate's exit status."""
    cand = result["runs"][-1]
    alone = result.get("isolations") or {}
    found = isolated.compare(alone.get("baseline") or {}, alone.get("candidate") or {})
    diff = renamed(
        isolated.causes(
            found, divergence.compare(traces["baseline"], traces["candidate"], LISTED, noise, spec.warnings_differ)
        ),
        name,
    )
    result["isolated"] = {
        **found,
        "differ": [{**row, "site": name(row["site"]) if name else row["site"]} for row in found["differ"]],
    }
    sized = result.get("memories") or {}
    if sized.get("baseline"):
        grown = memory.compare(sized["baseline"], sized.get("candidate") or {})
        for key in ("grew", "shrank"):
            grown[key] = [{**row, "site": name(row["site"]) if name else row["site"]} for row in grown[key]]
        result["memory"] = grown
    longest = max(Counter((o["site"], o["api"], o["call"], o["phase"]) for o in traces["baseline"]).values(), default=1)
    result["budget_ulps"] = divergence.budget(longest)  # the witness judges the run's outputs as after its longest loop
    result.update(
        {
            k: diff[k]
            for k in (
                "compared",
                "differing",
                "first",
                "divergences",
                "causes",
                "sites",
                "within_budget",
                "compared_by",
            )
        }
    )
    if diff["warned"]:
        result["warned"] = diff["warned"]
    result["first_differs"] = diff[
        "first_differs"
    ]  # keyed by sites as the recorder names them: read by _born, then dropped
    called = sorted({str(o["site"]) for o in traces["baseline"] if o.get("site")})[:CALLED]
    missing = sorted(
        set(called) - {str(o["site"]) for o in traces["candidate"] if o.get("site")}
    )  # a run that failed first
    result.update(renamed({"called": called, **({"not_in_candidate": missing} if missing else {})}, name))
    if name is not None:  # the folder the sites' names are relative to: compare --team-run names them anew from another
        from optax_gate.gate.inputs import usage_files

        result["named_from"] = usage_files.user_folder()
    if command.run_failed(cand):
        result["outcome"] = "broke"
        result["raised_at"] = command.raised_at(cand["tail"], spec.run_dir)
        if name is not None and result["raised_at"]:
            result["raised_at"] = name(result["raised_at"])
        result["failure"] = command.exit_reason(cand) + (
            f", raised at {result['raised_at']}" if result["raised_at"] else ""
        )
        result["reason"] = f"your run fails in the candidate ({result['failure']})"
    elif diff["differing"]:
        result["outcome"] = "diverged"
    elif not diff["compared_by"]["value"]:  # nothing computed was compared: no evidence that it computes the same
        result["reason"] = (
            f"no value of your run could be compared: {no_values(diff['compared_by'])} (claims are made only "
            "of what was compared by value)"
        )
    else:
        result["outcome"] = "same"


#: The label prefix of the ensemble's runs (``baseline-noise-1``, ...).
NOISE = "baseline-noise-"


def _noise(spec: RunSpec, python: Path, folder: Path, around: _Around, result: dict[str, Any]) -> tuple[list[str], Any]:
    """Measure the run's own rounding noise when the candidate is not bit for bit the baseline: the command
    :attr:`RunSpec.members` more times in the baseline, each perturbed (``optax_gate.recorder.perturb``, seed 1, 2,
    ...), or their runs kept from an earlier gate (:func:`ensemble_cache.cached_members`). Sets ``result["ensemble"]``;
    returns the
    members' labels (their logs and files are read by the witness) and the spreads of the baseline's recorded
    leaves over them (``ensemble.spreads``; the candidate's trace is judged against them), ``([], None)`` when
    none ran or they cannot be used (the ULP budget alone judges)."""
    from optax_gate.gate.team_run import witness

    traces = result.get("traces")

    if spec.members <= 0 or traces is None or result["outcome"] not in ("same", "diverged"):
        if spec.members <= 0 and traces is not None:
            result["ensemble"] = {"members": 0, "used": False, "why": "--exact: the ULP budget alone"}
        return [], None
    plain = witness.witness(folder, result["runs"], result.get("budget_ulps") or divergence.budget(1), [], python)
    within = result.get("within_budget") or {}
    moved = plain["output"]["within_budget"] or plain["files"]["within_budget"]
    if not (result["differing"] or within.get("calls") or plain["differs"] or moved):
        return [], None  # bit for bit the same: no rounding to tell apart
    labels = [f"{NOISE}{i}" for i in range(1, spec.members + 1)]
    key = ensemble_cache.ensemble_key(spec, python)
    cached = ensemble_cache.cached_members(spec.cache, key, labels, folder)
    rows: list[dict[str, Any]] = []
    if cached:
        around.say(
            f"--run: your run's own rounding noise: the {len(labels)} perturbed baseline runs kept from an "
            f"earlier gate ({spec.cache})"
        )
    else:
        for i, label in enumerate(labels, 1):
            around.say(
                f"--run: the team's command in the baseline, perturbed by one ULP ({i} of {len(labels)}: your "
                "run's own rounding noise)"
            )
            rows.append(command.run_once(spec, python, label, folder, {PERTURB_ENV: str(i)}))
            around.after(label)
    failed = [r for r in rows if command.run_failed(r)]
    summary: dict[str, Any] = {
        "members": len(labels),
        "cached": cached,
        "seconds": round(sum(r["seconds"] for r in rows), 1),
        "used": False,
    }
    if failed:
        summary["why"] = (
            f"a perturbed baseline run failed ({command.exit_reason(failed[0])}): the ULP budget alone judges"
        )
        result["ensemble"] = summary
        return [], None
    try:
        members = [trace.read(folder / f"team-run-{label}") for label in labels]
    except (OSError, ValueError) as exc:
        summary["why"] = f"a perturbed baseline run's trace cannot be read ({exc}): the ULP budget alone judges"
        result["ensemble"] = summary
        return [], None
    if not cached:
        ensemble_cache.store_members(spec.cache, key, labels, folder)
    table = ensemble.spreads(traces["baseline"], members)
    summary.update(ensemble.summary(table, len(labels)), used=True, cached=cached)
    result["ensemble"] = summary
    return labels, table


#: The outcomes a recorded team run may hold (see the module docstring).
OUTCOMES = ("same", "diverged", "broke", "not-verified")
