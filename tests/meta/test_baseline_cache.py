"""The baseline result cache (``optax_gate.gate.baseline_cache``): any change
that can move an outcome changes the key, and a doubtful entry is re-run."""

import json

import pytest

from optax_gate.gate import baseline_cache


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    for rel, text in {"conftest.py": "# profiles\n", "pyproject.toml": "[tool.pytest.ini_options]\n",
                      "tests/contracts/test_x.py": "def test_x(): pass\n", "tests/contracts/known_defects.toml": "",
                      "src/optax_gate/kit/tolerances.py": "ULPS = 4\n", "requirements-lock.txt": "optax==0.2.6 --hash=sha256:aa\n"}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def inputs(root, **env):
    return baseline_cache.key_inputs(root / "requirements-lock.txt", root, environ=env)


@pytest.mark.parametrize("change", ["contract file", "snapshot file", "kit module", "lock", "profile", "xla flags", "pytest config"])
def test_every_input_of_the_outcomes_changes_the_key(project, change):
    before = baseline_cache.key(inputs(project))
    env = {}
    if change == "contract file":
        (project / "tests/contracts/test_x.py").write_text("def test_x(): assert 1\n")
    elif change == "snapshot file":
        (project / "tests/contracts/test_x").mkdir()
        (project / "tests/contracts/test_x/test_state.yml").write_text("a: 1\n")
    elif change == "kit module":
        (project / "src/optax_gate/kit/tolerances.py").write_text("ULPS = 8\n")
    elif change == "lock":
        (project / "requirements-lock.txt").write_text("optax==0.2.8 --hash=sha256:bb\n")
    elif change == "profile":
        env = {"OPTAX_GATE_HYPOTHESIS_PROFILE": "dev"}
    elif change == "xla flags":
        env = {"XLA_FLAGS": "--xla_cpu_enable_fast_math=true"}
    elif change == "pytest config":
        (project / "pyproject.toml").write_text("[tool.pytest.ini_options]\ntimeout = 5\n")
    assert baseline_cache.key(inputs(project, **env)) != before


def test_where_the_compilation_cache_lives_does_not_change_the_key(project):
    assert baseline_cache.key(inputs(project)) == baseline_cache.key(inputs(project, JAX_COMPILATION_CACHE_DIR="/elsewhere"))


def test_the_folder_noxw_was_started_from_does_not_change_the_key(project):
    """noxw exports OPTAX_GATE_INVOKED_FROM (for reading the user's relative paths): a gate started from a
    subfolder reuses the baseline cached by one started from the project root."""
    root = baseline_cache.key(inputs(project, OPTAX_GATE_INVOKED_FROM="/team/project"))
    assert baseline_cache.key(inputs(project, OPTAX_GATE_INVOKED_FROM="/team/project/tests")) == root


def stored(project, tmp_path):
    evidence = tmp_path / "run" / "evidence"
    evidence.mkdir(parents=True)
    (evidence / "baseline.reportlog.jsonl").write_text('{"$report_type": "SessionFinish", "exitstatus": 0}\n')
    checkpoints = tmp_path / "run" / "checkpoints"
    (checkpoints / "sgd").mkdir(parents=True)
    (checkpoints / "sgd" / "meta.json").write_text("{}")
    record = {"label": "baseline", "status": "ran", "checkpoint_writer": "written", "contracts": {"t::x": {"outcome": "passed"}}}
    entry = baseline_cache.store(tmp_path / "cache", inputs(project), record, sorted(evidence.glob("*")), checkpoints)
    return entry, record


def test_a_stored_run_comes_back_with_its_evidence_and_checkpoints(project, tmp_path):
    entry, record = stored(project, tmp_path)
    assert entry is not None and entry.name == baseline_cache.key(inputs(project))
    got, why = baseline_cache.fetch(tmp_path / "cache", inputs(project), tmp_path / "new" / "evidence", tmp_path / "new" / "checkpoints")
    assert why == "" and got["contracts"] == record["contracts"] and got["from_cache"]["key"] == entry.name
    assert (tmp_path / "new" / "evidence" / "baseline.reportlog.jsonl").exists()
    assert (tmp_path / "new" / "checkpoints" / "sgd" / "meta.json").exists()


@pytest.mark.parametrize("damage", ["changed file", "extra file", "missing manifest", "truncated record", "other inputs"])
def test_a_doubtful_entry_is_discarded_and_the_baseline_runs_again(project, tmp_path, damage):
    entry, _ = stored(project, tmp_path)
    if damage == "changed file":
        (entry / "evidence" / "baseline.reportlog.jsonl").write_text('{"$report_type": "SessionFinish", "exitstatus": 1}\n')
    elif damage == "extra file":
        (entry / "checkpoints" / "sgd" / "stray").write_text("x")
    elif damage == "missing manifest":
        (entry / baseline_cache.MANIFEST).unlink()
    elif damage == "truncated record":
        text = (entry / baseline_cache.RECORD).read_text()
        (entry / baseline_cache.RECORD).write_text(text[: len(text) // 2])
    elif damage == "other inputs":
        manifest = json.loads((entry / baseline_cache.MANIFEST).read_text())
        manifest["inputs"]["python"] = "3.11.0"
        (entry / baseline_cache.MANIFEST).write_text(json.dumps(manifest))
    got, why = baseline_cache.fetch(tmp_path / "cache", inputs(project), tmp_path / "new" / "evidence", tmp_path / "new" / "checkpoints")
    assert got is None and "discarded" in why
    assert not entry.exists()


def test_an_unverified_baseline_is_never_stored(project, tmp_path):
    record = {"label": "baseline", "status": "not-verified", "checkpoint_writer": "written", "contracts": {}}
    assert baseline_cache.store(tmp_path / "cache", inputs(project), record, [], tmp_path / "none") is None
    record = {"label": "baseline", "status": "ran", "checkpoint_writer": "writing checkpoints failed: x", "contracts": {}}
    assert baseline_cache.store(tmp_path / "cache", inputs(project), record, [], tmp_path / "none") is None
