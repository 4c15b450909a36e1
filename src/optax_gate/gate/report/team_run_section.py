"""The "Your code" section of report.md (``gate --run``): the team's run,
traced on both sides (``optax_gate.gate.team_run.recording``), opens the report.

One line per affected line of the team's code (a call that caused a
divergence, in execution order): the Optax calls there, what changed (an
exception that appears, a dtype, a shape, values beyond the ULP budget with the
largest error), and the findings on the same APIs that explain it (linked to
``#f<N>``, with the upstream commit ``--bisect`` found for each); then the count of later calls that differ as a
consequence, the
runs' exit statuses and times. A run that could not be verified says why.
"""

from __future__ import annotations

import re

from optax_gate.gate.base import model, plain_text
from optax_gate.gate.report import bisect_section as report_bisect
from optax_gate.gate.report import team_run_output
from optax_gate.gate.report.table_cell import cell
from optax_gate.gate.team_run import birth_words, judging

#: Changes listed per affected line.
SHOWN = 4


def _commits(finding: model.Finding) -> str:
    """The upstream commit(s) ``--bisect`` found for a finding (``, changed by optax 7a58a58f ...``; a
    range by its size, its commits under the finding), or "" without a bisection."""
    out = []
    for entry in finding.get("bisect") or []:
        package = f"{entry['package']} " if entry.get("package") else ""
        if entry.get("status") == "found":
            out.append(report_bisect.words(entry, markdown=True))
        elif entry.get("status") == "range":
            out.append(f"changed by {package}one of {len(entry.get('commits') or [])} commits")
    return "".join(f", {w}" for w in out)


_WORD = re.compile(r"[A-Za-z_]\w{2,}")


def _leading(cause: str, seen: str) -> str:
    """The part of a finding's cause that speaks of what the team's line
    shows: ``float64 results have …; optimizer state bfloat16 → float32:
    .acc_grads …`` on a line whose ``acc_grads`` turned float32 reads
    ``optimizer state bfloat16 → float32: .acc_grads … (and 1 other change
    of this finding)``. Parts are the ``; ``-joined pieces of the cause; the
    one sharing the most words with ``seen`` (ties: the first) leads, then the
    parts sharing more than half as many; the others are counted, not said
    (a bfloat16 line never reads "float64 results have float32-sized
    errors", a part about other inputs). A line sharing no word
    keeps the whole cause, in its order."""
    parts = cause.split("; ")
    if len(parts) < 2 or not seen:
        return cause
    words = set(_WORD.findall(seen))
    shared = [len(words & set(_WORD.findall(p))) for p in parts]
    best = max(range(len(parts)), key=lambda i: (shared[i], -i))
    if not shared[best]:
        return cause
    kept = [best] + [i for i in range(len(parts)) if i != best and 2 * shared[i] > shared[best]]
    left = len(parts) - len(kept)
    return "; ".join(parts[i] for i in kept) + (
        f" (and {left} other change{'s' if left > 1 else ''} of this finding)" if left else ""
    )


def finding_words(report: model.Report, numbers: list[int], seen: str = "") -> str:
    """The findings that explain a line of the team's run (``seen``: what the
    line shows), each its cause cut to 160 characters, leading with the part
    that speaks of what the line shows (:func:`_leading`)."""
    by_number = {f.get("number"): f for f in report.get("findings") or []}
    words = []
    for n in numbers[:SHOWN]:
        f = by_number.get(n)
        if f is not None:
            cause = _leading(f["cause"], seen) if f.get("cause") else f.get("text") or f.get("change")
            words.append(f"[F{n}](#f{n}) {plain_text.cut(cell(cause), 160)}" + _commits(f))
    more = f" and {len(numbers) - SHOWN} more" if len(numbers) > SHOWN else ""
    return "; ".join(words) + more


def _witness(team: model.TeamRun) -> list[str]:
    """The second witness in words (the run's own outputs, compared without
    the recorder): what was compared, and the first output that differs."""
    seen = team.get("witness")
    if not seen:
        return []
    out, files = seen["output"], seen["files"]
    compared = (
        f"{out['lines']} line(s) of output"
        + (f" ({out['noise']} left out: they differ between the two baseline runs)" if out["noise"] else "")
        + f" and {files['files']} file(s) it wrote"
        + (f" ({files['noise']} left out, likewise{_left_out(files.get('noise_files'))})" if files["noise"] else "")
        + (
            f"; {files['checkpoint_folders']} of them Orbax checkpoint folder(s), each one output read as arrays"
            if files.get("checkpoint_folders")
            else ""
        )
    )
    if seen["differs"]:
        return [
            "",
            f"**Your run's own outputs differ** (the second witness, without the recorder: {compared}): "
            f"{cell(seen['first'])}.",
        ]
    within = out["within_budget"] + files["within_budget"]
    return [
        "",
        f"Your run's own outputs (the second witness, without the recorder: {compared}) are the same"
        + (f", {within} within {_beyond(team)}, not bit for bit" if within else "")
        + ".",
    ]


def _left_out(names: list[str] | None) -> str:
    """``: `a`, `b``` for the outputs left out, or "" for a report that does not list them."""
    return (": " + ", ".join(f"`{cell(n)}`" for n in names[:3]) + (" …" if len(names) > 3 else "")) if names else ""


def noise_words(team: model.TeamRun) -> str:
    """How the run was judged against its own rounding noise (``team_run.ensemble``), in words; "" when the candidate
    was bit for bit the baseline (no ensemble was needed) or the report predates it."""
    noise = team.get("ensemble")
    if not noise:
        return ""
    if not noise.get("used"):
        return f"Judged by the ULP budget alone: {noise.get('why', 'no ensemble')}."
    runs = (
        f"{noise['members']} perturbed baseline runs ("
        + ("kept from an earlier gate" if noise.get("cached") else f"{noise.get('seconds', 0):.0f} s")
        + ")"
    )
    moved = f"the perturbation moved the values of {noise['reached']} of {noise['calls']} recorded calls"
    within, witness = team.get("within_budget"), team.get("witness")
    output = witness["output"].get("noise_ratio") if witness else None
    ratios = [r for r in (within.get("noise_ratio") if within else None, output) if r is not None]
    if team.get("outcome") == "same":
        largest = (
            f"largest deviation {max(ratios):.2g}x the spread of {runs}"
            if ratios
            else f"every difference within the ULP budget beside {runs}"
        )
        return (
            f"**Consistent with your run's own rounding noise**: {largest}; {moved}. A value is rounding when it lies "
            f"within {noise['factor']}x its spread over those runs (one ULP of the state each step starts "
            "from, seeded); "
            "a value they leave bit-identical keeps the ULP budget, and a discrete change (an exception, a "
            "dtype, a shape, "
            "the structure, an integer, NaN or inf) is never rounding."
        )
    return (
        f"Judged against your run's own rounding noise ({runs}; {moved}): what is named above lies beyond "
        f"{noise['factor']}x its spread there, or changed a dtype, a shape, the structure, an integer, NaN or "
        "inf, which rounding never does."
    )


def alone_words(team: model.TeamRun) -> str:
    """What the Optax calls run alone on the baseline's own inputs gave (``team_run.isolated``), in words; "" when
    none was run alone (the report predates it, or no step's first call made an Optax call the recorder could run
    alone)."""
    alone = team.get("isolated")
    calls, differ, why = (alone["calls"], alone["differ"], alone["skipped"]) if alone else (0, [], {})
    skipped = sum(why.values())
    if not calls and not skipped:
        return ""
    not_run = (
        f" ({skipped} not run alone: " + "; ".join(f"{n} {reason}" for reason, n in list(why.items())[:2]) + ")"
        if skipped
        else ""
    )
    if not differ:
        return (
            f"**Optax computes the same on identical inputs**: each of the {calls} Optax call(s) of your "
            "steps' first calls "
            "and first eager calls, run alone on the baseline's own inputs in both environments, gives the "
            f"same results{not_run}."
        )
    named = "; ".join(f"`{cell(r['site'])}` `{cell(r['call'])}`: {cell(r['texts'][0])}" for r in differ[:SHOWN])
    return (
        f"**Optax computes something else on identical inputs**: {len(differ)} of {calls} Optax call(s), run "
        "alone on the "
        f"baseline's own inputs in both environments: {named}{not_run}."
    )


def warned_lines(team: model.TeamRun) -> list[str]:
    """The calls of the team's whose only difference is a warning that appears or disappears, each at its line,
    with what to do (they do not set the verdict: ``team_run.warned``)."""
    out = []
    for row in (team.get("warned") or [])[:SHOWN]:
        out.append(
            f"`{cell(row['site'])}` `{cell(row['call'])}`: {cell('; '.join(row['texts'][:2]))} — a warning "
            "only, your run "
            "computes the same there: it does not set the verdict (it would where your run turns warnings into "
            "errors, `-W error`, or with `--fail-on-new-deprecations`); follow what it says before the "
            "release that acts on it"
        )
    more = len(team.get("warned") or []) - SHOWN
    return out + (
        [f"and {more} more call(s) whose only change is a warning (report.json `team_run.warned`)"] if more > 0 else []
    )


def memory_lines(team: model.TeamRun) -> list[str]:
    """The compiled memory of the team's steps (``team_run.memory``): each figure that grew (it sets the verdict)
    or shrank beyond the tolerance, at its line; when every step is within it, each step's figures."""
    from optax_gate.gate.team_run import memory
    from optax_gate.kit.tolerances import MEMORY_ATOL, MEMORY_RTOL

    found = team.get("memory")
    if not found or not found["steps"]:
        return []
    rule = (
        f"a figure has changed when it moves by more than {MEMORY_RTOL:.0%} of the baseline's and by more than "
        f"{MEMORY_ATOL:,} bytes"
    )
    out = [
        f"**Needs more memory**: `{cell(memory.words(r))}` — it can run out of memory where the baseline did not, "
        "whatever its values: check the step's headroom on the accelerator you train on before upgrading "
        f"(this sets the verdict; {rule})"
        for r in found["grew"][:SHOWN]
    ]
    out += [
        f"Needs less memory: `{cell(memory.words(r))}` (nothing to do; it does not set the verdict)"
        for r in found["shrank"][:SHOWN]
    ]
    if not out:
        measured = found.get("measured") or []
        steps = "; ".join(f"`{cell(memory.figures_words(r))}`" for r in measured[:SHOWN])
        where = {r.get("backend") for r in measured} - {""}
        steps = steps or f"each of your {found['steps']} jitted step(s)"
        compiled = f" (compiled for {', '.join(sorted(where))}, as on this machine)" if where else ""
        out.append(f"Compiled memory the same: {steps}, in the baseline and the candidate{compiled}; {rule}.")
    return out


def _not_judged(team: model.TeamRun) -> str:
    """The files the runs wrote that differ by their bytes in a format the gate does not read as values."""
    witness = team.get("witness")
    names = (witness["files"].get("not_judged") or []) if witness else []
    if not names:
        return ""
    shown = ", ".join(f"`{cell(n)}`" for n in names[:SHOWN]) + (
        f" and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
    )
    return (
        f"Not judged: {shown} differ by their bytes in a format the gate does not read as values (they do not set "
        "the verdict)."
    )


def _how_compared(team: model.TeamRun) -> str:
    """How the run's calls were compared, counted: by value (at which lines), by structure only, not at all, and why."""
    by = team.get("compared_by")
    if by is None:  # a report written before the calls were counted by how they were compared
        return f"{team.get('compared', 0)} calls compared"
    sites = by.get("value_sites") or []
    text = (
        f"{by['value']} call(s) compared by value (at "
        f"{', '.join(f'`{cell(s)}`' for s in sites[:SHOWN])}{' …' if len(sites) > SHOWN else ''})"
    )
    from optax_gate.gate.team_run import divergence

    why = by.get("why") or {}
    for count, label, keys in (
        (by.get("structure"), "by structure only", ("built", "traced", "traced-unrecorded")),
        (by.get("none"), "not at all", ("record-error", "one-side")),
    ):
        if count:
            reasons = "; ".join(f"{why[k]}: {divergence.WHY[k]}" for k in keys if why.get(k))
            text += f", {count} {label}" + (f" ({reasons})" if reasons else "")
    return text


def bits(team: model.TeamRun) -> str:
    """Whether the compared results are bit for bit the same: a team that
    checks golden digests of its params wants to know (a float32 Adam run
    whose params move by up to 96 ULP per element under a new JAX does not
    read only "computes the same")."""
    within = team.get("within_budget")
    if within is None:
        return "whether its results are bit for bit the same was not recorded (a report written before 2026-12-02)"
    if not within["calls"]:
        return "every result is bit for bit the same"
    if within.get("shadow_only") and within.get("kept_max_ulps") is None:  # only inside the recorder's copy of the step
        return (
            f"every result your program gives is bit for bit the same; inside your transformed functions, the "
            "recorder's copy of them (compiled with host callbacks, which XLA fuses otherwise) gives "
            f"{within['calls']} "
            f"call(s) results that are not bit-identical, at most {within['max_ulps']:.3g} ULP: not your program's"
        )
    sites = ", ".join(f"`{s}`" for s in within["sites"][:SHOWN]) + (" …" if len(within["sites"]) > SHOWN else "")
    out = (
        f"but not bit for bit: {within['calls']} call(s) give results that are not bit-identical, none judged beyond "
        f"{_beyond(team)} (largest difference {within['max_ulps']:.3g} ULP of a leaf's largest value; a call "
        "whose inputs "
        f"already differed is not judged on its values), at {sites}"
    )
    first = within.get("first")
    born = [r for r in team.get("born") or [] if r["kind"] != "unknown"]
    if born:  # replayed equation by equation: where it is born, said (JAX/XLA, Optax, Flax, the team's code)
        out += f"; where it is born: {birth_words.born_words(born[0])}"
    elif first and first["inputs_differ"]:  # other inputs (a jax.random change) are not Optax's arithmetic
        out += (
            f"; the difference is born before any Optax call: the first that gives other results, `{first['site']}` "
            f"`{first['call']}`, already gets other inputs, from code that is not an Optax call (JAX, e.g. jax.random; "
            "the model; the data)"
        )
    if within.get("sampled"):  # the error of a leaf stored as a sample is the sample's: say so
        out += (
            f"; {within['sampled']} of these call(s) hold leaves stored as a sample (one element in k) that differ: "
            "their error is measured on the sample, a larger one elsewhere in the leaf is seen by its digest, not "
            "measured"
        )
    if within.get("kept_max_ulps") is not None:
        out += (
            "; the results you keep (what your transformed functions return, the params an update gives) differ "
            f"by at most {within['kept_max_ulps']:.3g} ULP"
        )
    return out


def _against_noise(team: model.TeamRun) -> bool:
    """Whether the run was judged against its own rounding noise (the ensemble was used)."""
    ensemble = team.get("ensemble")
    return bool(ensemble and ensemble["used"])


def _beyond(team: model.TeamRun) -> str:
    """What a value of the run is judged against, in words: its own rounding noise or the ULP budget."""
    return "your run's own rounding noise (below)" if _against_noise(team) else "the ULP budget"


def section(report: model.Report) -> list[str]:
    """Markdown lines of the "Your code" section; empty without ``--run``."""
    team = report.get("team_run")
    if not team:
        return []
    runs = team.get("runs") or []
    timing = ", ".join(
        f"{r['label']} exit {r['exit'] if r['exit'] is not None else '—'} in {r['seconds']:.1f} s, "
        f"{r.get('calls', 0)} calls"
        for r in runs
    )
    labels = {r["label"] for r in runs}
    where = "in both environments" if "candidate" in labels else "in the baseline only (the gate stopped there)"
    replays = team.get("replay_runs") or []
    again = (
        (
            "; then once more on each side, its step replayed operation by operation to find where the difference is "
            "born ("
            + ", ".join(
                f"{r['label']} exit {r['exit'] if r['exit'] is not None else '—'} in {r['seconds']:.1f} s"
                for r in replays
            )
            + ")"
        )
        if replays
        else ""
    )
    out = [
        "",
        "## Your code",
        "",
        f"`{cell(team['command'])}` in `{cell(team['run_dir'])}`, traced {where} ({timing}){again}.",
    ]
    wrote = team.get("wrote")
    if wrote:
        out += ["", team_run_output.wrote_words(team, wrote, runs)]
    outcome = team.get("outcome")
    if outcome == "not-verified":
        return [
            *out,
            "",
            f"**Not verified**: {cell(team.get('reason'))}",
            "",
            *team_run_output.output_tail(runs[-1:] if runs else []),
            "",
        ]
    if outcome == "same":
        noise = _against_noise(team)
        return [
            *out,
            "",
            f"**Your run computes the same{', up to rounding' if noise else ''}** in the candidate: "
            f"{_how_compared(team)}, "
            f"none differs beyond {_beyond(team)}, no exception or warning appears or disappears; {bits(team)}.",
            *_witness(team),
            *[x for line in (noise_words(team), alone_words(team), _not_judged(team)) if line for x in ("", line)],
            *[f"- {line}" for line in warned_lines(team)],
            *[x for line in memory_lines(team) for x in ("", line)],
            "",
        ]
    out.append("")
    if outcome == "broke":
        out.append(f"**Your run fails in the candidate**: {cell(team.get('failure') or team.get('reason'))}")
        out += ["", *team_run_output.output_tail([r for r in runs if r["label"] == "candidate"]), ""]
    for line in team.get("affected") or []:
        changes = line["changes"][:SHOWN] + (
            [f"{len(line['changes']) - SHOWN} more"] if len(line["changes"]) > SHOWN else []
        )
        text = f"- `{line['site']}` {', '.join(f'`{c}`' for c in line['calls'])}: {cell('; '.join(changes))}"
        if line.get("findings"):
            text += f" — explained by {finding_words(report, line['findings'], ' '.join(line['changes']))}"
        out.append(text)
    consequences = team.get("differing", 0) - len(team.get("causes") or [])
    if consequences > 0:
        out.append(f"- then {consequences} later call(s) differ as a consequence (report.json `team_run.divergences`)")
    first = team.get("first")
    if first:
        out.append(
            f"- first divergence: `{first['site']}` `{first['call']}` ({first['phase']}, occurrence "
            f"{first['occurrence']})"
        )
    eager = birth_words.eager_births(team)
    for words in eager:
        out.append(f"- where it is born: {cell(words)}")
    for row in team.get("born") or []:
        out.append(
            f"- where it is born{' in the steps you transformed' if eager else ''}: "
            f"{cell(birth_words.born_words(row, bool(eager)))}"
        )
    out += [f"- {line}" for line in _witness(team) if line]
    out += [f"- {line}" for line in (noise_words(team), alone_words(team), _not_judged(team)) if line]
    out += [f"- {line}" for line in warned_lines(team)]
    out += [f"- {line}" for line in memory_lines(team)]
    same = judging.unchanged(team)
    if same and same["dtypes_only"]:
        out.append(
            "- **in dtypes only**: every differing call above computes the same values (0 ULP), and no other call's "
            "results differ by a bit: what changes is the memory and the saved format of what changed dtype, not what "
            "your run computes"
        )
    if same and same["lines"]:
        lines = ", ".join(f"`{s}`" for s in same["lines"][:SHOWN]) + (
            f" and {len(same['lines']) - SHOWN} more" if len(same["lines"]) > SHOWN else ""
        )
        out.append(f"- computes bit for bit the same at your other lines that call Optax: {lines}")
    return [*out, ""]
