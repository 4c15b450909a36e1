"""Speed drift: the candidate's training steps timed against the baseline's, in the same run, on the same
machine, interleaved.

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import json
import math
import os
import queue
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Literal

from optax_gate.gate.base import model
from optax_gate.gate.inputs.options import SpeedOptions
from optax_gate.kit.environment.reach_names import VARIABLE as REACH_VARIABLE

MODULE = "optax_gate.kit.environment.speed"
PREFIX = "@speed"
SETUPS = ("nnx-sgd-momentum", "adamw-multisteps", "scan-20")
METRICS: tuple[Literal["step_s", "compile_s"], ...] = ("step_s", "compile_s")
METRIC_WORDS = {"step_s": "step time", "compile_s": "compile time"}
SETUP_WORDS = {
    "nnx-sgd-momentum": "NNX MLP, nnx.Optimizer(sgd, momentum 0.9)",
    "adamw-multisteps": "MultiSteps(clip_by_global_norm + adamw, warmup-cosine)",
    "scan-20": "lax.scan of 20 adamw/MultiSteps steps",
}
#: Default compile rounds (each side compiles every set-up once per round).
ROUNDS = 3
#: Step-time slots per compile round (1 + this many minus 1 ``steps`` requests).
STEP_SLOTS = 3
#: Smallest half-width of the noise band, as a ratio: two processes of the same
#: environment differ by a few per cent (memory layout, which core), and a
#: change below this is nothing a team acts on.
NOISE_FLOOR = 1.10
#: Wanted coverage of the ratio's interval (reached from 5 slots on).
COVERAGE = 0.90
#: Seconds a worker may take to start (import, warm-up) or to answer one request.
START_TIMEOUT = 300.0
ANSWER_TIMEOUT = 300.0


class SpeedFailure(Exception):
    """A worker could not start, crashed, or did not answer in time."""


# ----------------------------------------------------------------- statistics


def order_k(n: int, coverage: float = COVERAGE) -> tuple[int, float]:
    """``(k, achieved coverage)`` of the sign-test interval ``[x_(k), x_(n-k+1)]``
    of the median of ``n`` independent values: the largest ``k`` whose coverage
    ``1 - 2 P(Binomial(n, 1/2) < k)`` is at least ``coverage``, else 1."""
    k, achieved = 1, 1 - 2 * 0.5**n
    for j in range(2, n // 2 + 1):
        cov = 1 - 2 * sum(math.comb(n, i) for i in range(j)) / 2**n
        if cov < coverage:
            break
        k, achieved = j, cov
    return k, achieved


def sign_test_interval(values: list[float], coverage: float = COVERAGE) -> tuple[float, float, float]:
    """``(low, high, achieved coverage)``: the order-statistics confidence
    interval of the median of ``values`` (no assumption on their distribution
    beyond independence). Raises ValueError on no values."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    k, achieved = order_k(len(ordered), coverage)
    return ordered[k - 1], ordered[len(ordered) - k], achieved


def spread_ratio(values: list[float], k: int = 1) -> float:
    """Largest / smallest of ``values`` once the ``k - 1`` most extreme on each
    side are set aside (the same trimming as the interval's)."""
    ordered = sorted(values)
    return ordered[len(ordered) - k] / ordered[k - 1]


def judge(
    baseline: list[list[float]],
    candidate: list[list[float]],
    metric: Literal["step_s", "compile_s"] = "step_s",
    budget: float | None = None,
    setup: str = "",
) -> model.SpeedReading:
    """One reading from paired slots.

    Args:
      baseline, candidate: per slot, the repeats (seconds) of each side;
        slot ``i`` of both was measured next to each other in time. Same
        number of slots (>= 2), none empty.
      metric: ``step_s`` or ``compile_s`` (only the step time can be ``broken``).
      budget: the ``--speed-budget`` ratio, or None.
      setup: the set-up timed (one of :data:`SETUPS`), kept in the reading.

    Returns:
      ``{"setup", "metric", "change", "direction", "ratio", "interval": [lo, hi], "coverage",
      "noise": [lo, hi], "slots", "baseline": {median, low, high, n},
      "candidate": {...}, "detail"}`` (see the module docstring); ``low`` and
      ``high`` are the smallest and largest repeat.

    Raises:
      ValueError: slots missing, empty or unpaired.
    """
    if len(baseline) != len(candidate) or len(baseline) < 2 or not all(baseline) or not all(candidate):
        raise ValueError(f"need >= 2 paired non-empty slots, got {len(baseline)} and {len(candidate)}")
    b_slots = [statistics.median(s) for s in baseline]
    c_slots = [statistics.median(s) for s in candidate]
    b_all = [x for s in baseline for x in s]
    c_all = [x for s in candidate for x in s]
    ratio = statistics.median(c_all) / statistics.median(b_all)
    lo, hi, coverage = sign_test_interval([c / b for b, c in zip(b_slots, c_slots, strict=False)])
    k, _ = order_k(len(b_slots))
    width = max(NOISE_FLOOR, spread_ratio(b_slots, k), spread_ratio(c_slots, k))
    noise = (1 / width, width)
    direction: Literal["", "slower", "faster"] = "slower" if lo > width else "faster" if hi < 1 / width else ""
    change: Literal["broken", "changed", "unchanged"] = "changed" if direction else "unchanged"
    words = METRIC_WORDS.get(metric, metric)
    detail = (
        f"{words} x{ratio:.2f} ({lo:.2f}-{hi:.2f}, {coverage:.0%} interval over {len(b_slots)} slots); noise band "
        f"{noise[0]:.2f}-{noise[1]:.2f}"
    )
    detail = f"{direction}: " + detail if direction else "within noise: " + detail
    if budget is not None and metric == "step_s" and direction == "slower" and lo > budget:
        change = "broken"
        detail += f"; slower than the budget x{budget:g}"

    def spread(xs: list[float]) -> model.Timing:
        return {"median": statistics.median(xs), "low": min(xs), "high": max(xs), "n": len(xs)}

    return {
        "setup": setup,
        "metric": metric,
        "change": change,
        "direction": direction,
        "ratio": ratio,
        "interval": [lo, hi],
        "coverage": coverage,
        "noise": list(noise),
        "slots": len(b_slots),
        "baseline": spread(b_all),
        "candidate": spread(c_all),
        "detail": detail,
    }


def readings(raw: dict[str, list[dict[str, Any]]], budget: float | None = None) -> list[model.SpeedReading]:
    """Every set-up x metric judged from the workers' answers.

    Args:
      raw: ``{"baseline": [answer, ...], "candidate": [answer, ...]}``, answer
        ``k`` of both sides forming slot ``k``; an answer is
        ``{setup: {metric: [seconds, ...]}}`` (``compile_s`` present only in
        compile rounds).
      budget: see :func:`judge`.
    """
    out: list[model.SpeedReading] = []
    for setup in SETUPS:
        for metric in METRICS:
            pairs = [
                (b[setup][metric], c[setup][metric])
                for b, c in zip(raw["baseline"], raw["candidate"], strict=False)
                if metric in b.get(setup, {}) and metric in c.get(setup, {})
            ]
            try:
                out.append(judge([p[0] for p in pairs], [p[1] for p in pairs], metric, budget, setup=setup))
            except ValueError as exc:
                out.append(
                    {"setup": setup, "metric": metric, "change": "not-measured", "detail": f"not measured: {exc}"}
                )
    return out


def summarise(readings: list[model.SpeedReading]) -> dict[str, int]:
    """``{change: count}`` over the readings."""
    counts = {k: 0 for k in ("broken", "changed", "unchanged", "not-measured")}
    for r in readings:
        counts[r["change"]] = counts.get(r["change"], 0) + 1
    return counts


# ------------------------------------------------------------------- workers


class Worker:
    """One ``--serve`` process of ``optax_gate.kit.environment.speed`` (or ``module``) in an environment."""

    def __init__(
        self,
        label: str,
        python: Path,
        project_root: Path,
        module: str = MODULE,
        extra_env: dict[str, str] | None = None,
    ):
        self.label = label
        self.stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8")  # noqa: SIM115 (the server's, closed with it)
        env = {**{k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}, **(extra_env or {})}
        try:
            self.proc = subprocess.Popen(
                [str(python), "-m", module, "--serve"],
                cwd=project_root,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self.stderr,
                text=True,
                bufsize=1,
            )
        except OSError as exc:
            self.stderr.close()
            raise SpeedFailure(f"{label}: cannot start {python}: {exc}") from None
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(PREFIX + " "):
                self.lines.put(line[len(PREFIX) + 1 :])
        self.lines.put(None)

    def _why(self) -> str:
        self.stderr.seek(0)
        tail = [ln.strip() for ln in self.stderr.read().strip().splitlines() if ln.strip()][-3:]
        return f"{self.label}: " + (" | ".join(tail) or "no output")

    def answer(self, timeout: float) -> dict[str, Any]:
        """The next ``@speed`` line, parsed. Raises SpeedFailure."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise SpeedFailure(f"{self.label}: no answer within {timeout:.0f} s") from None
        if line is None:
            self.proc.wait()
            raise SpeedFailure(f"worker ended (exit {self.proc.returncode}): {self._why()}")
        data: dict[str, Any] = json.loads(line)
        if "error" in data:
            raise SpeedFailure(f"{self.label}: {data['error']}")
        return data

    def ask(self, command: str, timeout: float = ANSWER_TIMEOUT) -> dict[str, Any]:
        """Send ``command`` to the worker and return its round of readings.

        Raises:
          SpeedFailure: the worker cannot be reached, ended, said an error or did not answer within ``timeout``."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()
        except OSError as exc:
            raise SpeedFailure(f"{self.label}: cannot reach the worker ({exc}): {self._why()}") from None
        answered: dict[str, Any] = self.answer(timeout)["round"]
        return answered

    def close(self) -> None:
        """Ask the worker to quit, and kill it when it does not within 10 s."""
        try:
            if self.proc.poll() is None and self.proc.stdin:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            pass
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.stderr.close()


def measure(
    baseline_python: Path,
    candidate_python: Path,
    project_root: Path,
    options: SpeedOptions | None = None,
    *,
    modules: tuple[str, str] = (MODULE, MODULE),
    reach_file: Path | None = None,
) -> model.Speed:
    """Time both environments' set-ups interleaved and judge every reading.

    Args:
      baseline_python, candidate_python: the environments' interpreters.
      project_root: folder the workers run in (this project's).
      options: ``rounds``, compile rounds (>= 2; step times get ``rounds x
        STEP_SLOTS`` slots; default :data:`ROUNDS`); ``budget``,
        ``--speed-budget``: a step slower than this ratio is ``broken``.
      modules: the worker module of each side (tests plant a slowdown with a
        wrapper module of their own).
      reach_file: where the baseline's worker writes what its set-ups execute
        (``$OPTAX_GATE_REACH``; ``gate.run.reach_record.read`` reads it); None: not recorded.

    Returns:
      ``{"status": "measured" | "not-measured", "reason", "rounds",
      "step_slots", "budget", "duration_s", "baseline": <worker header>,
      "candidate": <worker header>, "raw": {"baseline": [answer...],
      "candidate": [...]}, "readings": [judged rows], "summary"}``. Never
      raises for a worker's failure: that is ``not-measured`` with the reason.
    """
    options = options or SpeedOptions(enabled=True, rounds=ROUNDS)
    rounds, budget = options.rounds, options.budget
    if rounds < 2:
        raise ValueError(f"rounds must be at least 2, got {rounds}")
    start = time.monotonic()
    raw: dict[str, list[dict[str, Any]]] = {"baseline": [], "candidate": []}
    headers: dict[str, dict[str, Any]] = {"baseline": {}, "candidate": {}}
    status: Literal["measured", "not-measured"] = "not-measured"
    reason, judged = "", []
    workers: dict[str, Worker] = {}
    try:
        # Both start (import JAX, warm up) at once: nothing is timed yet.
        for side, python, module in (
            ("baseline", baseline_python, modules[0]),
            ("candidate", candidate_python, modules[1]),
        ):
            asked = {REACH_VARIABLE: str(reach_file)} if reach_file is not None and side == "baseline" else None
            workers[side] = Worker(side, python, project_root, module, asked)
        for side, worker in workers.items():
            headers[side] = worker.answer(START_TIMEOUT)["ready"]
        for r in range(rounds):
            order = ("baseline", "candidate") if r % 2 == 0 else ("candidate", "baseline")
            for command in ("round", *["steps"] * (STEP_SLOTS - 1)):
                for side in order:
                    raw[side].append(workers[side].ask(command))
        status = "measured"
        judged = readings(raw, budget)
    except SpeedFailure as exc:
        reason = str(exc)
    except BaseException:  # Ctrl-C, the gate's SIGTERM: stop the workers now, no polite quit, and pass it on
        for worker in workers.values():
            worker.proc.kill()
        raise
    finally:
        for worker in workers.values():
            worker.close()
    return {
        "status": status,
        "reason": reason,
        "rounds": rounds,
        "step_slots": STEP_SLOTS,
        "budget": budget,
        "baseline": headers["baseline"],
        "candidate": headers["candidate"],
        "raw": raw,
        "readings": judged,
        "duration_s": round(time.monotonic() - start, 1),
        "summary": summarise(judged),
    }


def not_measured(reason: str, budget: float | None = None) -> model.Speed:
    """A speed result for a run where nothing could be timed (e.g. the candidate did not install)."""
    return {"status": "not-measured", "reason": reason, "budget": budget, "readings": [], "summary": summarise([])}


def rows(result: model.Speed | None) -> list[dict[str, Any]]:
    """Report rows, one per set-up x metric: ``{setup, setup_words, metric,
    metric_words, change, ratio, interval, noise, baseline, candidate,
    detail}``; empty when not measured."""
    if not result:
        return []
    return [
        {
            **r,
            "setup_words": SETUP_WORDS.get(r["setup"], r["setup"]),
            "metric_words": METRIC_WORDS.get(r["metric"], r["metric"]),
        }
        for r in result.get("readings", [])
    ]


def worst(result: model.Speed | None) -> str:
    """The most severe change of a speed result: ``broken`` > ``changed`` >
    ``unchanged``; ``not-measured`` when nothing was judged."""
    changes = {r["change"] for r in (result["readings"] if result else [])}
    for change in ("broken", "changed", "unchanged"):
        if change in changes:
            return change
    return "not-measured"
