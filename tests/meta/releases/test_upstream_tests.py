"""The cross-run of optax's own tests (``optax_gate.gate.upstream.upstream_tests``), on
two fake optax packages run with this interpreter: which modules differ, which
test files run where, how each failure is classified, the control run in the
test's own environment, the findings and how they join a report."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from optax_gate.gate import assemble
from optax_gate.gate.report import upstream_section
from optax_gate.gate.upstream import failures, pytest_run
from optax_gate.gate.upstream import upstream_tests as up

#: Two pytest runs per direction (the run and its control), 20 s on a loaded 2-core machine.
pytestmark = pytest.mark.timeout(300)

_ALPHA = {
    "baseline": """
        def scale(x):
            return 2 * x

        def gone_fn():
            return 1
        """,
    "candidate": """
        def scale(x, *, offset=0):
            return 3 * x + offset
        """,
}
_ALPHA_TEST = {
    "baseline": """
        import unittest
        from optax import alpha

        class ScaleTest(unittest.TestCase):
            def test_scale_doubles(self):
                self.assertEqual(alpha.scale(2), 4)

            def test_scale_doubles_again(self):
                self.assertEqual(alpha.scale(5), 10)

            def test_gone_fn(self):
                self.assertEqual(alpha.gone_fn(), 1)

            def test_flaky_everywhere(self):
                self.assertEqual(1, 2)

        def test_helper():
            from optax import test_helpers_only_here  # noqa: F401
        """,
    "candidate": """
        from optax import alpha
        from optax import test_utils

        def test_scale_offset():
            assert alpha.scale(1, offset=1) == 4

        def test_with_the_candidates_helper():
            assert test_utils.twice(2) == 4
        """,
}


def _site(tmp_path: Path, side: str) -> Path:
    pkg = tmp_path / side / "optax"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "alpha.py").write_text(textwrap.dedent(_ALPHA[side]), encoding="utf-8")
    (pkg / "alpha_test.py").write_text(textwrap.dedent(_ALPHA_TEST[side]), encoding="utf-8")
    (pkg / "beta.py").write_text("def same():\n    return 0\n", encoding="utf-8")  # identical: its test never runs
    if side == "candidate":  # a test helper new on the candidate's side
        (pkg / "test_utils.py").write_text("def twice(x):\n    return 2 * x\n", encoding="utf-8")
    (pkg / "beta_test.py").write_text("def test_same():\n    assert False\n", encoding="utf-8")
    return tmp_path / side


@pytest.fixture(scope="module")
def section(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("cross")
    sites = {side: _site(tmp, side) for side in ("baseline", "candidate")}
    py = Path(sys.executable)
    return up.cross_run(
        sites,
        {"baseline": py, "candidate": py},
        up.CrossRunOptions(
            tmp / "cache",
            timeout=300,
            workers=1,
            extra_env={side: {"PYTHONPATH": str(site)} for side, site in sites.items()},
        ),
        say=lambda _: None,
    )


def _failures(section: Any, label: Any) -> Any:
    d = next(d for d in section["directions"] if d["label"] == label)
    return d, {f["test"].rsplit("::", 1)[-1]: f for f in d["failures"]}


def test_only_the_tests_of_differing_modules_run(section: Any) -> None:
    assert section["changed_modules"] == ["alpha.py"]
    assert [d["files"] for d in section["directions"]] == [["alpha_test.py"], ["alpha_test.py"]]


def test_baseline_tests_in_the_candidate(section: Any) -> None:
    d, f = _failures(section, "baseline tests in the candidate")
    assert d["ran"] == 5 and d["failed"] == 5
    assert (f["test_scale_doubles"]["kind"], f["test_scale_doubles"]["change"]) == (failures.BEHAVIOUR, "changed")
    assert f["test_scale_doubles"]["subject"] == "optax.alpha.scale"  # the API the test's name spells
    assert f["test_scale_doubles"]["test"] == "alpha_test.py::ScaleTest::test_scale_doubles"
    assert (f["test_gone_fn"]["kind"], f["test_gone_fn"]["change"], f["test_gone_fn"]["subject"]) == (
        failures.API,
        "gone",
        "optax.alpha.gone_fn",
    )
    assert f["test_helper"]["kind"] == failures.INFRA  # a test helper missing: could not tell
    assert f["test_flaky_everywhere"]["kind"] == failures.INFRA  # fails in its own environment too (the control run)
    assert "own environment" in f["test_flaky_everywhere"]["subject"]


def test_candidate_tests_in_the_baseline(section: Any) -> None:
    d, f = _failures(section, "candidate tests in the baseline")
    assert (d["ran"], d["failed"]) == (2, 1)  # the test using the candidate's helper runs (and passes) in the baseline
    assert (f["test_scale_offset"]["kind"], f["test_scale_offset"]["change"]) == (failures.API, "new")
    assert f["test_scale_offset"]["subject"] == "scale(..., offset=)"


def test_findings_merge_one_cause_and_leave_out_what_cannot_be_told(section: Any) -> None:
    texts = [(f["change"], f["api"], len(f["contracts"])) for f in section["findings"]]
    # the two doubling tests fail with one message pattern: one finding
    assert texts == [("changed", "optax.alpha.scale", 2), ("new", "scale", 1), ("gone", "optax.alpha.gone_fn", 1)]
    assert all(f["section"] == "upstream-tests" for f in section["findings"])


def test_the_section_joins_the_report_without_touching_the_verdict(section: Any) -> None:
    import copy

    given: Any = {
        "verdict": "pass",
        "reasons": [],
        "findings": [{"number": 1, "change": "broken", "section": "contracts"}],
    }
    kept, kept_section = copy.deepcopy(given), copy.deepcopy(section)
    report = assemble.with_upstream_tests(given, section)
    assert given == kept and section == kept_section  # a copy: what it was given is as it was
    assert report["verdict"] == "pass" and report["reasons"] == []
    assert [f["number"] for f in report["findings"]] == [1, 2, 3, 4]
    assert [f["number"] for f in report["upstream_tests"]["findings"]] == [
        2,
        3,
        4,
    ]  # the section's own, numbered as in the list
    assert "do not change the verdict" in report["notes"][0]


@pytest.mark.parametrize(
    ("text", "side", "want"),
    [
        ("ImportError: cannot import name 'tree_norm' from 'optax.tree_utils'", "baseline", (failures.API, "gone")),
        ("AttributeError: module 'optax.contrib' has no attribute 'galore'", "candidate", (failures.API, "new")),
        ("ModuleNotFoundError: No module named 'optax.monte_carlo'", "baseline", (failures.API, "gone")),
        ("TypeError: huber_loss() got an unexpected keyword argument 'delta'", "candidate", (failures.API, "new")),
        ("ModuleNotFoundError: No module named 'chex'", "baseline", (failures.INFRA, "")),
        (
            "ImportError: cannot import name 'assert_trees' from 'optax._src.test_utils'",
            "baseline",
            (failures.INFRA, ""),
        ),
        ("fixture 'mocker' not found", "baseline", (failures.INFRA, "")),
        # seen on 0.2.6 -> 0.2.8: 26 of the candidate's test files import 0.2.8's new helper module
        (
            "ImportError: cannot import name 'test_utils' from 'optax._src' (unknown location). Did you mean: "
            "'tree_utils'?",
            "candidate",
            (failures.INFRA, ""),
        ),
        ("ModuleNotFoundError: No module named 'optax._src.test_utils'", "candidate", (failures.INFRA, "")),
        (
            "ImportError: cannot import name '_galore' from 'optax.contrib' (/x/optax/contrib/__init__.py)",
            "candidate",
            (failures.API, "new"),
        ),
        ("AssertionError: Arrays are not almost equal to 6 decimals", "baseline", (failures.BEHAVIOUR, "changed")),
    ],
)
def test_classify(text: Any, side: Any, want: Any) -> None:
    f = failures.classify(failures.Failure("m_test.py::T::test", text), side)
    assert (f.kind, f.change) == want


def test_first_line_picks_the_exception() -> None:
    text = "self = <x>\n    def test():\nE   ValueError: bad shape (2, 3)\nE   + where 1 = f()\n"
    assert failures.first_line(text) == "ValueError: bad shape (2, 3)"


def test_markdown_lists_what_could_not_be_told(section: Any) -> None:
    report = assemble.with_upstream_tests({"verdict": "pass", "reasons": [], "findings": []}, section)
    text = "\n".join(upstream_section.markdown(report))
    assert "## Upstream tests, cross-run" in text
    assert "could not tell `alpha_test.py::ScaleTest::test_flaky_everywhere`: fails in its own environment" in text
    assert upstream_section.finding_line(report["findings"][0]).startswith("1. **changed** `optax.alpha.scale`")
    assert upstream_section.markdown({"verdict": "pass"}) == []


def test_an_overlay_keeps_none_of_the_environments_distributions(tmp_path: Path) -> None:
    """``missing_requirements.prune`` (shared by the overlays here and the bisection's
    missing requirements) removes the distributions the environment has: a
    ``NAME-VERSION.dist-info`` folder is NAME's (not ``numpy-2.5.5.dist``'s, which
    would leave the environment's numpy shadowed)."""
    from optax_gate.gate.install import missing_requirements

    for name, version, top in (("numpy", "2.5.5", "numpy"), ("scikit_learn", "1.9.1", "sklearn")):
        info = tmp_path / f"{name}-{version}.dist-info"
        info.mkdir()
        (tmp_path / top).mkdir()
        (tmp_path / top / "__init__.py").write_text("", encoding="utf-8")
        (info / "RECORD").write_text(f"{top}/__init__.py,,\n{info.name}/RECORD,,\n", encoding="utf-8")
    missing_requirements.prune(tmp_path, {"numpy"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scikit_learn-1.9.1.dist-info", "sklearn"]


def test_the_overlay_is_found_from_the_temporary_folder() -> None:
    """pytest runs in a temporary folder, so the --cache-dir overlay goes on
    PYTHONPATH as an absolute path: a relative one finds nothing there (for example 36
    'No module named chex' on 0.2.6 -> 0.2.8)."""
    env = pytest_run.with_overlay({"PYTHONPATH": "/x"}, Path(".nox/gate-cache/deps"))
    first, second = env["PYTHONPATH"].split(":")
    assert Path(first).is_absolute() and first.endswith(".nox/gate-cache/deps") and second == "/x"


_GAMMA = {
    "baseline": "def kept():\n    return 1\n",
    "candidate": "def kept():\n    return 2\n\ndef only_new():\n    return 3\n",
}
_MARK = """
import os

def _mark(what):
    with open(os.environ["XRUN_MARKS"], "a", encoding="utf-8") as f:
        f.write(what + "\\n")
"""
_GAMMA_TEST = {
    "baseline": _MARK
    + """
from optax import gamma

def test_passes_everywhere():
    _mark("passes")

def test_kept():
    _mark("kept")
    assert gamma.kept() == 1
""",
    # fails to collect in the baseline (a name new in the candidate); collects at home
    "candidate": """
from optax.gamma import only_new
"""
    + _MARK
    + """
def test_only_new():
    _mark("only_new ran")
    assert only_new() == 3
""",
}
#: fails to collect on both sides: its control (collecting at home) fails too
_DELTA_TEST = "from optax.delta import nowhere  # noqa: F401\n\ndef test_nowhere():\n    pass\n"


def test_the_control_reruns_failing_ids_and_only_collects_a_file_that_failed_to_collect(tmp_path: Path) -> None:
    """The control run in the tests' own environment re-runs just the failing
    test ids, and a file that failed to collect is only collected there
    (``--collect-only``), never run whole: optax's ``alias_test.py`` has
    thousands of tests, and its whole re-run took as long as the cross-run
    itself (0.2.6 -> 0.2.8). The tests write a line per run into a marks file."""
    sites = {}
    for side in ("baseline", "candidate"):
        pkg = tmp_path / side / "optax"
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text("", encoding="utf-8")
        (pkg / "gamma.py").write_text(_GAMMA[side], encoding="utf-8")
        (pkg / "gamma_test.py").write_text(_GAMMA_TEST[side], encoding="utf-8")
        (pkg / "delta.py").write_text(f"SIDE = {side!r}\n", encoding="utf-8")
        if side == "candidate":
            (pkg / "delta_test.py").write_text(_DELTA_TEST, encoding="utf-8")
        sites[side] = tmp_path / side
    marks = tmp_path / "marks.txt"
    py = Path(sys.executable)
    section = up.cross_run(
        sites,
        {"baseline": py, "candidate": py},
        up.CrossRunOptions(
            tmp_path / "cache",
            timeout=300,
            workers=1,
            extra_env={side: {"PYTHONPATH": str(site), "XRUN_MARKS": str(marks)} for side, site in sites.items()},
        ),
        say=lambda _: None,
    )
    base, cand = section["directions"]
    assert [(f["test"], f["kind"], f["change"]) for f in base["failures"]] == [
        ("gamma_test.py::test_kept", failures.BEHAVIOUR, "changed")
    ]
    got = {f["test"]: (f["kind"], f["change"], f["subject"]) for f in cand["failures"]}
    assert got["gamma_test.py"] == (failures.API, "new", "optax.gamma.only_new")  # it collects at home: still new
    assert got["delta_test.py"][0] == failures.INFRA and "own environment" in got["delta_test.py"][2]
    # the main run ran both baseline tests once, the control only the failing one; no candidate test ran anywhere
    assert sorted(marks.read_text(encoding="utf-8").split("\n")[:-1]) == ["kept", "kept", "passes"]
    assert base["control"]["tests"] == 1 and base["control"]["files"] == 0
    assert cand["control"]["tests"] == 0 and cand["control"]["files"] == 2
    # a test file that does not import in the other environment is named in the section: none of its tests ran
    text = "\n".join(upstream_section.markdown(assemble.with_upstream_tests({"findings": []}, section)))
    assert "did not run: `gamma_test.py` does not import there" in text


#: The fake optax of each side for the split by cause: `noisy` follows the other packages (a fake `fakenum`
#: distribution, version 1 in the baseline, 2 in the candidate), `scaled` follows optax, `joint` moves only with both.
_EPS = {
    "baseline": "import fakenum\n\ndef noisy():\n    return 1.0 if fakenum.VERSION == 1 else 1.1\n\ndef scaled():\n    "
    "return 2\n\ndef joint():\n    return 0\n",
    "candidate": (
        "import fakenum\n\ndef noisy():\n    return 1.0 if fakenum.VERSION == 1 else 1.1\n\ndef scaled():\n    "
        "return 3\n\n"
        "def joint():\n    return 0 if fakenum.VERSION == 1 else 5\n"
    ),
}
_EPS_TEST = {
    "baseline": (
        "from optax import eps\n\ndef test_noisy():\n    assert eps.noisy() == 1.0\n\n"
        "def test_scaled():\n    assert eps.scaled() == 2\n\ndef test_joint():\n    assert eps.joint() == 0\n"
    ),
    "candidate": "from optax import eps\n\ndef test_noisy_new():\n    assert eps.noisy() == 1.1\n\ndef "
    "test_scaled_new():\n    assert eps.scaled() == 3\n",
}


def _split_sites(tmp_path: Path, candidate_init: str = "") -> tuple[dict[str, Path], dict[str, dict[str, str]]]:
    """Two fake optax sites and, per side, a fake `fakenum` distribution (1 and 2) on its PYTHONPATH."""
    sites, env = {}, {}
    for side, version in (("baseline", 1), ("candidate", 2)):
        pkg = tmp_path / side / "optax"
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text(candidate_init if side == "candidate" else "", encoding="utf-8")
        (pkg / "eps.py").write_text(_EPS[side], encoding="utf-8")
        (pkg / "eps_test.py").write_text(_EPS_TEST[side], encoding="utf-8")
        dist = tmp_path / f"fakenum-{side}"
        (dist / "fakenum").mkdir(parents=True)
        (dist / "fakenum" / "__init__.py").write_text(f"VERSION = {version}\n", encoding="utf-8")
        (dist / f"fakenum-{version}.dist-info").mkdir()
        (dist / f"fakenum-{version}.dist-info" / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: fakenum\nVersion: {version}\n", encoding="utf-8"
        )
        if side == "candidate":  # a distribution on one side only
            (dist / "onlycand-1.dist-info").mkdir()
            (dist / "onlycand-1.dist-info" / "METADATA").write_text(
                "Metadata-Version: 2.1\nName: onlycand\nVersion: 1\n"
            )
        sites[side] = tmp_path / side
        env[side] = {"PYTHONPATH": f"{sites[side]}:{dist}"}
    return sites, env


def test_a_failure_that_moves_with_the_other_packages_is_not_an_optax_finding(tmp_path: Path) -> None:
    """Where the two environments differ beyond optax (a JAX bump), each behaviour failure is re-run with one
    side's optax on the other side's packages: one that the candidate's optax alone leaves as in the baseline,
    and its other packages alone move, is listed as theirs and is no finding (0.2.6 -> 0.2.8 with JAX 0.11.2 ->
    0.12.0.1: ``LBFGSTest::test_against_plain_implementation3`` fails with either optax on JAX 0.12.0.1 and passes
    with either on 0.11.2)."""
    sites, env = _split_sites(tmp_path)
    py = Path(os.path.relpath(sys.executable))  # as the gate names its environments: relative to where it started
    section = up.cross_run(
        sites,
        {"baseline": py, "candidate": py},
        up.CrossRunOptions(tmp_path / "cache", 300, env, 1),
        say=lambda _: None,
    )
    assert section["other_packages"] == ["fakenum 1 → 2", "onlycand only in the candidate"]  # moved versions first
    base, cand = (
        {f["test"].rsplit("::", 1)[-1]: (f["kind"], f.get("moved_by")) for f in d["failures"]}
        for d in section["directions"]
    )
    assert base == {
        "test_noisy": (failures.OTHERS, "other packages"),
        "test_scaled": (failures.BEHAVIOUR, "optax"),
        "test_joint": (failures.BEHAVIOUR, "both together"),
    }
    assert cand == {
        "test_noisy_new": (failures.OTHERS, "other packages"),
        "test_scaled_new": (failures.BEHAVIOUR, "optax"),
    }
    # one finding per API and change across both directions; each says what its split found
    by_api = {
        f["api"]: (sorted(t.rsplit("::", 1)[-1] for t in f["contracts"]), f["cause"]) for f in section["findings"]
    }
    assert sorted(by_api) == ["optax.eps.joint", "optax.eps.scaled"]
    assert by_api["optax.eps.scaled"][0] == ["test_scaled", "test_scaled_new"]
    assert "it moves with optax: the candidate's optax alone gives it" in by_api["optax.eps.scaled"][1]
    assert "it needs both the candidate's optax and its other packages" in by_api["optax.eps.joint"][1]
    # three ids with the candidate's optax on the baseline's packages, two left as in the baseline the other way
    assert section["directions"][0]["split"]["tests"] == 5 and section["directions"][0]["split"]["error"] == ""
    report = assemble.with_upstream_tests({"verdict": "pass", "reasons": [], "findings": []}, section)
    text = "\n".join(upstream_section.markdown(report))
    assert "Besides optax, 2 distributions differ (fakenum 1 → 2, onlycand only in the candidate)" in text
    assert (
        "not optax: `eps_test.py::test_noisy` moves with the other packages (fakenum 1 → 2), not with optax" in text
    )  # moved versions only


def test_a_split_that_cannot_be_made_keeps_the_finding(tmp_path: Path) -> None:
    """The candidate's optax that does not import on the baseline's packages cannot be split: every behaviour
    failure stays a finding, ``moved_by`` "not split", and the section says why."""
    sites, env = _split_sites(tmp_path, candidate_init="import fakenum\nassert fakenum.VERSION == 2\n")
    py = Path(sys.executable)
    section = up.cross_run(
        sites,
        {"baseline": py, "candidate": py},
        up.CrossRunOptions(tmp_path / "cache", 300, env, 1),
        say=lambda _: None,
    )
    base = section["directions"][0]
    assert {f["test"].rsplit("::", 1)[-1]: (f["kind"], f.get("moved_by")) for f in base["failures"]} == {
        name: (failures.BEHAVIOUR, "not split") for name in ("test_noisy", "test_scaled", "test_joint")
    }
    assert "does not import" in base["split"]["error"]


def test_report_html_shows_the_cross_runs_findings_and_its_section(section: Any) -> None:
    """report.html folds a cross-run finding as report.md lists it, and carries the cross-run's section (its
    findings pointed to a section the page lacked, and one raised KeyError on the way: not verified)."""
    from optax_gate.gate.judge import causes
    from optax_gate.gate.report import html_page
    from tests.meta.support.reports import REAL

    judged: Any = {**REAL, "findings": causes.of_report(REAL["contracts"], candidate_ran=True)}  # as the gate writes it
    report = assemble.with_upstream_tests(judged, section)
    page = html_page.render(report)
    number = report["upstream_tests"]["findings"][0]["number"]
    assert f'<details class="finding" id="f{number}">' in page
    assert "upstream tests fail: AssertionError" in page and "(baseline tests in the candidate)" in page
    assert 'id="upstream-tests-cross-run"' in page and "Upstream tests, cross-run" in page
    assert "<ul><li>could not tell <code>alpha_test.py::ScaleTest::test_flaky_everywhere</code>" in page  # nested


def test_a_finding_names_the_public_path_of_what_it_is_about(tmp_path: Path) -> None:
    """A failing upstream test of ``optax/_impl.py`` is about ``optax._impl.scale``, which a team calls as
    ``optax.scale``: the finding names the shortest public path of the object (read from the installed package
    without importing it), and the private path only where no public one leads to it."""
    pkg = tmp_path / "optax"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from optax._impl import scale\nfrom optax import sub\n")
    (pkg / "_impl.py").write_text("def scale(x):\n    return x\n\n\ndef _hidden():\n    return 0\n")
    (pkg / "sub" / "__init__.py").write_text("from optax._impl import scale\n")
    public = up.public_paths(tmp_path)
    assert public["optax._impl.scale"] == "optax.scale"
    assert "optax._impl._hidden" not in public


def test_the_note_counts_each_directions_failures_in_the_reports_words(section: Any) -> None:
    note = up.note(section)
    base, cand = note.split("; candidate tests in the baseline")
    assert (
        "baseline tests in the candidate: 5 run, 5 failed (1 a name on one side only, 2 changed, 2 could not tell)"
        in base
    )
    assert cand.startswith(": 2 run, 1 failed (1 a name on one side only)")


def test_a_private_path_that_moved_behind_a_public_name_is_no_finding(tmp_path: Path) -> None:
    """A test that imports ``optax._util.g`` fails where ``g`` moved to ``optax._other``, but ``optax.g`` is public on
    both sides: no team call changes, so it is listed as could not tell, naming the public path, never as a name
    gone (0.2.6 -> 0.2.8: ``value_and_grad_from_state`` moved from ``_src/utils`` to ``_src/linesearch``)."""
    sites = {}
    for side, util, other in (
        ("baseline", "def g():\n    return 1\n", ""),
        ("candidate", "", "def g():\n    return 1\n"),
    ):
        pkg = tmp_path / side / "optax"
        pkg.mkdir(parents=True)
        where = "_util" if side == "baseline" else "_other"
        (pkg / "__init__.py").write_text(f"from optax.{where} import g\n")
        (pkg / "_util.py").write_text(util + "VERSION = " + repr(side) + "\n")
        (pkg / "_other.py").write_text(other)
        (pkg / "_util_test.py").write_text("from optax._util import g\n\ndef test_g():\n    assert g() == 1\n")
        sites[side] = tmp_path / side
    py = Path(sys.executable)
    env = {side: {"PYTHONPATH": str(site)} for side, site in sites.items()}
    section = up.cross_run(
        sites, {"baseline": py, "candidate": py}, up.CrossRunOptions(tmp_path / "c", 300, env, 1), say=lambda _: None
    )
    (failure,) = section["directions"][0]["failures"]
    assert failure["kind"] == failures.INFRA and "public on both sides as `optax.g`" in failure["subject"]
    assert section["findings"] == []
