"""Speed drift readings (``optax_gate.gate.speed.readings``), their report section
(``gate.report.speed_section``) and the matrix's speed row.

The statistics are checked on synthetic timings (expected changes are known by
construction: a candidate built as 2x the baseline's timings is slower; one
drawn from the same distribution is not). The real check times
``optax_gate.kit.environment.speed`` in this environment at both sides, once with a
planted slowdown (``tests/meta/speed_plant.py``: ``optax.apply_updates`` sleeps
2 ms per step) and once unchanged; it takes minutes on a loaded 2-core machine,
so it runs only with ``OPTAX_GATE_SPEED_CHECK=1``.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest

from optax_gate.gate import assemble
from optax_gate.gate.base.run_record import RunRecord
from optax_gate.gate.judge import compare
from optax_gate.gate.matrix import plan as matrix
from optax_gate.gate.report import markdown as report_markdown
from optax_gate.gate.report import matrix_page as report_matrix
from optax_gate.gate.report import speed_section as report_speed
from optax_gate.gate.speed import readings

ROOT = Path(__file__).resolve().parents[3]


def _slots(
    rng: random.Random, n: int, scale: float = 1e-4, sigma: float = 0.1, repeats: int = 7, factor: float = 1.0
) -> list[list[float]]:
    """``n`` slots of ``repeats`` lognormal timings around ``scale * factor``, each
    slot with a load level of its own (what a shared machine does)."""
    slots = []
    for _ in range(n):
        load = rng.lognormvariate(0, sigma)
        slots.append([scale * factor * load * rng.lognormvariate(0, sigma / 2) for _ in range(repeats)])
    return slots


def _paired(
    seed: int, n: int, factor: float, load_sigma: float = 0.1, **kw: Any
) -> tuple[list[list[float]], list[list[float]]]:
    """Baseline and candidate slots under the same load per slot (interleaving)."""
    rng = random.Random(seed)
    base, cand = [], []
    for _ in range(n):
        load = rng.lognormvariate(0, load_sigma)
        base.append([x * load for x in _slots(rng, 1, **kw)[0]])
        cand.append([x * load for x in _slots(rng, 1, factor=factor, **kw)[0]])
    return base, cand


def test_sign_test_interval_uses_the_order_statistics_of_the_binomial() -> None:
    """n = 3: only min..max, coverage 1 - 2/8 = 0.75; n = 9: k = 2, coverage
    1 - 2 (1 + 9)/512 = 0.9609 (binomial, written out)."""
    assert readings.sign_test_interval([3.0, 1.0, 2.0]) == (1.0, 3.0, 0.75)
    lo, hi, cov = readings.sign_test_interval([float(i) for i in range(1, 10)])
    assert (lo, hi) == (2.0, 8.0) and cov == pytest.approx(1 - 2 * 10 / 512)
    with pytest.raises(ValueError):
        readings.sign_test_interval([])


@pytest.mark.parametrize("n", [3, 9])
def test_a_two_fold_slowdown_is_changed_slower(n: Any) -> None:
    for seed in range(20):
        base, cand = _paired(seed, n, factor=2.0)
        r = readings.judge(base, cand, "step_s")
        assert (r["change"], r["direction"]) == ("changed", "slower"), (seed, r["detail"])
        assert r["interval"][0] > r["noise"][1]
        assert 1.5 < r["ratio"] < 2.7


def test_a_two_fold_speed_up_is_changed_faster() -> None:
    base, cand = _paired(0, 9, factor=0.5)
    r = readings.judge(base, cand, "compile_s")
    assert (r["change"], r["direction"]) == ("changed", "faster")


@pytest.mark.parametrize("n", [3, 9])
def test_equal_distributions_are_within_noise(n: Any) -> None:
    """Same distribution at both sides under a shared per-slot load: no
    ``changed`` in 100 seeded draws for 9 slots; for 3 slots (the compile
    readings) at most 3 (the simulated rate is about 1.3 %)."""
    alarms = [seed for seed in range(100) if readings.judge(*_paired(seed, n, factor=1.0))["change"] != "unchanged"]
    assert len(alarms) <= (0 if n == 9 else 3), alarms


def test_a_heavily_varying_load_widens_the_band_it_does_not_raise_alarms() -> None:
    """Load that changes a lot from slot to slot (sigma 0.3, both sides alike)
    widens each side's own spread, hence the band: the readings lose
    sensitivity (a 1.3x slowdown stays within noise) but raise no alarm."""
    for seed in range(50):
        assert readings.judge(*_paired(seed, 9, factor=1.0, load_sigma=0.3))["change"] == "unchanged"
    r = readings.judge(*_paired(0, 9, factor=1.3, load_sigma=0.3))
    assert r["change"] == "unchanged" and r["noise"][1] > 1.3


def test_a_load_spike_in_one_slot_widens_the_band_instead_of_raising_an_alarm() -> None:
    base, cand = _paired(3, 9, factor=1.0)
    cand[4] = [x * 20 for x in cand[4]]  # another worker took the CPU while the candidate was timed
    r = readings.judge(base, cand, "step_s")
    assert r["change"] == "unchanged", r["detail"]


def test_the_noise_band_never_narrows_below_the_floor() -> None:
    base = [[1e-4] * 5 for _ in range(6)]
    cand = [[1.05e-4] * 5 for _ in range(6)]
    r = readings.judge(base, cand)
    assert r["noise"] == [pytest.approx(1 / readings.NOISE_FLOOR), readings.NOISE_FLOOR]
    assert r["change"] == "unchanged"


def test_a_budget_makes_a_slowdown_beyond_it_broken_and_only_for_the_step_time() -> None:
    base, cand = _paired(1, 9, factor=2.0)
    assert readings.judge(base, cand, "step_s", budget=1.5)["change"] == "broken"
    assert readings.judge(base, cand, "step_s", budget=3.0)["change"] == "changed"  # slower, but within the budget
    assert readings.judge(base, cand, "compile_s", budget=1.5)["change"] == "changed"  # compile time never breaks
    same = _paired(2, 9, factor=1.0)
    assert readings.judge(*same, "step_s", budget=1.01)["change"] == "unchanged"  # noise never breaks


def test_judge_refuses_unpaired_or_empty_slots() -> None:
    with pytest.raises(ValueError):
        readings.judge([[1.0]], [[1.0]])
    with pytest.raises(ValueError):
        readings.judge([[1.0], [1.0]], [[1.0], []])


def _raw(factor: float, rounds: int = 3, step_slots: int = 3, seed: int = 0) -> dict[str, list[Any]]:
    rng = random.Random(seed)
    raw: dict[str, list[Any]] = {"baseline": [], "candidate": []}
    for _r in range(rounds):
        for s in range(step_slots):
            for side, f in (("baseline", 1.0), ("candidate", factor)):
                answer = {}
                for setup in readings.SETUPS:
                    reading = {"step_s": [2e-4 * f * rng.uniform(0.95, 1.05) for _ in range(7)]}
                    if s == 0:
                        reading["compile_s"] = [0.9 * rng.uniform(0.95, 1.05)]
                    answer[setup] = reading
                raw[side].append(answer)
    return raw


def _result(factor: float, budget: float | None = None) -> Any:
    raw = _raw(factor)
    out: Any = {
        "status": "measured",
        "reason": "",
        "rounds": 3,
        "step_slots": 3,
        "budget": budget,
        "duration_s": 21.0,
        "raw": raw,
        "readings": readings.readings(raw, budget),
        "baseline": {},
        "candidate": {},
    }
    out["summary"] = readings.summarise(out["readings"])
    return out


def test_readings_judge_every_setup_and_metric_with_their_slot_counts() -> None:
    result = _result(3.0)
    assert [(r["setup"], r["metric"]) for r in result["readings"]] == [
        (s, m) for s in readings.SETUPS for m in readings.METRICS
    ]
    for r in result["readings"]:
        assert r["slots"] == (9 if r["metric"] == "step_s" else 3)
        assert r["change"] == ("changed" if r["metric"] == "step_s" else "unchanged")
    assert result["summary"] == {"broken": 0, "changed": 3, "unchanged": 3, "not-measured": 0}


def _gate_report(speed_result: Any) -> Any:
    record = {
        "label": "x",
        "status": "ran",
        "versions": {},
        "contracts": {
            "tests/contracts/test_sgd.py::test_a": {
                "api": "optax.sgd",
                "guide": "g",
                "kind": "golden",
                "outcome": "passed",
                "detail": "",
            }
        },
    }
    report = compare.compare(
        RunRecord.from_json({**record, "label": "baseline"}), RunRecord.from_json({**record, "label": "candidate"})
    )
    return assemble.with_speed(report, speed_result)


def test_attach_fails_a_passing_gate_only_for_a_broken_reading() -> None:
    assert _gate_report(_result(3.0))["verdict"] == "pass"  # changed is informational
    report = _gate_report(_result(3.0, budget=1.5))
    assert report["verdict"] == "fail"
    assert any("speed budget x1.5" in reason for reason in report["reasons"])
    assert "speed" not in _gate_report(None)


def test_the_report_has_a_speed_section_with_ratios_intervals_and_bands() -> None:
    text = report_markdown.render(_gate_report(_result(3.0)))
    section = text.split("## Speed", 1)[1]
    assert "3 changed, 0 broken, 3 within noise" in section
    assert "| scan-20 (lax.scan of 20 adamw/MultiSteps steps) | step time | 199 µs (190 µs–210 µs) | 602 µs" in section
    assert "**changed, slower**" in section and "within noise" in section
    assert "--speed-budget" in section
    assert "## Speed" not in report_markdown.render(_gate_report(None))


def test_a_speed_result_that_was_not_measured_says_why() -> None:
    text = report_markdown.render(_gate_report(readings.not_measured("the candidate did not run its contracts")))
    assert "Not measured: the candidate did not run its contracts." in text


def test_the_plot_is_an_svg_beside_the_report(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="matplotlib is in the tools environment (requirements-tools.txt)")
    result: Any = _result(2.0)
    assert report_speed.write_plot(result, tmp_path) == "speed.svg"
    svg = (tmp_path / "speed.svg").read_text(encoding="utf-8")
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    for word in ("step time", "compile time", "baseline", "candidate", *readings.SETUPS):
        assert word in svg
    again = tmp_path / "again"
    again.mkdir()
    report_speed.write_plot(_result(2.0), again)
    assert (again / "speed.svg").read_text(encoding="utf-8") == svg  # reproducible: no date, fixed ids
    assert "![baseline and candidate" in report_markdown.render(_gate_report(result))


def test_the_matrix_has_one_speed_row_with_a_cell_per_environment() -> None:
    base = {
        "label": "baseline",
        "status": "ran",
        "versions": {},
        "contracts": {"t::a": {"api": "optax.sgd", "guide": "g", "kind": "golden", "outcome": "passed", "detail": ""}},
    }
    runs = {
        "optax-0.2.8": {**base, "label": "optax-0.2.8", "speed": _result(3.0)},
        "jax-0.12.0": {**base, "label": "jax-0.12.0", "speed": _result(1.0)},
        "flax-9": {"label": "flax-9", "status": "not-verified", "reason": "install failed", "contracts": {}},
    }
    envs = [{"name": n, "specs": [n], "why": ""} for n in runs]
    report = matrix.merge(
        RunRecord.from_json(base),
        {name: RunRecord.from_json(run) for name, run in runs.items()},
        {"environments": envs, "discovered": {"optax": ["0.2.8"]}},
    )
    md = report_matrix.markdown(report)
    row = next(line for line in md.splitlines() if line.startswith("| speed"))
    assert "changed: nnx-sgd-momentum step time x3." in row and "within noise (step times" in row and "not run" in row
    page = report_matrix.html_grid(report)
    assert page.count('<tr class="speed">') == 1 and 'class="cell speed changed"' in page


@pytest.mark.timeout(1800)
@pytest.mark.skipif(
    os.environ.get("OPTAX_GATE_SPEED_CHECK") != "1",
    reason="times real training steps for minutes; set OPTAX_GATE_SPEED_CHECK=1",
)
def test_a_planted_slowdown_is_changed_and_the_same_environment_is_within_noise() -> None:
    """Real timings, this environment at both sides: ``optax.apply_updates``
    sleeping 2 ms per step makes every step-time reading ``changed, slower``;
    the unmodified environment against itself has no ``changed`` reading."""
    import sys

    python = Path(sys.executable)
    planted = readings.measure(python, python, ROOT, modules=(readings.MODULE, "tests.meta.speed_plant"))
    same = readings.measure(python, python, ROOT)
    print(f"planted: {planted['duration_s']} s {planted['summary']}; same: {same['duration_s']} s {same['summary']}")
    for r in planted["readings"] + same["readings"]:
        print(f"  {r['setup']} {r['metric']}: {r['detail']}")
    assert planted["status"] == same["status"] == "measured", (planted["reason"], same["reason"])
    assert planted["candidate"]["plant"] == "sleep_ms:2" and same["candidate"]["plant"] is None
    for r in planted["readings"]:
        if r["metric"] == "step_s":
            assert (r["change"], r["direction"]) == ("changed", "slower"), r["detail"]
    assert [r["detail"] for r in same["readings"] if r["change"] != "unchanged"] == []


def test_a_worker_that_cannot_start_or_answer_is_not_measured_never_an_error(tmp_path: Path) -> None:
    missing = readings.measure(tmp_path / "no-python", tmp_path / "no-python", ROOT)
    assert missing["status"] == "not-measured" and "cannot start" in missing["reason"]
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\necho 'ImportError: no jax here' >&2\nexit 3\n")
    broken.chmod(0o755)
    ended = readings.measure(broken, broken, ROOT)
    assert ended["status"] == "not-measured" and "no jax here" in ended["reason"]
    assert ended["summary"]["not-measured"] == 0 and ended["readings"] == []
    assert readings.worst(ended) == "not-measured"


def test_a_report_with_speed_readings_fits_the_report_schema() -> None:
    import json

    jsonschema = pytest.importorskip(
        "jsonschema", reason="jsonschema comes with the tools lock (requirements-tools.txt)"
    )
    from optax_gate.gate.report import json_file as report_json

    schema = json.loads(
        (ROOT / "src" / "optax_gate" / "gate" / "report" / "report.schema.json").read_text(encoding="utf-8")
    )
    for result in (_result(3.0, budget=1.5), readings.not_measured("the candidate did not run its contracts")):
        jsonschema.validate(json.loads(report_json.render(_gate_report(result))), schema)
    bad = json.loads(report_json.render(_gate_report(_result(1.0))))
    bad["speed"]["readings"][0]["change"] = "slower"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


def test_an_interruption_stops_the_workers_at_once_and_propagates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C (or the gate's SIGTERM) while the workers start: no worker outlives the speed readings, none is
    waited for, and the interruption reaches the gate's command line (not a not-measured result)."""
    import subprocess
    import sys
    import time

    slow = tmp_path / "slow-python"  # never reads its commands, never answers; its path on its command line
    slow.write_text(f"#!/bin/sh\nexec {sys.executable} -c 'import time; time.sleep(300)' {slow}\n")
    slow.chmod(0o755)

    def interrupted(self: Any, timeout: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(readings.Worker, "answer", interrupted)
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        readings.measure(slow, slow, ROOT)
    assert time.monotonic() - start < 5, "the interrupted gate waited for its speed workers"
    left = subprocess.run(["pgrep", "-f", str(slow)], capture_output=True, text=True).stdout.split()
    assert not left, f"speed workers outlived the interruption: {left}"
