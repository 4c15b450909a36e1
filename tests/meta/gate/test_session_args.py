"""``./noxw -s tests -- ARGS``: which process gets what, mistyped paths, and
what the processes selected (``optax_gate.gate.run.session_args``)."""

from pathlib import Path
from typing import Any

import pytest

from optax_gate.gate.run import session_args
from optax_gate.gate.run.devices import MULTIDEVICE_DIR


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    (tmp_path / MULTIDEVICE_DIR).mkdir(parents=True)
    (tmp_path / MULTIDEVICE_DIR / "test_data_parallel.py").write_text("")
    (tmp_path / "tests" / "contracts" / "test_sgd.py").write_text("")
    (tmp_path / "tests" / "meta").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_mistyped_path_is_missing_and_option_values_are_not_paths(project: Any) -> None:
    assert session_args.missing_paths(["tests/contract"]) == ["tests/contract"]
    assert session_args.missing_paths(["tests/contracts/test_sgdd.py::test_x", "-q"]) == [
        "tests/contracts/test_sgdd.py::test_x"
    ]
    assert session_args.missing_paths(["tests/contracts/test_sgd.py::test_x", "tests/meta"]) == []
    assert session_args.missing_paths(["-k", "a/b", "--deselect", "tests/gone.py::t", "-m", "snapshot"]) == []


def test_paths_go_to_their_process_and_options_to_both(project: Any) -> None:
    assert session_args.split_multidevice(["-k", "sgd"]) == (["-k", "sgd"], ["-k", "sgd", MULTIDEVICE_DIR])
    assert session_args.split_multidevice(["tests/contracts/test_sgd.py", "-q"]) == (
        ["-q", "tests/contracts/test_sgd.py"],
        None,
    )
    assert session_args.split_multidevice([f"{MULTIDEVICE_DIR}/test_data_parallel.py"]) == (
        [],
        [f"{MULTIDEVICE_DIR}/test_data_parallel.py"],
    )
    assert session_args.split_multidevice(["tests/contracts"]) == (["tests/contracts"], [MULTIDEVICE_DIR])


def test_selected_counts_the_tests_of_every_junit_file(tmp_path: Path) -> None:
    (tmp_path / "single.xml").write_text('<testsuites><testsuite name="pytest" tests="0"/></testsuites>')
    assert session_args.selected(tmp_path) == 0
    (tmp_path / "multidevice.xml").write_text('<testsuite name="pytest" tests="3"/>')
    assert session_args.selected(tmp_path) == 3


def test_paths_are_read_from_where_the_user_stands_as_the_gate_reads_its_paths(project: Any) -> None:
    """``cd tests && ../noxw -s tests -- meta/test_x.py`` named nothing (read from the project folder),
    while ``gate --usage`` reads from where the user stands. Both read from there now; a path that names
    nothing from there keeps the project folder's meaning (the missing-path error says both)."""
    (project / "tests" / "meta" / "test_x.py").write_text("")
    outside = project.parent / "elsewhere"
    outside.mkdir(exist_ok=True)
    (outside / "test_team.py").write_text("")
    user = project / "tests"
    assert session_args.read_paths(["meta/test_x.py::test_a", "-k", "meta", "contracts"], user, project) == [
        "tests/meta/test_x.py::test_a",
        "-k",
        "meta",
        "tests/contracts",
    ]
    assert session_args.read_paths(["../../elsewhere/test_team.py"], user, project) == [str(outside / "test_team.py")]
    assert session_args.read_paths(["tests/meta"], user, project) == ["tests/meta"]  # the project folder's meaning
    assert session_args.read_paths(["meta/test_x.py"], None, project) == ["meta/test_x.py"]
    assert session_args.read_paths(["tests/meta/test_x.py"], project, project) == ["tests/meta/test_x.py"]
    from tests.meta.support.paths import ROOT  # the session reads $NOXW_INVOKED_FROM and names both folders on a miss

    text = (ROOT / "noxfile.py").read_text()
    assert "session_args.read_paths(list(session.posargs), invoked_from, ROOT)" in text
    assert "a path is read from the folder you ran ./noxw" in text
