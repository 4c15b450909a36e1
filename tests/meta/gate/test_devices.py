"""The multi-device contracts run in a process of their own: the flag, the
folder, who sets them, and how the gate merges the two pytest processes."""

import types
from pathlib import Path
from typing import Any

import pytest

from optax_gate.gate.inputs.options import EnvironmentOptions
from optax_gate.gate.run import devices, outcomes, pytest_process, runner

ROOT = Path(__file__).resolve().parents[3]


def test_env_adds_the_device_count_and_keeps_other_xla_flags() -> None:
    assert devices.env({})["XLA_FLAGS"] == "--xla_force_host_platform_device_count=8"
    env = devices.env({"PATH": "/bin", "XLA_FLAGS": "--xla_dump_to=x --xla_force_host_platform_device_count=2"})
    assert env == {"PATH": "/bin", "XLA_FLAGS": "--xla_dump_to=x --xla_force_host_platform_device_count=8"}


def test_is_multidevice() -> None:
    assert devices.is_multidevice("tests/contracts/multidevice")
    assert devices.is_multidevice("tests/contracts/multidevice/test_data_parallel.py")
    assert not devices.is_multidevice("tests/contracts/test_sgd.py")
    assert not devices.is_multidevice("tests/contracts/multidevice_other")


def test_the_single_device_process_ignores_the_folder_unless_named(tmp_path: Path) -> None:
    from tests.contracts import conftest

    root = ROOT
    folder = root / devices.MULTIDEVICE_DIR

    def config(*args: Any) -> Any:
        return types.SimpleNamespace(rootpath=root, args=list(args), invocation_params=types.SimpleNamespace(dir=root))

    assert conftest.pytest_ignore_collect(folder, config("tests/contracts")) is True
    assert conftest.pytest_ignore_collect(folder, config()) is True
    assert conftest.pytest_ignore_collect(folder, config(devices.MULTIDEVICE_DIR)) is None
    assert (
        conftest.pytest_ignore_collect(folder, config(f"{devices.MULTIDEVICE_DIR}/test_sharded_state.py::test_x"))
        is None
    )
    assert conftest.pytest_ignore_collect(root / "tests" / "contracts" / "test_sgd.py", config()) is None


def _env(root: Any) -> Any:
    return EnvironmentOptions(
        project_root=root, baseline_lock=root / "requirements-lock.txt", python="py", envs_dir=root, timeout=100
    )


def _part(folder: Any, code: Any, *contracts: Any, errors: Any = ()) -> Any:
    log = outcomes.ReportLog(
        contracts={c: outcomes.ContractOutcome(c, "api", "guide", "golden", "passed") for c in contracts},
        collection_errors=list(errors),
    )
    return pytest_process.Part(folder, code, "last line", log)


def test_run_merges_the_two_processes_into_one_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def fake_pytest(call: Any, timeout: Any, on_progress: Any, stop: Any = None) -> Any:
        calls.append((call.name, call.folder, call.env.get("XLA_FLAGS", "")))
        return _part(call.folder, 1 if "multi" in call.folder else 0, f"{call.folder}::t")

    monkeypatch.setattr(runner, "probe", lambda python: ({"jax": "0.11.2"}, None, [], {}))
    monkeypatch.setattr(pytest_process, "run_pytest", fake_pytest)
    monkeypatch.delenv("XLA_FLAGS", raising=False)
    record = runner.run(Path("py"), "baseline", tmp_path, _env(tmp_path)).to_json()
    assert sorted(calls) == [
        ("baseline", "tests/contracts", ""),
        ("baseline.multidevice", devices.MULTIDEVICE_DIR, devices.FLAG),
    ]
    assert record["status"] == "ran" and record["exitstatus"] == 1
    assert sorted(record["contracts"]) == [f"{devices.MULTIDEVICE_DIR}::t", "tests/contracts::t"]


def test_run_fails_closed_when_the_multidevice_process_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "probe", lambda python: ({}, None, [], {}))
    monkeypatch.setattr(
        pytest_process, "run_pytest", lambda call, *a: None if "multi" in call.folder else _part(call.folder, 0, "a")
    )
    record = runner.run(Path("py"), "candidate", tmp_path, _env(tmp_path)).to_json()
    assert (
        record["status"] == "not-verified"
        and "timed out" in record["reason"]
        and devices.MULTIDEVICE_DIR in record["reason"]
    )
    monkeypatch.setattr(
        pytest_process, "run_pytest", lambda call, *a: _part(call.folder, 4 if "multi" in call.folder else 0, "a")
    )
    record = runner.run(Path("py"), "candidate", tmp_path, _env(tmp_path)).to_json()
    assert record["status"] == "not-verified" and record["reason"].startswith(
        f"pytest ({devices.MULTIDEVICE_DIR}) ended with exit status 4"
    )


def test_merge_problems() -> None:
    ok = [_part("a", 0, "x"), _part("b", 1, "y")]
    assert pytest_process.merge_problems(ok) == ""
    assert "exit status 5" in pytest_process.merge_problems([_part("a", 0, "x"), _part("b", 5)])
    assert pytest_process.merge_problems([_part("a", 0, "x"), _part("b", 5)], selected=True) == ""
    assert pytest_process.merge_problems([_part("a", 0, "x", errors=["b: boom"])]).startswith(
        "collection errors: b: boom"
    )


def test_a_side_alone_uses_xdists_count_of_the_machines_cores_capped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A side that has the machine to itself (a warm gate for a new candidate) asks pytest-xdist for one process
    per physical core (``-n auto``, which honours ``$PYTEST_XDIST_AUTO_NUM_WORKERS``), at most
    ``runner.MAX_WORKERS``; the multi-device process is never split; two sides at once run one process each."""
    from optax_gate.gate import sides

    calls = {}

    def fake_pytest(call: Any, timeout: Any, on_progress: Any, stop: Any = None) -> Any:
        calls[call.folder] = call.pytest_args
        return _part(call.folder, 0, f"{call.folder}::t")

    monkeypatch.setattr(pytest_process, "run_pytest", fake_pytest)
    with_xdist: Any = ({"jax": "0.11.2", "pytest-xdist": "3.8.0"}, None, [], {})
    runner.run(
        Path("py"),
        "candidate",
        tmp_path,
        _env(tmp_path),
        runner.ContractRunOptions(workers=sides.ALONE_WORKERS),
        probed=with_xdist,
    )
    args = list(calls["tests/contracts"])
    assert args[args.index("-n") + 1] == "auto" and args[args.index("--maxprocesses") + 1] == str(runner.MAX_WORKERS), (
        args
    )
    assert "-n" not in calls[devices.MULTIDEVICE_DIR]
    for one in (0, 1):  # two sides at once: one process each, no xdist
        runner.run(
            Path("py"), "candidate", tmp_path, _env(tmp_path), runner.ContractRunOptions(workers=one), probed=with_xdist
        )
        assert "-n" not in calls["tests/contracts"]
    runner.run(
        Path("py"), "candidate", tmp_path, _env(tmp_path), runner.ContractRunOptions(workers=3), probed=with_xdist
    )
    assert list(calls["tests/contracts"])[-4:] == ["-n", "3", "--dist", "worksteal"]
