"""The contract results cache (``optax_gate.gate.reuse.results_cache``): results are
stored per contract module for every side; any change that can move an
outcome changes a key (a module's change only its own), a doubtful entry is
re-run, and a gate runs only the modules the cache lacks."""

import ast
import dataclasses
import json
import subprocess
from pathlib import Path
from typing import Any, cast

import pytest

from optax_gate.gate.base.progress import Progress
from optax_gate.gate.base.run_record import RunRecord
from optax_gate.gate.inputs.options import EnvironmentOptions, SpeedOptions
from optax_gate.gate.reuse import results_cache
from optax_gate.gate.speed import readings
from optax_gate.gate.surface import public_api
from tests.meta.support.gate_cli import fake_gate, latest_report
from tests.meta.support.paths import LOCK, ROOT


@pytest.fixture
def project(tmp_path: Path) -> Any:
    root = tmp_path / "project"
    for rel, text in {
        "conftest.py": "# profiles\n",
        "pyproject.toml": "[tool.pytest.ini_options]\n",
        "tests/contracts/test_x.py": "def test_x(): pass\n",
        "tests/contracts/test_y.py": "def test_y(): pass\n",
        "tests/contracts/multidevice/test_m.py": "def test_m(): pass\n",
        "tests/contracts/known_defects.toml": "",
        "tests/contracts/conftest.py": "",
        "src/optax_gate/kit/tolerances.py": "ULPS = 4\n",
        "requirements-lock.txt": "optax==0.2.6 --hash=sha256:aa\n",
        "candidate-lock.txt": "optax==0.2.8 --hash=sha256:bb\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def inputs(root: Any, lock: Any = "requirements-lock.txt", **env: Any) -> Any:
    return results_cache.side_inputs(root / lock, root / "requirements-lock.txt", root, environ=env)


def unit_keys(root: Any, **env: Any) -> Any:
    side = inputs(root, **env)
    return {u.name: results_cache.key(results_cache.unit_inputs(side, u)) for u in results_cache.units(root)}


def test_units_are_the_contract_modules_with_their_snapshots_and_process(project: Any) -> None:
    (project / "tests/contracts/test_x").mkdir()
    (project / "tests/contracts/test_x/test_state.yml").write_text("a: 1\n")
    got = {u.name: u.part for u in results_cache.units(project)}
    assert got == {
        "tests/contracts/test_x.py": 0,
        "tests/contracts/test_y.py": 0,
        "tests/contracts/multidevice/test_m.py": 1,
    }


@pytest.mark.parametrize(
    "change",
    ["shared conftest", "kit module", "lock", "baseline lock", "profile", "xla flags", "pytest config", "runner"],
)
def test_every_input_shared_by_the_modules_changes_every_key(project: Any, change: Any) -> None:
    before = unit_keys(project)
    env = {}
    if change == "shared conftest":
        (project / "tests/contracts/conftest.py").write_text("import pytest\n")
    elif change == "kit module":
        (project / "src/optax_gate/kit/tolerances.py").write_text("ULPS = 8\n")
    elif change == "lock":
        (project / "requirements-lock.txt").write_text("optax==0.2.8 --hash=sha256:bb\n")
    elif change == "baseline lock":  # the candidate resumes from checkpoints written by the baseline
        cand = unit_keys(project) and inputs(project, "candidate-lock.txt")
        (project / "requirements-lock.txt").write_text("optax==0.2.7 --hash=sha256:cc\n")
        assert results_cache.key(inputs(project, "candidate-lock.txt")) != results_cache.key(cand)
    elif change == "profile":
        env = {"OPTAX_GATE_HYPOTHESIS_PROFILE": "dev"}
    elif change == "xla flags":
        env = {"XLA_FLAGS": "--xla_cpu_enable_fast_math=true"}
    elif change == "pytest config":
        (project / "pyproject.toml").write_text("[tool.pytest.ini_options]\ntimeout = 5\n")
    elif change == "runner":
        (project / "src/optax_gate/gate/run").mkdir(parents=True)
        (project / "src/optax_gate/gate/run/runner.py").write_text("PARTS = ()\n")
    after = unit_keys(project, **env)
    assert all(after[name] != before[name] for name in before)


def test_a_changed_module_or_its_snapshot_changes_its_own_key_only(project: Any) -> None:
    before = unit_keys(project)
    (project / "tests/contracts/test_x.py").write_text("def test_x(): assert 1\n")
    after = unit_keys(project)
    assert after["tests/contracts/test_x.py"] != before["tests/contracts/test_x.py"]
    assert {k: v for k, v in after.items() if k != "tests/contracts/test_x.py"} == {
        k: v for k, v in before.items() if k != "tests/contracts/test_x.py"
    }
    (project / "tests/contracts/test_y").mkdir()
    (project / "tests/contracts/test_y/test_state.yml").write_text("a: 1\n")
    assert unit_keys(project)["tests/contracts/test_y.py"] != after["tests/contracts/test_y.py"]


def test_where_the_compilation_cache_lives_and_where_noxw_started_do_not_change_the_keys(project: Any) -> None:
    assert unit_keys(project) == unit_keys(
        project, JAX_COMPILATION_CACHE_DIR="/elsewhere", OPTAX_GATE_INVOKED_FROM="/team/project/tests"
    )


def test_every_gate_module_the_runner_imports_is_a_key_input() -> None:
    """A gate module that decides how pytest runs (imported by the runner,
    directly or through another, not only for the type checker) must be in RUN_MODULES, or changing it
    would reuse results it no longer gives."""
    gate = ROOT / "src/optax_gate/gate"
    seen, todo = set(), [str(next(gate.rglob("runner.py")).relative_to(gate).with_suffix(""))]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        tree = ast.parse((gate / f"{name}.py").read_text())
        typing_only = {  # `if TYPE_CHECKING:` imports never run
            id(n)
            for block in ast.walk(tree)
            if isinstance(block, ast.If) and ast.unparse(block.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
            for statement in block.body
            for n in ast.walk(statement)
        }
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("optax_gate.gate"):
                under = (node.module or "").removeprefix("optax_gate.gate").lstrip(".").replace(".", "/")
                for alias in node.names:  # a module of a subpackage, or a name from a module
                    module = f"{under}/{alias.name}".lstrip("/")
                    todo.append(module if (gate / f"{module}.py").is_file() else under)
    missing = sorted(
        f"src/optax_gate/gate/{m}.py" for m in seen if f"src/optax_gate/gate/{m}.py" not in results_cache.RUN_MODULES
    )
    assert not missing


def ran_record(units: Any) -> RunRecord:
    contracts = {f"{u.name}::test_{i}": {"api": "optax.x", "outcome": "passed"} for u in units for i in range(2)}
    warnings = [
        {
            "when": "contract",
            "category": "DeprecationWarning",
            "message": "d",
            "module": "optax",  # folded order
            "contracts": sorted([f"{units[0].name}::test_0", f"{units[-1].name}::test_1"]),
        },
        {"when": "import", "category": "UserWarning", "message": "m", "module": "optax", "contracts": []},
    ]
    return RunRecord.from_json(
        {
            "label": "baseline",
            "status": "ran",
            "versions": {"optax": "0.2.6"},
            "hypothesis_profile": "ci",
            "pytest_plugins": {"loaded": [], "left_out": []},
            "warnings": warnings,
            "contracts": contracts,
        }
    )


def test_stored_modules_come_back_as_the_same_record(project: Any, tmp_path: Path) -> None:
    units, side = results_cache.units(project), inputs(project)
    record = ran_record(units)
    assert results_cache.store(tmp_path / "cache", side, record, units) == len(units)
    cached = {u.name: results_cache.fetch_unit(tmp_path / "cache", side, u)[0] for u in units}
    header, why = results_cache.fetch_side(tmp_path / "cache", side)
    assert why == ""
    assert header is not None and all(c is not None for c in cached.values())
    got = results_cache.assemble("baseline", header, cast(dict[str, dict[str, Any]], cached))
    assert got.contracts == record.contracts and got.fields["warnings"] == record.fields["warnings"]
    assert got.versions == record.versions and got.status == "ran" and got.fields["exitstatus"] == 0


def test_an_unverified_run_is_never_stored(project: Any, tmp_path: Path) -> None:
    units = results_cache.units(project)
    record = dataclasses.replace(ran_record(units), status="not-verified")
    assert results_cache.store(tmp_path / "cache", inputs(project), record, units) == 0
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize("damage", ["truncated", "changed payload", "other inputs", "not json", "empty"])
def test_a_doubtful_entry_is_discarded(project: Any, tmp_path: Path, damage: Any) -> None:
    units, side = results_cache.units(project), inputs(project)
    results_cache.store(tmp_path / "cache", side, ran_record(units), units)
    path = tmp_path / "cache" / "results" / f"unit-{results_cache.key(results_cache.unit_inputs(side, units[0]))}.json"
    text = path.read_text()
    if damage == "truncated":
        path.write_text(text[: len(text) // 2])
    elif damage == "changed payload":
        entry = json.loads(text)
        next(iter(entry["payload"]["contracts"].values()))["outcome"] = "failed"
        path.write_text(json.dumps(entry))
    elif damage == "other inputs":
        entry = json.loads(text)
        entry["inputs"]["digest"] = "0" * 64
        path.write_text(json.dumps(entry))
    elif damage == "not json":
        path.write_bytes(b"\x00\xff")
    elif damage == "empty":
        path.write_text("")
    got, why = results_cache.fetch_unit(tmp_path / "cache", side, units[0])
    assert got is None and "discarded" in why and not path.exists()
    assert results_cache.fetch_unit(tmp_path / "cache", side, units[1])[0] is not None


def test_checkpoints_come_back_and_a_changed_one_is_discarded(project: Any, tmp_path: Path) -> None:
    side = inputs(project)
    written = tmp_path / "ckpt"
    (written / "sgd").mkdir(parents=True)
    (written / "sgd" / "meta.json").write_text("{}")
    entry = results_cache.store_checkpoints(tmp_path / "cache", side, written)
    assert entry is not None
    assert results_cache.fetch_checkpoints(tmp_path / "cache", side, tmp_path / "new") == ""
    assert (tmp_path / "new" / "sgd" / "meta.json").read_text() == "{}"
    (entry / "files" / "sgd" / "meta.json").write_text('{"step": 2}')
    assert "discarded" in results_cache.fetch_checkpoints(tmp_path / "cache", side, tmp_path / "newer")
    assert not entry.exists()


# --- the gate end to end with fake environments (tests/meta/gate/test_cli.py) -----------------------------


def runs_since(tmp_path: Path, before: Any) -> Any:
    lines = (tmp_path / "pytest-modules").read_text().splitlines()
    return [json.loads(line) for line in lines[before:]], len(lines)


def gate(tmp_path: Path, *extra: Any, lock: Any = LOCK) -> Any:
    proc = subprocess.run(
        fake_gate(tmp_path, pause=0, extra=extra, lock=lock), cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


def candidate_lock(tmp_path: Path) -> Any:
    lock = tmp_path / "candidate-lock.txt"
    lock.write_text(LOCK.read_text() + "# a candidate\n")
    return lock


def test_a_second_gate_with_another_usage_runs_no_contract_again(tmp_path: Path) -> None:
    lock = candidate_lock(tmp_path)
    gate(tmp_path, lock=lock)
    _, seen = runs_since(tmp_path, 0)
    usage = tmp_path / "team-code"
    usage.mkdir()
    (usage / "train.py").write_text("import optax\nopt = optax.adam(1e-3)\n")
    stderr = gate(tmp_path, "--usage", str(usage), lock=lock)
    ran, _ = runs_since(tmp_path, seen)
    assert ran == [], f"contracts ran again: {ran}"
    assert "candidate: from cache" in stderr and "baseline: from cache" in stderr
    report = latest_report(tmp_path / "out")
    assert report["candidate"]["from_cache"]["modules"] == report["candidate"]["from_cache"]["of"] > 0
    assert len(report["contracts"]) == 8 * report["candidate"]["from_cache"]["of"] and report["verdict"] == "pass"


def test_adding_a_team_contract_folder_runs_only_it_on_the_baseline(tmp_path: Path) -> None:
    gate(tmp_path, lock=candidate_lock(tmp_path))
    _, seen = runs_since(tmp_path, 0)
    team = tmp_path / "team"
    team.mkdir()
    (team / "test_ours.py").write_text("def test_ours(): pass\n")
    other = tmp_path / "other-lock.txt"
    other.write_text(LOCK.read_text() + "# another candidate\n")
    gate(tmp_path, "--contracts", str(team), lock=other)
    ran, _ = runs_since(tmp_path, seen)
    baseline = [modules for log, modules in ran if log.startswith("baseline")]
    assert baseline == [["test_ours.py"]], f"the baseline ran {baseline}"
    report = latest_report(tmp_path / "out")
    cached = report["baseline"]["from_cache"]
    assert cached["modules"] == cached["of"] - 1
    assert any(c.get("team") for c in report["contracts"]) if isinstance(report["contracts"], list) else True
    assert (
        f"({cached['modules']} of {cached['of']} contract modules; the others ran now)"
        in (tmp_path / "out" / "report.md").read_text()
    )


def test_a_corrupt_entry_is_run_again(tmp_path: Path) -> None:
    lock = candidate_lock(tmp_path)
    gate(tmp_path, lock=lock)
    _, seen = runs_since(tmp_path, 0)
    entries = sorted((tmp_path / "cache" / "results").glob("unit-*.json"))
    victim = entries[0]
    module = json.loads(victim.read_text())["inputs"]["unit"]
    victim.write_text(victim.read_text()[:100])  # a partial write
    stderr = gate(tmp_path, lock=lock)
    ran, _ = runs_since(tmp_path, seen)
    assert [m for _, modules in ran for m in modules] == [module], ran
    assert "discarded" in stderr


def test_module_entries_without_their_side_entry_run_again(tmp_path: Path) -> None:
    """Every module's entry is there but the side's own entry (versions,
    plugins, import warnings) is gone or doubtful: the side runs again as a
    whole, never zero contracts (which read "not verified")."""
    lock = candidate_lock(tmp_path)
    gate(tmp_path, lock=lock)
    _, seen = runs_since(tmp_path, 0)
    for entry in (tmp_path / "cache" / "results").glob("side-*.json"):
        entry.unlink()
    stderr = gate(tmp_path, lock=lock)
    ran, _ = runs_since(tmp_path, seen)
    assert {side for side in ("baseline", "candidate") if any(log.startswith(side) for log, _ in ran)} == {
        "baseline",
        "candidate",
    }, ran
    assert "side's own entry" in stderr, stderr
    report = latest_report(tmp_path / "out")
    assert report["verdict"] == "pass" and report["candidate"]["status"] == "ran", report["verdict"]


def test_speed_readings_of_the_same_pair_of_environments_are_taken_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:

    from optax_gate.gate import sides_speed

    timed = []

    def measure(*args: Any, **kwargs: Any) -> Any:
        timed.append(args)
        return {"status": "measured", "reason": "", "rounds": 3, "readings": [], "summary": {}, "duration_s": 20.0}

    monkeypatch.setattr(readings, "measure", measure)
    base, cand = tmp_path / "base.txt", tmp_path / "cand.txt"
    base.write_text("optax==0.2.6\n")
    cand.write_text("optax==0.2.8\n")
    env = EnvironmentOptions(
        project_root=ROOT, baseline_lock=base, python="python", envs_dir=tmp_path / "envs", cache_dir=tmp_path / "cache"
    )

    def speed(rounds: Any = 3, use_cache: Any = True) -> Any:
        return sides_speed.measure_speed(
            dataclasses.replace(env, use_cache=use_cache),
            SpeedOptions(enabled=True, rounds=rounds),
            cand,
            RunRecord("candidate", "ran"),
            sides=sides_speed.SpeedSides((Path("b"), Path("c"))),
        )

    first = speed()
    assert len(timed) == 1 and "from_cache" not in first
    again = speed()
    assert len(timed) == 1 and again["from_cache"]["recorded"] and again["duration_s"] == 20.0
    speed(rounds=4)  # other rounds: measured again
    assert len(timed) == 2
    speed(use_cache=False)  # --no-cache
    assert len(timed) == 3


def test_a_selective_candidate_whose_changes_the_timed_steps_do_not_execute_is_not_timed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The baseline's speed worker records what the timed steps execute (kept under the baseline's side
    inputs); a later candidate selected by changed function that changed none of those is not timed."""
    from optax_gate.gate import sides_speed

    timed = []

    def measure(*args: Any, reach_file: Any = None, **kwargs: Any) -> Any:
        timed.append(args)  # the baseline's worker writes its record where it is told (kit.environment.speed)
        Path(f"{reach_file}.123").write_text(
            json.dumps({"format": "reach-v1", "session": ["optax/_src/alias.py::adamw"], "modules": {}})
        )
        return {"status": "measured", "reason": "", "rounds": 3, "readings": [], "summary": {}, "duration_s": 20.0}

    monkeypatch.setattr(readings, "measure", measure)
    base = tmp_path / "base.txt"
    base.write_text("optax==0.2.6\n")
    env = EnvironmentOptions(
        project_root=ROOT, baseline_lock=base, python="python", envs_dir=tmp_path / "envs", cache_dir=tmp_path / "cache"
    )
    both = sides_speed.SpeedSides((Path("b"), Path("c")), baseline_inputs={"lock": "base"})

    def speed(tag: Any, selection: Any, use_cache: Any = True) -> Any:
        cand = tmp_path / f"cand-{tag}.txt"
        cand.write_text(f"optax==0.2.6 --hash=sha256:{tag}\n")
        record = RunRecord.from_json(
            {
                "label": "candidate",
                "status": "ran",
                "contracts": {},
                **({"selection": selection} if selection is not None else {}),
            }
        )
        return sides_speed.measure_speed(
            dataclasses.replace(env, use_cache=use_cache),
            SpeedOptions(enabled=True, rounds=3),
            cand,
            record,
            sides=both,
        )

    lion = {"changed": ["optax/_src/alias.py::lion"], "ran": [], "taken": [], "reached": {}}
    assert speed("a", lion)["status"] == "measured" and len(timed) == 1  # nothing recorded yet: timed, and recorded
    assert results_cache.fetch_speed_reach(tmp_path / "cache", {"lock": "base"}) == ["optax/_src/alias.py::adamw"]
    skipped = speed("b", lion)
    assert len(timed) == 1 and skipped["status"] == "not-measured"
    assert "execute none of the 1 function(s) the candidate changed (`optax/_src/alias.py::lion`)" in skipped["reason"]
    assert (
        speed("c", {**lion, "changed": ["optax/_src/alias.py::adamw"]})["status"] == "measured"
    )  # the steps execute it
    assert speed("d", {**lion, "everything": "--all-modules"})["status"] == "measured"  # not selected by function
    assert speed("e", None)["status"] == "measured"  # a candidate of another release
    assert speed("f", lion, use_cache=False)["status"] == "measured"  # --no-cache: nothing taken from the cache
    assert len(timed) == 5


def test_the_api_surfaces_are_read_while_the_contracts_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """run_both starts reading both environments' surfaces before the contracts
    end, so the late phase's diff finds them read (unseen's cached reader)."""
    import threading

    from optax_gate.gate import sides, sides_prepare

    sites = [tmp_path / "base-site", tmp_path / "cand-site"]
    for site in sites:
        site.mkdir()
    read, contracts_running = [], threading.Event()

    def surface(
        site: Any, packages: Any
    ) -> Any:  # a read takes a while: it is still under way when the contracts start
        contracts_running.wait(10)
        read.append((site, contracts_running.is_set()))
        return {}

    def contracts(side: Any, args: Any, progress: Any, workers: Any = 2) -> Any:
        contracts_running.set()
        deadline = __import__("time").monotonic() + 10
        while len(read) < 2 and __import__("time").monotonic() < deadline:
            __import__("time").sleep(0.01)
        return RunRecord(side.label, "ran", reason=f"{len(read)} surfaces read by then")

    monkeypatch.setattr(public_api, "cached_surface", surface)
    monkeypatch.setattr(sides, "contracts", contracts)
    readers_at_checkpoints = []
    monkeypatch.setattr(
        sides,
        "write_checkpoints",
        lambda side, args, say: readers_at_checkpoints.append(
            [t.name for t in threading.enumerate() if t.name == "read-surfaces"]
        ),
    )
    made = [
        sides_prepare.Side(label, tmp_path, tmp_path / "ckpt", {"site_packages": str(site)})
        for label, site in zip(("baseline", "candidate"), sites, strict=True)
    ]
    env = EnvironmentOptions(
        project_root=ROOT,
        baseline_lock=ROOT / "requirements-lock.txt",
        python="python",
        envs_dir=tmp_path / "envs",
        concurrent=False,
    )
    _base, cand = sides.run_both(made[0], made[1], env, Progress())
    assert [s for s, _ in read] == sites
    assert cand.reason == "2 surfaces read by then"  # read beside the contracts, not after them
    # ... but not beside the checkpoints' copy: the reader's thread would hold the interpreter lock
    # at each of its files (a 0.02 s copy of 175 files took 6 s beside it)
    assert readers_at_checkpoints == [[]]
