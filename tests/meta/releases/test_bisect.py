"""Meta tests of the bisection (gate/bisect/) on synthetic git
repositories of a tiny package named ``optax`` (seven first-parent commits:
one that does not build, one that changes the value a tiny contract pins).

The candidate environment is this tests session's own Python: it has the
real optax installed, so the contract runs also prove that the commit's build
shadows the installed package (the import check). Each commit's wheel is
built for real (``uv build``, ``source_build``), installed with ``uv pip
install --target`` and the tiny contract run by pytest with the suite's plugin,
as in a gate run; only the project folder is a small one."""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from optax_gate.gate.base.run_record import RunRecord
from optax_gate.gate.bisect import command as bisect_command
from optax_gate.gate.bisect import flow as bisect_flow
from optax_gate.gate.bisect.history import first_parent, release_commit
from optax_gate.gate.bisect.probe import Prober
from optax_gate.gate.bisect.search import Answer, Target, Unusable, search
from optax_gate.gate.inputs.options import BisectCommandOptions, BisectOptions, EnvironmentOptions
from optax_gate.gate.install import source_build
from optax_gate.gate.judge import compare
from optax_gate.gate.report import json_file as report_json
from optax_gate.gate.report import markdown as report_markdown
from tests.meta.support.gate_cli import uv_env
from tests.meta.support.paths import ROOT
from tests.meta.support.source_repos import PYPROJECT as TINY_PYPROJECT
from tests.meta.support.source_repos import commit, git

needs_uv = pytest.mark.skipif(uv_env() is None, reason="needs uv: run ./noxw once (it installs uv into .noxw/)")

PYPROJECT = TINY_PYPROJECT.replace('name = "tinypkg"', 'name = "optax"')  # the tiny package, named optax
CONTRACT = "tests/contracts/test_tiny.py::test_value_is_one"
OTHER = "tests/contracts/test_tiny.py::test_value_below_two"
CONTRACTS = """import pytest
from optax_gate.kit import guides


@pytest.mark.contract(api="optax.VALUE", guide=guides.SGD_STEP)
@pytest.mark.golden
def test_value_is_one():
    import optax
    assert optax.VALUE == 1


@pytest.mark.contract(api="optax.VALUE", guide=guides.SGD_STEP)
@pytest.mark.golden
def test_value_below_two():
    import optax
    assert optax.VALUE < 2
"""


def tiny_history(path: Path, change_at: int, broken_at: int | None, version: str = "0.1.0") -> list[str]:
    """Commits 0..6 (0 tagged v0.1.0, 6 tagged v0.2.0), each building the tiny optax
    ``version``: ``change_at`` sets VALUE = 2 (subject with PR #42), ``broken_at``
    has an unparsable pyproject.toml (the next commit mends it). Returns the SHAs."""
    path.mkdir(parents=True)
    git(path, "init", "--quiet", "-b", "main")
    shas, value = [], 1
    for i in range(7):
        files = {
            "pyproject.toml": PYPROJECT.replace('version = "0.1.0"', f'version = "{version}"'),
            f"notes/{i}.txt": f"commit {i}\n",
        }
        if i == change_at:
            value = 2
        files["optax/__init__.py"] = f'"""tiny."""\nVALUE = {value}\n'
        if i == broken_at:
            files["pyproject.toml"] = "[build-system\n"
        subject = "Change the value (#42)" if i == change_at else f"Commit {i}"
        shas.append(commit(path, files, subject))
        if i in (0, 6):
            git(path, "tag", "v0.1.0" if i == 0 else "v0.2.0")
    return shas


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("project")
    (root / "tests" / "contracts").mkdir(parents=True)
    (root / "tests" / "contracts" / "test_tiny.py").write_text(CONTRACTS)
    return root


class Counting:
    """``source_build.build_wheel`` counting its calls per commit."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}

    def __call__(self, repo: Any, ref: Any, cache_dir: Any, timeout: Any) -> Any:
        self.calls[ref] = self.calls.get(ref, 0) + 1
        return source_build.build_wheel(repo, ref, cache_dir, timeout)


def record(label: str, version: str, outcomes: dict[str, str]) -> dict[str, Any]:
    # two APIs: two findings (one API's findings are one finding since causes.merge, issue 25)
    contracts = {
        cid: {
            "api": "optax.VALUE" if cid != OTHER else "optax.VALUE_BELOW",
            "guide": "g",
            "kind": "golden",
            "outcome": o,
            "detail": "" if o == "passed" else "AssertionError: assert 2 == 1",
        }
        for cid, o in outcomes.items()
    }
    return {
        "label": label,
        "status": "ran",
        "reason": "",
        "requirements": [f"optax=={version}"],
        "versions": {"optax": version, "jax": "1", "python": "3.12"},
        "contracts": contracts,
    }


def _env(project: Any) -> Any:
    """The environment options a Prober reads (its project root)."""
    return EnvironmentOptions(
        project_root=project, baseline_lock=project / "requirements-lock.txt", python=sys.executable, envs_dir=project
    )


def report_of(baseline: dict[str, str], candidate: dict[str, str]) -> Any:
    return compare.compare(
        RunRecord.from_json(record("baseline", "0.1.0", baseline)),
        RunRecord.from_json(record("candidate", "0.2.0", candidate)),
    )


@pytest.fixture(scope="module")
def found(tmp_path_factory: pytest.TempPathFactory, project: Any) -> Any:
    """The search on a history whose commit 5 changes the value and commit 3
    does not build: two findings (two contracts whose outcomes change at the
    same commit), run twice over one cache."""
    tmp = tmp_path_factory.mktemp("found")
    shas = tiny_history(tmp / "repo", change_at=5, broken_at=3)
    builds = Counting()
    report: Any = report_of({CONTRACT: "passed", OTHER: "passed"}, {CONTRACT: "failed", OTHER: "failed"})
    assert [f["contracts"] for f in report["findings"]] in (
        [[CONTRACT], [OTHER]],
        [[OTHER], [CONTRACT]],
    )  # two findings

    def make(package: Any, repo: Any) -> Any:
        return Prober(
            package,
            repo,
            Path(sys.executable),
            _env(project),
            BisectOptions(cache=tmp / "cache", timeout=120),
            build=builds,
        )

    summary = bisect_flow.attach(report, make, {"optax": str(tmp / "repo")}, BisectOptions(cache=tmp / "cache"))
    again: Any = report_of({CONTRACT: "passed"}, {CONTRACT: "failed"})
    bisect_flow.attach(again, make, {"optax": str(tmp / "repo")}, BisectOptions(cache=tmp / "cache"))
    return shas, report, summary, builds, again, tmp


@needs_uv
def test_the_search_names_the_commit_that_changed_the_pinned_value(found: Any) -> None:
    shas, report, summary, _, _, _ = found
    for finding in report["findings"]:
        (entry,) = finding["bisect"]
        assert entry["status"] == "found", entry
        assert entry["commits"][0]["sha"] == shas[5]
        assert entry["commits"][0]["pr"] == 42 and entry["commits"][0]["subject"] == "Change the value (#42)"
        assert entry["commits"][0]["url"] == f"https://github.com/google-deepmind/optax/commit/{shas[5]}"
        assert (entry["from"], entry["to"]) == ("v0.1.0", "v0.2.0")
    assert summary["packages"]["optax"]["commits"] == 6 and summary["packages"]["optax"]["searches"] == 2
    jsonschema = pytest.importorskip(
        "jsonschema", reason="jsonschema comes with the tools lock (requirements-tools.txt)"
    )
    schema = json.loads(
        (Path(__file__).resolve().parents[3] / "src/optax_gate/gate/report/report.schema.json").read_text()
    )
    jsonschema.validate(json.loads(report_json.render(report)), schema)  # schema 3: the bisect fields
    text = report_markdown.render(report)
    assert (
        f"   - changed by optax [`{shas[5][:7]}`](https://github.com/google-deepmind/optax/commit/{shas[5]}) "
        "Change the value ([#42](https://github.com/google-deepmind/optax/pull/42), 20"
    ) in text


@needs_uv
def test_each_commit_is_built_once_across_findings_and_runs(found: Any) -> None:
    shas, _, _summary, builds, again, tmp = found
    assert builds.calls, "nothing was built"
    # two findings, two bisections over one cache: each commit built once; a failed build is tried again
    # in the second run only (it may have failed for a passing reason, such as the index being down)
    assert builds.calls.pop(shas[3]) == 2, "the unbuildable commit was not tried once per run"
    assert set(builds.calls.values()) == {1}, builds.calls
    built = {p.name for p in (tmp / "cache" / "wheels").iterdir() if (p / source_build.BUILT_FILE).exists()}
    assert built == set(builds.calls)
    assert again["findings"][0]["bisect"][0]["commits"][0]["sha"] == shas[5]


@needs_uv
def test_an_unbuildable_commit_next_to_the_change_gives_the_range(tmp_path: Path, project: Any) -> None:
    shas = tiny_history(tmp_path / "repo", change_at=3, broken_at=2)
    report: Any = report_of({CONTRACT: "passed"}, {CONTRACT: "failed"})
    bisect_flow.attach(
        report,
        lambda package, repo: Prober(
            package, repo, Path(sys.executable), _env(project), BisectOptions(cache=tmp_path / "cache", timeout=120)
        ),
        {"optax": str(tmp_path / "repo")},
        BisectOptions(cache=tmp_path / "cache"),
    )
    (entry,) = report["findings"][0]["bisect"]
    assert entry["status"] == "range", entry
    assert [c["sha"] for c in entry["commits"]] == [shas[2], shas[3]]
    assert "cannot be built" in entry["skipped"][shas[2][:12]] and "build stage" in entry["skipped"][shas[2][:12]]
    assert "one of 2 commits" in report_markdown.render(report)


LEDGER_IN_RANGE = """[[moved]]
contract = "tests/contracts/test_tiny.py::test_value_is_one"
optax = ">=0.2.0.dev0"
fails = "assert 2 == 1"
why = "the tiny optax 0.2.0 moved VALUE to 2"
"""


@needs_uv
def test_a_commits_contracts_are_judged_against_the_gates_baseline_not_the_commits_own_version(tmp_path: Path) -> None:
    """Every commit builds the tiny optax 0.2.0.dev0, which a ledger entry of the project holds
    (``>=0.2.0.dev0``); the gate's baseline ran optax 0.1.0, outside it. The probe passes the
    report's baseline version (``$OPTAX_GATE_BASELINE_OPTAX``), so the ledger stays silent
    and the contract pins 0.1.0's value: the change at commit 5 is named. Judged against
    the commit's own version, the ledger would turn each outcome over and both ends would
    give the candidate's outcome."""
    root = tmp_path / "project"
    (root / "tests" / "contracts").mkdir(parents=True)
    (root / "tests" / "contracts" / "test_tiny.py").write_text(CONTRACTS)
    (root / "tests" / "contracts" / "moved_behaviour.toml").write_text(LEDGER_IN_RANGE)
    shas = tiny_history(tmp_path / "repo", change_at=5, broken_at=9, version="0.2.0.dev0")
    report: Any = report_of({CONTRACT: "passed"}, {CONTRACT: "failed"})
    assert bisect_command.baseline_optax(report) == "0.1.0"
    run = tmp_path / "run"
    bisect_flow.write(report, run)
    env = EnvironmentOptions(
        project_root=root, baseline_lock=root / "requirements-lock.txt", python=sys.executable, envs_dir=tmp_path
    )
    options = BisectOptions(history=(f"optax={tmp_path / 'repo'}",), cache=tmp_path / "cache", timeout=120)
    bisect_command.bisect_run(report, run, Path(sys.executable), env, options, lambda message: None)
    (entry,) = json.loads((run / "report.json").read_text())["findings"][0]["bisect"]
    assert entry["status"] == "found", entry
    assert entry["commits"][0]["sha"] == shas[5]


def test_a_probe_passes_the_baseline_optax_to_its_contract_runs(tmp_path: Path) -> None:
    """The version given (the report's baseline), else the baseline lock's; never the commit's own."""
    lock = tmp_path / "lock.txt"
    lock.write_text("optax==0.2.6 \\\n    --hash=sha256:aa\n")
    env = EnvironmentOptions(project_root=tmp_path, baseline_lock=lock, python=sys.executable, envs_dir=tmp_path)
    variable = "OPTAX_GATE_BASELINE_OPTAX"
    from_lock = Prober("optax", tmp_path, Path(sys.executable), env, BisectOptions(cache=tmp_path))
    given = Prober("optax", tmp_path, Path(sys.executable), env, BisectOptions(cache=tmp_path), {variable: "0.2.5"})
    assert from_lock._env([tmp_path])[variable] == "0.2.6"
    assert given._env([tmp_path])[variable] == "0.2.5"


@needs_uv
def test_the_import_check_refuses_a_build_that_does_not_shadow_the_installed_package(
    tmp_path: Path, project: Any
) -> None:
    tiny_history(tmp_path / "repo", change_at=3, broken_at=9)
    prober = Prober(
        "optax",
        tmp_path / "repo",
        Path(sys.executable),
        _env(project),
        BisectOptions(cache=tmp_path / "cache", timeout=120),
    )
    paths = prober.paths(git(tmp_path / "repo", "rev-parse", "v0.1.0"))
    assert len(paths) == 1  # the tiny package requires nothing
    prober.check_import(paths)  # comes from the build's folder
    shutil.rmtree(paths[0] / "optax")
    with pytest.raises(Unusable, match="imports from .*, not from the commit's build"):
        prober.check_import(paths)


def test_an_unreachable_history_leaves_each_finding_not_bisected_with_gits_reason(tmp_path: Path) -> None:
    report: Any = report_of({CONTRACT: "passed"}, {CONTRACT: "failed"})
    verdict = report["verdict"]
    missing = (tmp_path / "nothere.git").as_uri()
    bisect_flow.attach(
        report,
        lambda package, repo: pytest.fail("nothing is probed"),
        {"optax": missing},
        BisectOptions(cache=tmp_path / "cache"),
    )
    (entry,) = report["findings"][0]["bisect"]
    assert entry["status"] == "not-bisected" and "nothere.git" in entry["reason"], entry
    assert report["verdict"] == verdict and report["bisect"]["packages"]["optax"]["error"]
    assert "   - not bisected (optax): " in report_markdown.render(report)


def test_a_bisection_interrupted_keeps_the_written_report_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = tmp_path / "run"
    report: Any = report_of({CONTRACT: "passed"}, {CONTRACT: "failed"})
    bisect_flow.write(report, run)
    before = json.loads((run / "report.json").read_text())

    def interrupted(sha: Any, contracts: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(
        bisect_command, "_prober_factory", lambda python, env, bisect, folder, report: lambda package, repo: interrupted
    )
    monkeypatch.setattr(bisect_flow, "open_history", lambda package, where, cache: tmp_path)
    monkeypatch.setattr(bisect_flow, "release_commit", lambda repo, version: (f"v{version}", f"{version}-sha"))
    monkeypatch.setattr(bisect_flow, "first_parent", lambda repo, old, new: [old, "c1", new])
    env = EnvironmentOptions(
        project_root=ROOT, baseline_lock=ROOT / "requirements-lock.txt", python=sys.executable, envs_dir=tmp_path
    )
    with pytest.raises(KeyboardInterrupt):
        bisect_command.bisect_run(
            before, run, Path(sys.executable), env, BisectOptions(cache=tmp_path / "cache"), lambda message: None
        )
    after = json.loads((run / "report.json").read_text())
    assert after["verdict"] == before["verdict"] and after["contracts"] == before["contracts"]
    assert after["findings"][0]["bisect"][0]["reason"] == "interrupted (KeyboardInterrupt)"
    assert "not bisected (optax): interrupted" in (run / "report.md").read_text()


# The search alone, with probes that need no build: the ends, the other outcomes, shared probes.


def _probe(
    change: int,
    unusable: set[int] | frozenset[int] = frozenset(),
    other: set[int] | frozenset[int] = frozenset(),
    calls: list[Any] | None = None,
) -> Any:
    def probe(sha: str, contracts: list[str]) -> dict[str, str]:
        i = int(sha)
        if calls is not None:
            calls.append((i, tuple(contracts)))
        if i in unusable:
            raise Unusable("cannot be built: no")
        outcome = "error" if i in other else "failed" if i >= change else "passed"
        return {c: outcome for c in contracts}

    return probe


def test_the_ends_must_reproduce_their_sides_else_no_commit_is_named() -> None:
    commits = [str(i) for i in range(10)]
    target = Target.of([{"id": "a", "baseline": "passed", "candidate": "failed"}])
    (answer,) = search(commits, [target], _probe(change=0), ends=("v1", "v2")).values()
    assert answer.status == "not-bisected" and "already gives the candidate's outcomes" in answer.reason
    (answer,) = search(commits, [target], _probe(change=99), options=BisectOptions(env="baseline")).values()
    assert (
        answer.status == "not-bisected"
        and "still gives the baseline's outcomes in the baseline environment" in answer.reason
    )
    (answer,) = search(commits, [target], _probe(change=4, unusable={0})).values()
    assert answer.status == "not-bisected" and "cannot be tested: cannot be built" in answer.reason


def test_searches_share_each_commit_and_outcomes_of_neither_side_are_skipped() -> None:
    commits = [str(i) for i in range(40)]
    a = Target.of([{"id": "a", "baseline": "passed", "candidate": "failed"}])
    b = Target.of([{"id": "b", "baseline": "passed", "candidate": "failed"}])
    calls: list[Any] = []
    answers = search(commits, [a, b, a], _probe(change=17, other={16}, calls=calls))
    assert answers[a].status == answers[b].status == "range" and answers[a].commits == answers[b].commits == [
        "16",
        "17",
    ]
    assert "neither the baseline's nor the candidate's" in answers[a].skipped["16"]
    probed = [i for i, _ in calls]
    assert len(probed) == len(set(probed)), "a commit was run twice"
    assert all(set(c) == {"a", "b"} for _, c in calls), "the two searches did not share a run"
    assert isinstance(answers[a], Answer) and answers[a].tested == len(probed)


@pytest.mark.parametrize("change", [1, 2, 13, 38, 39])
def test_the_search_finds_every_position(change: Any) -> None:
    commits = [str(i) for i in range(40)]
    target = Target.of([{"id": "a", "baseline": "passed", "candidate": "failed"}])
    (answer,) = search(
        commits, [target], _probe(change=change, unusable={c for c in (5, 20, 30) if c != change})
    ).values()
    assert answer.status == "found" and answer.commits == [str(change)], answer


@needs_uv
def test_release_tags_and_first_parent_commits_of_a_real_repository(tmp_path: Path) -> None:
    shas = tiny_history(tmp_path / "repo", change_at=3, broken_at=9)
    repo = tmp_path / "repo"
    assert release_commit(repo, "0.1.0") == ("v0.1.0", shas[0])
    assert first_parent(repo, shas[0], shas[6]) == shas
    git(repo, "checkout", "--quiet", "-b", "side", shas[2])
    side = commit(repo, {"side.txt": "x"}, "side")
    git(repo, "checkout", "--quiet", "main")
    git(repo, "merge", "--quiet", "--no-ff", "-m", "Merge pull request #7 from a/side", "side")
    merged = git(repo, "rev-parse", "HEAD")
    assert first_parent(repo, shas[0], merged) == [*shas, merged]  # the side branch's commit is not walked
    assert side not in first_parent(repo, shas[0], merged)
    with pytest.raises(Exception, match="no release tag v9.9"):
        release_commit(repo, "9.9")


@needs_uv
def test_a_source_candidate_is_bisected_up_to_its_commit_in_its_own_repository(tmp_path: Path, project: Any) -> None:
    shas = tiny_history(tmp_path / "repo", change_at=2, broken_at=9)
    report: Any = report_of({CONTRACT: "passed"}, {CONTRACT: "failed"})
    report["candidate"]["sources"] = [
        {
            "package": "optax",
            "repository": str(tmp_path / "repo"),
            "ref": "main",
            "status": "built",
            "commit": {"sha": shas[4], "short": shas[4][:7]},
        }
    ]
    summary = bisect_flow.attach(
        report,
        lambda package, repo: Prober(
            package, repo, Path(sys.executable), _env(project), BisectOptions(cache=tmp_path / "cache", timeout=120)
        ),
        {},
        BisectOptions(cache=tmp_path / "cache"),
    )
    (entry,) = report["findings"][0]["bisect"]
    assert entry["status"] == "found" and entry["commits"][0]["sha"] == shas[2], entry
    assert (entry["from"], entry["to"]) == ("v0.1.0", shas[4][:12])
    assert (
        summary["packages"]["optax"]["history"] == str(tmp_path / "repo")
        and summary["packages"]["optax"]["commits"] == 4
    )


@pytest.mark.parametrize(("change", "status", "most"), [(115, "found", 14), (40, "range", 82)])
def test_a_block_of_unusable_commits_is_not_walked_while_the_range_is_open(change: Any, status: Any, most: Any) -> None:
    """optax's history between v0.2.6 and v0.2.8 has dozens of commits in a row that set a jax option
    jax 0.12 lacks. A change outside such a block is found without testing the block commit by commit;
    one inside it gets the block as its range (every commit of it tried: none can be told apart)."""
    commits = [str(i) for i in range(130)]
    target = Target.of([{"id": "a", "baseline": "passed", "candidate": "failed"}])
    calls: list[Any] = []
    (answer,) = search(commits, [target], _probe(change=change, unusable=set(range(30, 100)), calls=calls)).values()
    assert answer.status == status and answer.commits == (
        [str(change)] if status == "found" else [str(i) for i in range(30, 101)]
    )
    assert len(calls) <= most, f"{len(calls)} commits tested: {[i for i, _ in calls]}"


def test_gate_bisect_after_the_report_keeps_the_verdict_and_survives_sigterm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``gate --bisect``: the run's complete report is bisected in place; SIGTERM during the bisection
    (the cli's ``Interrupted``) ends the bisection only, the report saying so, the gate's status untouched."""
    from optax_gate.gate.cli import Interrupted

    run = tmp_path / "run"
    report: Any = report_of({CONTRACT: "passed"}, {CONTRACT: "failed"})
    bisect_flow.write(report, run)

    def stopped(sha: Any, contracts: Any) -> None:
        raise Interrupted("SIGTERM")

    monkeypatch.setattr(
        bisect_command, "_prober_factory", lambda python, env, bisect, folder, report: lambda package, repo: stopped
    )
    monkeypatch.setattr(bisect_flow, "open_history", lambda package, where, cache: tmp_path)
    monkeypatch.setattr(bisect_flow, "release_commit", lambda repo, version: (f"v{version}", f"{version}-sha"))
    monkeypatch.setattr(bisect_flow, "first_parent", lambda repo, old, new: [old, new])
    env = EnvironmentOptions(
        project_root=ROOT, baseline_lock=ROOT / "requirements-lock.txt", python=sys.executable, envs_dir=tmp_path
    )
    bisect_command.after_gate(
        run, Path(sys.executable), env, BisectOptions(cache=tmp_path / "cache"), lambda message: None
    )  # returns: no exception
    after = json.loads((run / "report.json").read_text())
    assert after["verdict"] == report["verdict"] == "fail"
    assert after["findings"][0]["bisect"][0]["reason"] == "interrupted (SIGTERM)"
    assert "bisection was interrupted" in capsys.readouterr().err


_AFTER = """
from optax_gate.gate.run import evidence
from optax_gate.gate.bisect import command as bisect_command
def _after(run, python, env, bisect, say):
    (run / "bisect-called").write_text(f"{python}|{evidence.is_complete(run)}|{(run / 'report.json').exists()}|{bisect.env}")
bisect_command.after_gate = _after
"""  # noqa: E501 (a script or page written out as it runs)


@pytest.mark.parametrize("extra", [(), ("--bisect",), ("--bisect", "--bisect-env", "baseline")])
def test_the_gate_bisects_only_with_bisect_once_its_run_is_complete(tmp_path: Path, extra: Any) -> None:
    """The wiring in the gate's flow, with the fake environments of ``test_cli``: ``--bisect`` starts the
    bisection after the run is complete (its report written and linked), with the chosen side's interpreter."""
    from tests.meta.support.late_phases import run_gate

    proc = run_gate(tmp_path, _AFTER, extra)
    assert proc.returncode == 0, proc.stderr
    called = (tmp_path / "out" / "latest").resolve() / "bisect-called"
    if not extra:
        assert not called.exists()
        return
    python, complete, written, side = called.read_text().split("|")
    assert (complete, written, side) == ("True", "True", extra[-1] if len(extra) > 1 else "candidate")
    assert Path(python).name == "fake-python" or "fake-python" in python


def test_a_long_range_reads_as_its_two_ends_and_why_the_rest_was_skipped() -> None:
    from optax_gate.gate.report import bisect_section as report_bisect

    commits: Any = [
        {
            "sha": f"{i + 1:x}" * 40,
            "short": f"{i:08x}",
            "date": f"2025-10-{i + 1:02d}T00:00:00+00:00",
            "subject": f"Commit {i}",
            "pr": None,
            "url": f"u{i}",
            "pr_url": "",
        }
        for i in range(7)
    ]
    entry: Any = {
        "package": "optax",
        "status": "range",
        "reason": "",
        "commits": commits,
        "skipped": {c["sha"][:12]: "cannot be imported: AttributeError: x" for c in commits[:-1]},
    }
    text = report_bisect.words(entry)
    assert text == (
        "changed by optax one of 7 commits: from 00000000 Commit 0 (2025-10-01) to 00000006 Commit 6 (2025-10-07) "
        "(6 could not be tested: cannot be imported: AttributeError: x)"
    ), text
    short = report_bisect.words(
        {**entry, "commits": commits[:2], "skipped": {commits[0]["sha"][:12]: "cannot be built: y"}}
    )
    assert short == (
        "changed by optax one of 2 commits: 00000000 Commit 0 (2025-10-01); 00000001 Commit 1 (2025-10-02) (1 "
        "could not be tested: cannot be built: y)"
    ), short


@needs_uv
def test_a_finding_of_the_teams_own_contracts_only_is_not_bisected_and_ours_still_are(
    tmp_path: Path, project: Any
) -> None:
    # a team contract (gate --contracts) lives outside the project: re-running its id per commit would fail
    # for every commit and turn the whole search into "cannot be tested"; it is named as not bisected instead
    shas = tiny_history(tmp_path / "repo", change_at=4, broken_at=None)
    base, cand = record("baseline", "0.1.0", {CONTRACT: "passed"}), record("candidate", "0.2.0", {CONTRACT: "failed"})
    team = {"api": "optax.sgd", "guide": "team: train.py", "kind": "golden", "team": "contracts"}
    base["contracts"]["contracts/test_sgd.py::test_step"] = {**team, "outcome": "passed", "detail": ""}
    cand["contracts"]["contracts/test_sgd.py::test_step"] = {**team, "outcome": "error", "detail": "TypeError: x"}
    report = compare.compare(RunRecord.from_json(base), RunRecord.from_json(cand))
    assert {r["id"]: r.get("team") for r in report["contracts"]}["contracts/test_sgd.py::test_step"] == "contracts"
    probed: list[list[str]] = []

    class Recording(Prober):
        def __call__(self, sha: Any, contracts: Any) -> Any:
            probed.append(list(contracts))
            return super().__call__(sha, contracts)

    def make(package: Any, repo: Any) -> Any:
        return Recording(
            package, repo, Path(sys.executable), _env(project), BisectOptions(cache=tmp_path / "cache", timeout=120)
        )

    bisect_flow.attach(report, make, {"optax": str(tmp_path / "repo")}, BisectOptions(cache=tmp_path / "cache"))
    by_contract = {tuple(f["contracts"]): f["bisect"][0] for f in report["findings"]}
    assert by_contract[("contracts/test_sgd.py::test_step",)] == bisect_flow.not_bisected(
        "optax", bisect_flow.TEAM_ONLY
    )
    assert by_contract[(CONTRACT,)]["status"] == "found" and by_contract[(CONTRACT,)]["commits"][0]["sha"] == shas[4]
    assert probed and all("contracts/test_sgd.py::test_step" not in ids for ids in probed)


def test_a_second_bisection_replaces_the_first_answers(tmp_path: Path) -> None:
    # a rerun of the bisect session replaces the 'changed by' lines, never appends a second set
    report: Any = report_of({CONTRACT: "passed"}, {CONTRACT: "failed"})
    for missing in ("nothere.git", "gone.git"):
        bisect_flow.attach(
            report,
            lambda package, repo: pytest.fail("nothing is probed"),
            {"optax": (tmp_path / missing).as_uri()},
            BisectOptions(cache=tmp_path / "cache"),
        )
    (entry,) = report["findings"][0]["bisect"]
    assert "gone.git" in entry["reason"]
    assert report_markdown.render(report).count("not bisected (optax)") == 1


def test_a_history_typo_or_a_folder_that_is_no_repository_is_refused_before_anything_runs(tmp_path: Path) -> None:
    from optax_gate.gate.bisect.history import parse_histories

    with pytest.raises(ValueError, match="unknown package 'optx': did you mean optax"):
        parse_histories(["optx=../optax"])
    with pytest.raises(ValueError, match="not a git repository: .*no such folder"):
        parse_histories([f"optax={tmp_path / 'nope'}"])
    with pytest.raises(ValueError, match="not a git repository"):
        parse_histories([f"optax={tmp_path}"])
    (tmp_path / "repo").mkdir()
    git(tmp_path / "repo", "init", "--quiet", "-b", "main")
    assert parse_histories([f"optax={tmp_path / 'repo'}"]) == {"optax": str(tmp_path / "repo")}
    assert parse_histories(["flax=https://example.org/flax"]) == {"flax": "https://example.org/flax"}  # tried when run


def test_the_bisect_command_skips_a_refused_latest_run_and_refuses_a_run_that_did_not_verify(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 'bisect' on an output folder whose newest run was refused bisects the newest judged run
    out = tmp_path / "out"
    good, refused = out / "runs" / "20261201T070000Z-a", out / "runs" / "20261201T080000Z-b"
    bisect_flow.write(report_of({CONTRACT: "passed"}, {CONTRACT: "failed"}), good)
    bad: Any = report_of({CONTRACT: "passed"}, {CONTRACT: "failed"})
    bad["candidate"] = {**bad["candidate"], "status": "not-run"}
    bad["reasons"] = ["candidate not verified: invalid input"]
    bisect_flow.write(bad, refused)
    (out / "report.json").symlink_to(refused / "report.json")
    env = EnvironmentOptions(
        project_root=ROOT, baseline_lock=ROOT / "requirements-lock.txt", python=sys.executable, envs_dir=tmp_path
    )
    given = BisectCommandOptions(
        report=refused, environment=env, bisect=BisectOptions(history=(f"optax={tmp_path / 'nope'}",))
    )
    assert bisect_command.command(given) == bisect_command.NOT_VERIFIED
    assert "not a git repository" in capsys.readouterr().err  # the history is checked first
    given = dataclasses.replace(given, bisect=BisectOptions())
    before = (refused / "report.md").read_text()
    assert bisect_command.command(given) == bisect_command.NOT_VERIFIED
    assert "was not verified (candidate not verified: invalid input): nothing to bisect" in capsys.readouterr().err
    assert (refused / "report.md").read_text() == before  # left as it is
    given = dataclasses.replace(
        given, report=out, environment=dataclasses.replace(env, baseline_lock=tmp_path / "none.txt")
    )
    assert bisect_command.command(given) == bisect_command.NOT_VERIFIED  # the good run has no candidate lock here
    said = capsys.readouterr()
    assert f"bisecting the newest run that ran both sides: {good.name}" in said.out
    assert f"{good / 'candidate-lock.txt'} does not exist" in said.err


def test_gate_bisect_refuses_a_history_typo_before_anything_runs(tmp_path: Path) -> None:
    from tests.meta.support.gate_cli import gate_cli

    status, _, stderr, seconds = gate_cli(
        "optax==0.2.8", "--bisect", "--history", f"optax={tmp_path / 'nope'}", out=tmp_path / "out", timeout=60
    )
    assert status == 2 and "not a git repository" in stderr and seconds < 15, (status, stderr[-500:], seconds)


def test_a_range_names_its_commits_that_touch_the_apis_source(tmp_path: Path) -> None:
    # a range over a block of commits that cannot be imported names, besides its two ends, the commits touching the
    # source of the finding's APIs as the ones to read first ('Remove monte_carlo folder' inside the block)
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "--quiet", "-b", "main")
    shas = [
        commit(
            repo,
            {
                "optax/_losses.py": "def huber_loss(x):\n    return x\n",
                "optax/_losses_test.py": "def huber_loss(): pass\n",
                "notes.txt": "0\n",
            },
            "first",
        )
    ]
    git(repo, "tag", "v0.1.0")
    shas.append(commit(repo, {"notes.txt": "1\n"}, "Notes only"))
    shas.append(
        commit(
            repo, {"optax/_losses.py": "def huber_loss(x, *, delta=1.0):\n    return x\n"}, "Keyword-only delta (#7)"
        )
    )
    shas.append(commit(repo, {"notes.txt": "3\n"}, "More notes"))
    files = bisect_flow.source_files(repo, "v0.1.0", ["optax.huber_loss", "recipe:none-gradients", "optax.nothere"])
    assert files == ["optax/_losses.py"]  # the test module's def is left out; a recipe or an unknown name adds none
    assert bisect_flow.suspects(repo, shas[1:], ("v0.1.0", shas[-1]), files) == [shas[2]]
    entry = bisect_flow.finding_entry(
        "optax",
        Answer("range", shas[1:], skipped={shas[1]: "cannot be imported: X", shas[3]: "cannot be imported: X"}),
        repo,
        ("v0.1.0", shas[-1]),
        ["optax.huber_loss"],
    )
    assert [c["sha"] for c in entry["suspects"]] == [shas[2]] and entry["source_files"] == files
    from optax_gate.gate.report import bisect_section as report_bisect

    line = report_bisect.words(entry)
    assert line.startswith(
        f"changed by optax one of 3 commits, most likely the 1 touching the APIs' source (optax/_losses.py): "
        f"{shas[2][:7]} Keyword-only delta (#7, {entry['suspects'][0]['date'][:10]}); the range runs: "
    ), line


def test_gate_refuses_a_history_without_bisect(tmp_path: Path) -> None:
    """``--history optax=/nonexistent`` without ``--bisect`` is refused (exit 2) before the gate
    starts (``--run-dir`` without ``--run`` is refused the same way)."""
    from tests.meta.support.gate_cli import gate_cli

    status, _, stderr, seconds = gate_cli(
        "optax==0.2.8", "--history", f"optax={tmp_path / 'nope'}", out=tmp_path / "out", timeout=60
    )
    assert status == 2 and "--history is given without --bisect" in stderr and seconds < 15, (
        status,
        stderr[-500:],
        seconds,
    )


def test_the_bisect_command_says_a_folder_does_not_exist(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``bisect /no/such/folder`` said only "no report.json there"."""
    env = EnvironmentOptions(
        project_root=ROOT, baseline_lock=ROOT / "requirements-lock.txt", python=sys.executable, envs_dir=tmp_path
    )
    given = BisectCommandOptions(report=tmp_path / "nothere", environment=env, bisect=BisectOptions())
    assert bisect_command.command(given) == bisect_command.NOT_VERIFIED
    assert f"cannot bisect {tmp_path / 'nothere'}: it does not exist" in capsys.readouterr().err


def test_the_bisect_command_says_an_interrupted_run_did_not_finish(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``bisect RUN`` on the folder of an interrupted gate (marked INCOMPLETE, no report) says
    that run did not finish, never "no report.json there (name ... a run folder)": it is a run
    folder."""
    from optax_gate.gate.run import evidence

    run = tmp_path / "runs" / "20261202T000000Z-abc"
    run.mkdir(parents=True)
    (run / evidence.MARKER).write_text("interrupted\n")
    env = EnvironmentOptions(
        project_root=ROOT, baseline_lock=ROOT / "requirements-lock.txt", python=sys.executable, envs_dir=tmp_path
    )
    given = BisectCommandOptions(report=run, environment=env, bisect=BisectOptions())
    assert bisect_command.command(given) == bisect_command.NOT_VERIFIED
    err = capsys.readouterr().err
    assert (
        f"cannot bisect {run}: that run did not finish (marked {evidence.MARKER})" in err
        and "no report.json" not in err
    ), err
