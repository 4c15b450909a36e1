"""Issue 17, item 5: a matrix run is never quiet for long (a progress line at
least every ``--heartbeat`` seconds per running environment), says when the
baseline comes from the cache, and ``--fail-on broken|changed`` gives a
scheduled job an exit status to act on. Fake environments and a fake package
index, as in ``test_matrix.py``."""

import itertools
import json
import re
import time
from pathlib import Path
from typing import Any, TextIO, cast

import pytest

from optax_gate.gate import cli, sides_prepare
from optax_gate.gate.base import progress
from optax_gate.gate.base.heartbeat import Heartbeat
from optax_gate.gate.base.run_record import RunRecord
from optax_gate.gate.install import environments
from optax_gate.gate.matrix import discovery
from optax_gate.gate.matrix import plan as matrix
from optax_gate.gate.run import runner
from tests.meta.support.matrix_fakes import REQUIREMENTS_IN, contract_run, fake_fetch
from tests.meta.support.records import record


@pytest.fixture
def fake_matrix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Fake index, resolver, installs and contract runs: each environment runs
    10 contracts, says 3/10 early, then is quiet for ``quiet`` seconds."""
    monkeypatch.setattr(discovery, "fetch_json", fake_fetch)
    monkeypatch.setattr(
        environments, "compile_lock", lambda req_in, out, *a, **k: out.write_text(req_in.read_text()) and out
    )
    monkeypatch.setattr(environments, "ensure", lambda *a, **k: tmp_path / "python")
    state: dict[str, Any] = {"quiet": 0.0, "outcomes": {"baseline": "passed"}, "ran": []}
    recorded = contract_run(state["outcomes"])  # the tests add outcomes to state["outcomes"]

    def fake_run(
        python: Any,
        label: Any,
        out_dir: Any,
        env: Any,
        how: Any = None,
        on_progress: Any = None,
        probed: Any = None,
        **extra: Any,
    ) -> Any:
        state["ran"].append(label)
        if on_progress:
            on_progress(0, 0)  # still collecting
            on_progress(3, 10)
        time.sleep(state["quiet"])
        return recorded(python, label, out_dir, env, **extra)

    monkeypatch.setattr(runner, "run", fake_run)
    # the import check runs before the contracts (a side that cannot import stops at once): it passes here
    monkeypatch.setattr(
        runner, "probe", lambda python, timeout=300: ({"python": "3.12", "optax": "0.2.6"}, None, [], {})
    )
    req_in = tmp_path / "requirements.in"
    req_in.write_text(REQUIREMENTS_IN)
    # --cache-dir: never the project's own cache, where a real gate's baseline entry (same lock, same inputs)
    # served the fake baseline and its contracts never ran (seen after a real gate on this checkout)
    state["args"] = [
        "--out",
        str(tmp_path / "m"),
        "--requirements-in",
        str(req_in),
        "--no-speed",
        "--cache-dir",
        str(tmp_path / "cache"),
    ]
    return state


def test_a_running_environment_says_how_far_it_got_at_least_every_heartbeat(
    fake_matrix: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_matrix["quiet"] = 1.0
    fake_matrix["outcomes"]["optax-0.2.8"] = "passed"
    assert (
        cli.main(["matrix", "--only", "baseline", "--only", "optax-0.2.8", "--heartbeat", "0.2", *fake_matrix["args"]])
        == 0
    )
    err = capsys.readouterr().err
    for name in ("baseline", "optax-0.2.8"):  # per running environment, while its contracts run
        beats = re.findall(rf"\[ *([\d.]+) s\] {re.escape(name)}: 3/10 contracts \(still running\)", err)
        assert len(beats) >= 2, err
    stamps = [float(t) for t in re.findall(r"optax-gate \[ *([\d.]+) s\]", err)]
    assert max(b - a for a, b in itertools.pairwise(stamps)) < 0.2 + 0.5  # never quiet much past the heartbeat
    assert "environment 1 of 2" in err and "environment 2 of 2" in err


def test_no_heartbeat_between_environments_or_after_the_run() -> None:
    lines = []

    class Sink:
        def write(self, text: Any) -> None:
            lines.append(text)

        def flush(self) -> None:
            pass

    with Heartbeat(every=0.05, stream=cast(TextIO, Sink())) as say:
        say("optax-0.2.8: building (or reusing) its environment")
        time.sleep(0.3)
        say.idle()
        n = len(lines)
        time.sleep(0.3)
    assert any("building (or reusing) its environment (still running)" in line for line in lines)
    assert len(lines) == n  # idle: quiet
    with pytest.raises(ValueError):
        Heartbeat(every=0)


def test_the_console_says_the_baseline_was_taken_from_the_cache(
    fake_matrix: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cached = {
        **record(golden_a="passed"),
        "label": "baseline",
        "from_cache": {"key": "a1b2c3", "recorded": "2026-12-01T02:00:00Z"},
    }

    def look_up(
        side: Any, lock: Any, args: Any, say: Any
    ) -> None:  # every contract module of the baseline found in the cache
        side.record = RunRecord.from_json({**cached, **side.extra})

    monkeypatch.setattr(sides_prepare, "look_up", look_up)
    assert cli.main(["matrix", "--only", "baseline", *fake_matrix["args"]]) == 0
    out = capsys.readouterr().out
    assert "optax-gate: baseline: ran  — baseline taken from the cache (a1b2c3, recorded 2026-12-01T02:00:00Z)" in out
    assert fake_matrix["ran"] == []  # no contract ran
    assert cli.main(["matrix", "--merge", *fake_matrix["args"][:2]]) == 0  # no --fail-on: the report is written
    report = fake_matrix["args"][1] + "/report.md"
    assert "taken from the cache `a1b2c3`, recorded 2026-12-01T02:00:00Z" in Path(report).read_text(encoding="utf-8")


def merge_with(tmp_path: Path, runs: Any) -> None:
    envs, found = matrix.plan(REQUIREMENTS_IN, fetch=fake_fetch)
    (tmp_path / "runs").mkdir(exist_ok=True)
    (tmp_path / "plan.json").write_text(json.dumps({"discovered": found, "environments": [e.to_json() for e in envs]}))
    (tmp_path / "runs" / "baseline.json").write_text(json.dumps(record(golden_a="passed", snapshot_s="passed")))
    for name in [e.name for e in envs]:
        run = runs.get(name, record(golden_a="passed", snapshot_s="passed"))
        (tmp_path / "runs" / f"{name}.json").write_text(json.dumps(run))


@pytest.mark.parametrize(
    ("runs", "fail_on", "status", "met"),
    [
        ({}, None, 0, []),
        ({}, "broken", 0, []),
        ({"optax-0.2.8": record(golden_a="failed", snapshot_s="passed")}, None, 0, []),  # without --fail-on: as before
        ({"optax-0.2.8": record(golden_a="failed", snapshot_s="passed")}, "broken", 1, ["optax-0.2.8"]),
        (
            {"jax-0.12.0": record(golden_a="passed", snapshot_s="failed")},
            "broken",
            0,
            [],
        ),  # a snapshot drift is changed
        ({"jax-0.12.0": record(golden_a="passed", snapshot_s="failed")}, "changed", 1, ["jax-0.12.0"]),
        ({"optax-0.2.7": record("not-verified", "import failed: X")}, "broken", 2, []),  # fail closed
        (
            {
                "optax-0.2.7": record("not-verified", "import failed: X"),
                "all-newest": record(golden_a="failed", snapshot_s="passed"),
            },
            "changed",
            1,
            ["all-newest"],
        ),
    ],
)
def test_fail_on_gives_a_scheduled_job_an_exit_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], runs: Any, fail_on: Any, status: Any, met: Any
) -> None:
    merge_with(tmp_path, runs)
    assert (
        cli.main(["matrix", "--merge", "--out", str(tmp_path), *(["--fail-on", fail_on] if fail_on else [])]) == status
    )
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["exit"]["status"] == status and report["exit"]["met_by"] == met
    out = capsys.readouterr().out
    assert f"optax-gate: exit {status}: " in out
    text = (tmp_path / "report.md").read_text()
    assert f"**Exit status {status}**" in text


def test_a_baseline_that_did_not_run_is_exit_2_whatever_fail_on_says(tmp_path: Path) -> None:
    merge_with(tmp_path, {})
    (tmp_path / "runs" / "baseline.json").write_text(json.dumps(record("not-verified", "install failed")))
    assert cli.main(["matrix", "--merge", "--out", str(tmp_path), "--fail-on", "broken"]) == 2
    assert cli.main(["matrix", "--merge", "--out", str(tmp_path)]) == 2


def test_fail_on_is_refused_where_no_report_is_judged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["matrix", "--only", "baseline", "--fail-on", "broken", "--out", str(tmp_path)]) == 2
    assert "--fail-on judges the merged report" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["matrix", "--merge", "--fail-on", "everything", "--out", str(tmp_path)])


def test_the_scheduled_workflow_fails_on_broken() -> None:
    from pathlib import Path

    text = (Path(__file__).parents[3] / ".github" / "workflows" / "matrix.yml").read_text()
    assert "./noxw -s matrix -- --merge --fail-on broken" in text


def test_progress_lines_from_two_threads_never_glue() -> None:
    """The two sides print their progress from two threads: each line is written whole (print() writes a
    line's text and its newline apart), never glued as in "baseline: running the contractsoptax-gate
    [ 33.5 s] candidate: running the contracts"."""
    import io
    import threading

    class Slow(io.StringIO):
        def write(self, text: Any) -> Any:  # a stream that lets the other thread run within a write, as a pipe may
            for ch in text:
                super().write(ch)
                time.sleep(0)
            return len(text)

    stream = Slow()
    say = progress.Progress(stream)

    def write_lines(side: str) -> None:
        for i in range(100):
            say(f"{side}: line {i}")

    threads = [threading.Thread(target=write_lines, args=(side,)) for side in ("baseline", "candidate")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 200 and all(line.count("optax-gate [") == 1 for line in lines)
