"""The "Speed" section of the gate report, and its plot.

:func:`section` renders ``report["speed"]`` (``optax_gate.gate.speed.readings.measure``)
as Markdown: one row per set-up and metric with the baseline's and the
candidate's median and range of repeats, the ratio candidate / baseline with
its interval, the noise band measured in the same run, and the change
(``unchanged`` = within noise, ``changed``, ``broken`` only under
``--speed-budget``). :func:`write_plot` draws ``speed.svg`` beside the report
with matplotlib (from the tools environment; imported only there, so the gate
half still imports no NumPy at module level): for each set-up, box plots of
the baseline's and the candidate's repeats, step time and compile time side by
side. Without matplotlib the section says the plot is missing and why.
"""

from __future__ import annotations

from pathlib import Path

from optax_gate.gate.base import model
from optax_gate.gate.speed import readings

PLOT_FILE = "speed.svg"
SIDES = ("baseline", "candidate")
COLOURS = {"baseline": "#4575b4", "candidate": "#d73027"}


def _seconds(value: float, metric: str) -> str:
    return f"{value * 1e6:.0f} µs" if metric == "step_s" else f"{value * 1e3:.0f} ms"


def _side(stats: model.Timing, metric: str) -> str:
    return f"{_seconds(stats['median'], metric)} ({_seconds(stats['low'], metric)}–{_seconds(stats['high'], metric)})"


def section(report: model.Report) -> list[str]:
    """Markdown lines of the Speed section; none when the report has no speed result."""
    result: model.Speed | None = report.get("speed")
    if not result:
        return []
    out = ["## Speed", ""]
    if result.get("status") != "measured":
        return [*out, f"Not measured: {result.get('reason') or 'no reason recorded'}.", ""]
    s = result.get("summary", {})
    budget = result.get("budget")
    out.append(
        f"Three training steps timed in both environments, interleaved on this machine "
        f"({result['rounds']} compile rounds, {result['rounds'] * result.get('step_slots', 1)} step-time slots, "
        f"{result.get('duration_s', 0):.0f} s): {s.get('changed', 0)} changed, {s.get('broken', 0)} broken, "
        f"{s.get('unchanged', 0)} within noise"
        + (
            f"; **from cache**: measured {result['from_cache']['recorded']} by an earlier gate of the same "
            "two environments"
            if result.get("from_cache")
            else ""
        )
        + (
            f"; budget: a step slower than x{budget:g} is broken"
            if budget is not None
            else "; informational (`--speed-budget X` makes a step slower than xX broken)"
        )
        + "."
    )
    out += [
        "",
        "Step: steady-state seconds per training step (median of the repeats, range in brackets); compile: "
        "`jax.jit(step).lower(...).compile()`, persistent compilation cache off. Ratio: candidate / baseline, "
        "with the interval over paired slots; a reading changes only when that interval lies outside the noise "
        "band, the spread both environments show against themselves in this run.",
        "",
    ]
    if result.get("plot"):
        out += [f"![baseline and candidate step and compile times per set-up]({result['plot']})", ""]
    elif result.get("plot_missing"):
        out += [f"(no plot: {result['plot_missing']})", ""]
    out += [
        "| set-up | metric | baseline | candidate | ratio (interval) | noise band | change |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in readings.rows(result):
        if r["change"] == "not-measured":
            out.append(f"| {r['setup']} | {r['metric_words']} | — | — | — | — | not measured: {r['detail']} |")
            continue
        lo, hi = r["interval"]
        change = r["change"] + (f", {r['direction']}" if r.get("direction") else "")
        out.append(
            f"| {r['setup']} ({r['setup_words']}) | {r['metric_words']} | {_side(r['baseline'], r['metric'])} | "
            f"{_side(r['candidate'], r['metric'])} | x{r['ratio']:.2f} ({lo:.2f}–{hi:.2f}) | "
            f"{r['noise'][0]:.2f}–{r['noise'][1]:.2f} | "
            f"{'**' + change + '**' if r['change'] != 'unchanged' else 'within noise'} |"
        )
    return [*out, ""]


def _repeats(result: model.Speed, side: str, setup: str, metric: str) -> list[float]:
    return [x for answer in result["raw"][side] for x in answer.get(setup, {}).get(metric, [])]


def write_plot(result: model.Speed, folder: Path) -> str | None:
    """Draw ``speed.svg`` into ``folder``; return its file name, or None (and
    set ``result["plot_missing"]``) when matplotlib is missing or nothing was
    measured. The SVG is reproducible (fixed ids, no date) and keeps its text as text."""
    if result.get("status") != "measured":
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        result["plot_missing"] = f"matplotlib is not installed here ({exc})"
        return None
    matplotlib.rcParams.update({"svg.hashsalt": "optax-gate-speed", "svg.fonttype": "none", "font.size": 8})
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.2), layout="constrained")
    scale = {"step_s": (1e6, "step time (µs)"), "compile_s": (1e3, "compile time (ms)")}
    for ax, metric in zip(axes, readings.METRICS, strict=True):
        factor, label = scale[metric]
        positions, data, colours = [], [], []
        for i, setup in enumerate(readings.SETUPS):
            for j, side in enumerate(SIDES):
                positions.append(3 * i + j + 1)
                data.append([x * factor for x in _repeats(result, side, setup, metric)] or [float("nan")])
                colours.append(COLOURS[side])
        boxes = ax.boxplot(
            data, positions=positions, widths=0.7, patch_artist=True, showfliers=True, flierprops={"markersize": 2}
        )
        for patch, colour in zip(boxes["boxes"], colours, strict=True):
            patch.set_facecolor(colour)
            patch.set_alpha(0.6)
        ax.set_xticks([3 * i + 1.5 for i in range(len(readings.SETUPS))], list(readings.SETUPS))
        ax.set_ylabel(label)
        ax.set_yscale("log")
        ax.grid(axis="y", alpha=0.3)
    handles = [plt.Rectangle((0, 0), 1, 1, color=COLOURS[s], alpha=0.6) for s in SIDES]
    axes[0].legend(handles, SIDES, loc="upper left")
    fig.savefig(Path(folder) / PLOT_FILE, format="svg", metadata={"Date": None})
    plt.close(fig)
    result["plot"] = PLOT_FILE
    return PLOT_FILE


def matrix_cell(result: model.Speed | None) -> str:
    """One environment's speed readings in a few words, for the matrix's grid:
    the changed (or broken) readings with their ratios, else the largest step
    ratio "within noise"; "not measured" with the reason."""
    if not result:
        return "not measured (--no-speed)"
    if result.get("status") != "measured":
        return f"not measured: {result.get('reason') or 'no reason recorded'}"
    rows = readings.rows(result)
    moved = [r for r in rows if r["change"] in ("changed", "broken")]
    if moved:
        return " · ".join(f"{r['change']}: {r['setup']} {r['metric_words']} x{r['ratio']:.2f}" for r in moved)
    steps = [r for r in rows if r["metric"] == "step_s" and r["change"] == "unchanged"]
    if not steps:
        return "not measured"
    far = max(steps, key=lambda r: abs(r["ratio"] - 1))
    return (
        f"within noise (step times x{min(r['ratio'] for r in steps):.2f}–x{max(r['ratio'] for r in steps):.2f}; "
        f"{far['setup']} furthest)"
    )
