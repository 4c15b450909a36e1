"""The mutants check's runner: a pytest process that a signal kills is run
again, up to twice, and a third crash stops the check with where it crashed."""

from __future__ import annotations

import functools
import signal
from pathlib import Path

import pytest

from optax_gate.mutants import __main__ as runner

CRASH_ONCE = """
import os
from pathlib import Path

import pytest

pytestmark = [pytest.mark.contract(api="optax.sgd", guide="team: a module that crashes its pytest process"), pytest.mark.acceptance]

def test_runs_after_one_crash():
    marker = Path(__file__).with_suffix(".crashed")
    if not marker.exists():
        marker.write_text("")
        os.abort()
    assert marker.exists()
"""  # noqa: E501 (a script or page written out as it runs)

CRASH_ALWAYS = """
import os

import pytest

pytestmark = [pytest.mark.contract(api="optax.sgd", guide="team: a module that crashes its pytest process"), pytest.mark.acceptance]

def test_always_crashes():
    os.abort()
"""  # noqa: E501 (a script or page written out as it runs)


def _module(tmp_path: Path, text: str) -> str:
    path = tmp_path / "test_crashing.py"
    path.write_text(text)
    return str(path)


def test_a_crash_is_run_again_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(Path(__file__).parents[3])  # the project's pyproject.toml, as the check runs
    failed, contracts = runner.failed_contracts(_module(tmp_path, CRASH_ONCE), None, tmp_path)
    assert (failed, len(contracts)) == (set(), 1)
    assert "crashed (SIGABRT)" in capsys.readouterr().out


def test_a_third_crash_stops_the_check_and_says_where(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(Path(__file__).parents[3])
    with pytest.raises(RuntimeError, match=r"crashed \(SIGABRT\) at File .*test_crashing.py.*test_always_crashes"):
        runner.failed_contracts(_module(tmp_path, CRASH_ALWAYS), None, tmp_path)


def test_crash_words_without_a_fault_handler_dump() -> None:
    assert runner.crash_words(-signal.SIGKILL, "") == "crashed (SIGKILL)"
    assert runner.crash_words(-99, "") == "crashed (signal 99)"


def _project(root: Path) -> Path:
    """A small project tree as ``proof`` reads one: the shared modules, a kit module imported lazily, a
    contract module with its snapshot folder, a mutant module."""
    from optax_gate.mutants import proof

    files = {
        "src/optax_gate/__init__.py": "",
        "src/optax_gate/mutants/__init__.py": "from optax_gate.mutants.registry import family\n",
        "src/optax_gate/mutants/registry.py": "def family(): ...\n",
        "src/optax_gate/mutants/__main__.py": "import os\n",
        "src/optax_gate/mutants/plugin.py": "",
        "src/optax_gate/mutants/fam.py": "from optax_gate.mutants import registry\n",
        "src/optax_gate/pytest_plugin.py": "",
        "src/optax_gate/kit/__init__.py": "",
        "src/optax_gate/kit/a.py": "def f():\n    from . import b\n    return b\n",
        "src/optax_gate/kit/b.py": "X = 1\n",
        "src/optax_gate/kit/unrelated.py": "Y = 1\n",
        "tests/__init__.py": "",
        "tests/contracts/__init__.py": "",
        "tests/contracts/conftest.py": "",
        "tests/contracts/test_x.py": "from optax_gate.kit.a import f\n",
        "tests/contracts/test_x/test_one.yml": "a: 1\n",
        **{f: "" for f in proof.SHARED_FILES},
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _family_digest(root: Path) -> str:
    """The digest of the synthetic family ``fam``'s inputs in ``root`` (:func:`_project`)."""
    from optax_gate.mutants import proof

    files = proof.inputs("fam", "tests/contracts/test_x.py", ["optax_gate.mutants.fam"], root)
    assert files is not None
    return proof.digest(files, root)


def test_a_familys_inputs_follow_lazy_imports_and_its_snapshots(tmp_path: Path) -> None:
    from optax_gate.mutants import proof

    root = _project(tmp_path)

    digest = functools.partial(_family_digest, root)

    files = {
        p.relative_to(root.resolve()).as_posix()
        for p in proof.inputs("fam", "tests/contracts/test_x.py", ["optax_gate.mutants.fam"], root) or []
    }
    assert {
        "src/optax_gate/kit/b.py",
        "tests/contracts/test_x/test_one.yml",
        "src/optax_gate/mutants/registry.py",
        "requirements-lock.txt",
    } <= files
    assert "src/optax_gate/kit/unrelated.py" not in files
    before = digest()
    (root / "src/optax_gate/kit/unrelated.py").write_text("Y = 2\n")
    assert digest() == before
    for rel in (
        "src/optax_gate/kit/b.py",
        "tests/contracts/test_x/test_one.yml",
        "src/optax_gate/mutants/fam.py",
        "requirements-lock.txt",
    ):
        (root / rel).write_text((root / rel).read_text() + "# changed\n")
        assert digest() != before, rel
        before = digest()


def test_a_family_depends_on_the_ledger_entries_it_can_meet_only(tmp_path: Path) -> None:
    """A known defect no file of the family names, or a moved-behaviour entry of another contract module,
    leaves its digest as it is; one it names moves it; a ledger that does not parse counts whole."""

    root = _project(tmp_path)
    (root / "tests/contracts/test_x.py").write_text('from optax_gate.kit.a import f\n# known_defect("x-defect")\n')
    known, moved = root / "tests/contracts/known_defects.toml", root / "tests/contracts/moved_behaviour.toml"

    digest = functools.partial(_family_digest, root)

    before = digest()
    known.write_text('other-defect = "not this family\'s"\n')
    moved.write_text(
        '[[moved]]\ncontract = "tests/contracts/test_y.py::test_a"\noptax = ">=0.2.8"\nfails = "x"\nwhy = "y"\n'
    )
    assert digest() == before
    known.write_text(known.read_text() + 'x-defect = "this family\'s"\n')
    assert digest() != before
    before = digest()
    moved.write_text(
        moved.read_text()
        + '\n[[moved]]\ncontract = "tests/contracts/test_x.py::test_b"\noptax = ">=0.2.8"\nfails = "x"\nwhy = "y"\n'
    )
    assert digest() != before
    before = digest()
    known.write_text(known.read_text() + "not toml [\n")
    assert digest() != before


def test_a_comment_in_pyproject_moves_no_proof_and_a_table_does(tmp_path: Path) -> None:

    root = _project(tmp_path)
    pyproject = root / "pyproject.toml"
    pyproject.write_text('[tool.pytest.ini_options]\nmarkers = ["a"]\n')

    digest = functools.partial(_family_digest, root)

    before = digest()
    pyproject.write_text('# a comment\n[tool.pytest.ini_options]\nmarkers = [ "a" ]  # another\n')
    assert digest() == before
    pyproject.write_text(
        '[tool.pytest.ini_options]\nmarkers = ["a"]\n[tool.ruff]\nline-length = 120\n[tool.mypy]\nstrict = true\n'
    )
    assert digest() == before  # the lint and type checkers' tables: no contract run reads them
    pyproject.write_text('[tool.pytest.ini_options]\nmarkers = ["a", "b"]\n')
    assert digest() != before


def test_the_moved_entries_a_family_meets_count_in_any_order(tmp_path: Path) -> None:
    """``rebaseline`` rewrites the moved-behaviour ledger in its own order: the same entries move no proof."""
    root = _project(tmp_path)
    moved = root / "tests/contracts/moved_behaviour.toml"
    entries = [
        f'[[moved]]\ncontract = "tests/contracts/test_x.py::test_{n}"\noptax = ">=0.2.8"\nfails = "x"\nwhy = "y"\n'
        for n in "ab"
    ]
    digest = functools.partial(_family_digest, root)
    moved.write_text("\n".join(entries))
    before = digest()
    moved.write_text("\n".join(reversed(entries)))
    assert digest() == before


def test_a_family_outside_the_project_has_no_recorded_inputs(tmp_path: Path) -> None:
    from optax_gate.mutants import proof

    root = _project(tmp_path / "project")
    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "test_t.py").write_text("")
    assert proof.inputs("team", str(tmp_path / "team" / "test_t.py"), [], root) is None


def test_changed_proves_only_families_whose_inputs_moved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--changed``: a family whose recorded digest equals its inputs' stands proven and does not run."""
    from optax_gate import mutants
    from optax_gate.mutants import proof

    monkeypatch.chdir(Path(__file__).parents[3])
    monkeypatch.setattr(proof, "RECORD", str(tmp_path / "proven.json"))
    registry = mutants.load()
    digests = runner.input_digests(["polyak"], registry, Path.cwd())
    proof.write_record(Path.cwd(), digests)
    assert runner.main(["--area", "polyak", "--changed"]) == 0
    out = capsys.readouterr().out
    assert (
        "proven before at their current inputs (" in out
        and "1 of 1 family; proving 0" in out
        and "contracts fail" not in out
    )


def test_a_family_is_named_by_its_name_or_its_modules_stems_and_a_typo_is_answered_with_the_nearest() -> None:
    import argparse

    from optax_gate import mutants

    mutants.load()
    assert (
        runner.family_of("training-recipes")
        == runner.family_of("training_recipes")
        == runner.family_of("test_training_recipes")
        == "training-recipes"
    )
    assert runner.family_of("multi_steps") == "multisteps" and runner.family_of("clip_by_global_norm") == "global-norm"
    with pytest.raises(argparse.ArgumentTypeError, match=r"no mutant family 'lino'; did you mean lion\?"):
        runner.family_of("lino")


def test_changed_says_which_inputs_moved(tmp_path: Path) -> None:
    from optax_gate.mutants import proof

    root = _project(tmp_path)
    files = proof.inputs("fam", "tests/contracts/test_x.py", ["optax_gate.mutants.fam"], root)
    assert files is not None
    before = proof.entry(files, root)
    (root / "src/optax_gate/kit/b.py").write_text("X = 2\n")
    now = proof.entry(files, root)
    assert proof.changed_inputs(before, now) == ["src/optax_gate/kit/b.py"]
    assert runner.why_stale("fam", {"fam": before}, {"fam": now}) == "changed: src/optax_gate/kit/b.py"
    assert runner.why_stale("fam", {}, {"fam": now}) == "no proof recorded"
    assert runner.why_stale("team", {}, {}) == "its contracts lie outside the project: never recorded"
    proof_file = tmp_path / "proven.json"
    import json

    from optax_gate.mutants import proof as p

    old, p.RECORD = p.RECORD, str(proof_file)
    try:
        p.write_record(root, {"fam": now, "other": before})
        assert json.loads(proof_file.read_text()) == {"fam": now, "other": before}
        assert len(proof_file.read_text().splitlines()) == 4  # one family a line
    finally:
        p.RECORD = old
