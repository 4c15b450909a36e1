"""Runs are kept by what they judged (``optax_gate.gate.run.evidence``): only a run
whose two sides' contracts both ran counts toward ``--keep`` and becomes
``latest`` / ``report.md``; a run refused, or stopped before both sides ran,
moves only ``not-judged.md`` and never prunes a run that judged. Through the
gate's command line with the fake environment of ``test_cli``.

The scenario a new user met: after a 20-minute gate, a few mistyped or
unresolvable gates (exit 2 in under 2 s each) deleted the real run and made
``report.md`` read "NOT-VERIFIED ... 0 of 0 contracts"."""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from optax_gate.gate.run import evidence

#: The fake gate's driver, without a candidate lock: the candidate's resolution fails as uv's does for a
from tests.meta.support.gate_cli import fake_gate, snapshot
from tests.meta.support.paths import ROOT

#: version that does not exist (exit 2 before any environment is built).
UNRESOLVABLE = """
import sys
from pathlib import Path
from optax_gate.gate.install import environments
from optax_gate.gate import cli
def no_solution(*args, **kwargs):
    raise environments.EnvironmentFailure("resolution", "No solution found: optax==0.2.99 is not on the index")
environments.compile_lock = no_solution
environments.ensure = lambda *a, **k: (_ for _ in ()).throw(AssertionError("an environment was built"))
sys.exit(cli.main(["gate", "optax==0.2.99", "--out", {out!r}, "--keep", "3", "--cache-dir", {cache!r}]))
"""


def _run(cmd: Any) -> Any:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.mark.timeout(600)  # 21 gate processes of about 1-2 s each, slower on a loaded machine
def test_ten_refusals_and_ten_unresolvable_runs_never_prune_nor_hide_the_judged_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    judged = _run(fake_gate(tmp_path, pause=0))
    assert judged.returncode == 0, judged.stderr
    run = (out / evidence.LATEST).resolve()
    kept, report_md = snapshot(run), (out / "report.md").read_text()
    assert report_md.startswith("# Optax upgrade gate: PASS")
    refusal = fake_gate(
        tmp_path, pause=0, extra=["--usage", str(tmp_path / "missing")]
    )  # refused: the path does not exist
    unresolvable = [sys.executable, "-c", UNRESOLVABLE.format(out=str(out), cache=str(tmp_path / "cache"))]
    for i in range(10):
        for kind, cmd, said, why in (
            ("refusal", refusal, "does not exist", "does not exist"),
            ("unresolvable", unresolvable, "cannot be resolved", "optax==0.2.99 is not on the index"),
        ):
            proc = _run(cmd)
            assert proc.returncode == 2 and said in proc.stderr, f"{kind} {i}: {proc.stdout}{proc.stderr}"
            assert "Traceback" not in proc.stderr
            # its own console line: where its report is, and what report.md still shows
            assert f"its report is {out / 'not-judged.md'}" in proc.stdout, proc.stdout
            assert (
                f"{out / 'report.md'} still shows the run of {evidence.stamp_time(run.name)} (verdict pass)"
                in proc.stdout
            )
            newest = (out / evidence.NOT_JUDGED_LINK).resolve()
            assert newest != run and (out / "not-judged.md").read_text() == (newest / "report.md").read_text()
            assert "NOT-VERIFIED" in (out / "not-judged.md").read_text()
            assert why in " ".join(json.loads((out / "not-judged.json").read_text())["reasons"])
            assert why in (newest / evidence.NOT_JUDGED).read_text()
    # the judged run survives whole, and report.md / report.json still show it
    assert (out / evidence.LATEST).resolve() == run and snapshot(run) == kept
    assert (out / "report.md").read_text() == report_md
    assert json.loads((out / "report.json").read_text())["verdict"] == "pass"
    # only the newest run that judged nothing is kept beside it
    assert sorted((out / "runs").iterdir()) == sorted([run, (out / evidence.NOT_JUDGED_LINK).resolve()])


def test_judged_runs_count_toward_keep_and_a_newer_judged_run_moves_latest(tmp_path: Path) -> None:
    out = tmp_path / "out"
    firsts = []
    for _ in range(2):
        assert _run(fake_gate(tmp_path, pause=0, extra=["--keep", "2"])).returncode == 0
        firsts.append((out / evidence.LATEST).resolve())
    refused = _run(fake_gate(tmp_path, pause=0, extra=["--keep", "2", "--usage", str(tmp_path / "missing")]))
    assert refused.returncode == 2
    assert sorted(p for p in (out / "runs").iterdir() if evidence.is_judged(p)) == firsts
    third = _run(fake_gate(tmp_path, pause=0, extra=["--keep", "2"]))
    assert third.returncode == 0 and "now shows it" in third.stdout
    latest = (out / evidence.LATEST).resolve()
    judged = sorted(p for p in (out / "runs").iterdir() if evidence.is_judged(p))
    assert judged == [firsts[1], latest], "--keep 2 keeps the two newest judged runs"
    assert (out / evidence.NOT_JUDGED_LINK).resolve().is_dir(), (
        "the newest run that judged nothing stays until a newer one"
    )


def test_an_output_folder_where_nothing_was_judged_says_so_and_has_no_report_md(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = _run(fake_gate(tmp_path, pause=0, extra=["--usage", str(tmp_path / "missing")]))
    assert proc.returncode == 2
    assert f"there is no {out / 'report.md'} yet (no run here has judged both sides)" in proc.stdout
    assert not (out / "report.md").exists() and not (out / evidence.LATEST).exists()
    assert json.loads((out / "not-judged.json").read_text())["verdict"] == "not-verified"


def test_a_report_judged_only_when_both_sides_ran() -> None:
    ran, stopped = {"status": "ran"}, {"status": "not-verified"}
    assert evidence.judged({"baseline": ran, "candidate": ran})
    assert not evidence.judged({"baseline": ran, "candidate": stopped})
    assert not evidence.judged({"baseline": stopped, "candidate": ran})
    assert not evidence.judged({})


def test_a_refusals_report_says_nothing_was_compared_not_zero_of_zero_nor_no_differences() -> None:
    """A run that compared nothing says so, with its reason and each side's status, in report.md and
    report.html alike: never "0 broken, ... (of 0 contracts)", "API surface (no differences)" or
    "Dependencies ... resolution failed?"."""
    from optax_gate.gate import assemble
    from optax_gate.gate.diffs import unseen
    from optax_gate.gate.judge import compare
    from optax_gate.gate.report import html_page as report_html
    from optax_gate.gate.report import markdown as report_markdown
    from optax_gate.gate.run import runner

    why = "invalid input: --contracts /tmp/no-such-contracts does not exist"
    base = runner.not_verified("baseline", why, requirements=["lock file requirements-lock.txt"])
    cand = runner.not_verified("candidate", why, requirements=["optax==0.2.8"])
    report = compare.compare(base, cand)
    report = assemble.with_beyond(report, unseen.beyond(report, base, cand))
    md, page = report_markdown.render(report), report_html.render(report)
    assert md.startswith("# Optax upgrade gate: NOT-VERIFIED")
    for text in (md, page):
        assert "nothing was compared" in text and "does not exist" in text
        assert "of 0 contracts" not in text and "no differences" not in text and "resolution failed" not in text
    assert "## Versions" in md
    # the reason once: each side's status line points to it
    assert md.count("does not exist") == 1 and "- baseline: status **not-verified** — the reason above" in md, md


def test_the_speed_plot_the_report_links_to_is_found_beside_the_report_md_link(tmp_path: Path) -> None:
    """report.md shows ``![...](speed.svg)``; opened as OUT/report.md (a link to latest/report.md) a browser
    looks for OUT/speed.svg, so the plot is linked there too."""
    root = tmp_path / "out"
    run = evidence.start(root, ["gate"])
    for name in (*evidence.CURRENT, "speed.svg"):
        (run.path / name).write_text(name)
    evidence.complete(run, keep=3, judged=True)
    assert (root / "speed.svg").read_text() == "speed.svg"
    quiet = evidence.start(root, ["gate", "--no-speed"])  # a run without the plot makes no such link of its own
    for name in evidence.CURRENT:
        (quiet.path / name).write_text(name)
    evidence.complete(quiet, keep=3, judged=True)
    assert (root / "report.md").resolve().parent == quiet.path
