"""``./noxw -s tests -- ARGS``: which process gets what, mistyped paths, and
what the processes selected (``optax_gate.gate.session_args``)."""

import pytest

from optax_gate.gate import session_args
from optax_gate.gate.devices import MULTIDEVICE_DIR


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / MULTIDEVICE_DIR).mkdir(parents=True)
    (tmp_path / MULTIDEVICE_DIR / "test_data_parallel.py").write_text("")
    (tmp_path / "tests" / "contracts" / "test_sgd.py").write_text("")
    (tmp_path / "tests" / "meta").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_mistyped_path_is_missing_and_option_values_are_not_paths(project):
    assert session_args.missing_paths(["tests/contract"]) == ["tests/contract"]
    assert session_args.missing_paths(["tests/contracts/test_sgdd.py::test_x", "-q"]) == ["tests/contracts/test_sgdd.py::test_x"]
    assert session_args.missing_paths(["tests/contracts/test_sgd.py::test_x", "tests/meta"]) == []
    assert session_args.missing_paths(["-k", "a/b", "--deselect", "tests/gone.py::t", "-m", "snapshot"]) == []


def test_paths_go_to_their_process_and_options_to_both(project):
    assert session_args.split_multidevice(["-k", "sgd"]) == (["-k", "sgd"], ["-k", "sgd", MULTIDEVICE_DIR])
    assert session_args.split_multidevice(["tests/contracts/test_sgd.py", "-q"]) == (["-q", "tests/contracts/test_sgd.py"], None)
    assert session_args.split_multidevice([f"{MULTIDEVICE_DIR}/test_data_parallel.py"]) == ([], [f"{MULTIDEVICE_DIR}/test_data_parallel.py"])
    assert session_args.split_multidevice(["tests/contracts"]) == (["tests/contracts"], [MULTIDEVICE_DIR])


def test_selected_counts_the_tests_of_every_junit_file(tmp_path):
    (tmp_path / "single.xml").write_text('<testsuites><testsuite name="pytest" tests="0"/></testsuites>')
    assert session_args.selected(tmp_path) == 0
    (tmp_path / "multidevice.xml").write_text('<testsuite name="pytest" tests="3"/>')
    assert session_args.selected(tmp_path) == 3
