"""A candidate that runs the baseline's code takes the baseline's outcomes
(``optax_gate.gate.reuse.same_code``): what counts as the same code, what does
not, and the gate's flow with it (the candidate's contracts do not run, the
report says why; a candidate whose code differs runs)."""

import json
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from optax_gate.gate.reuse import same_code
from tests.meta.support.gate_cli import FAKE_PYTHON
from tests.meta.support.paths import LOCK, ROOT
from tests.meta.support.same_code_sites import HASH, INPUTS, fake_lock, fake_site, lock_entry_end

ALIAS = '"""Aliases."""\n\n\ndef adam(learning_rate, b1=0.9):\n    """Adam."""\n    return learning_rate * b1\n'


def _compare(
    tmp_path: Path,
    candidate_alias: str,
    *,
    version: str = "0.2.6",
    extra_file: bool = False,
    inputs: dict[str, Any] | None = None,
    candidate_lock_extra: str = "",
) -> Any:
    files = {"optax/__init__.py": "from optax.alias import adam\n", "optax/alias.py": ALIAS}
    base = fake_site(tmp_path / "base", files)
    cand_files = {**files, "optax/alias.py": candidate_alias, **({"optax/new.py": "x = 1\n"} if extra_file else {})}
    cand = fake_site(tmp_path / "cand", cand_files, version=version)
    base_lock = fake_lock(tmp_path / "base.txt", "optax==0.2.6")
    cand_lock = fake_lock(
        tmp_path / "cand.txt", "optax @ file:///tmp/optax-0.2.6-py3-none-any.whl", candidate_lock_extra
    )
    return same_code.compare(
        same_code.Installed(base_lock, base, INPUTS),
        same_code.Installed(cand_lock, cand, {**INPUTS, "lock_sha256": "2", **(inputs or {})}),
    )


def test_comments_and_layout_are_the_same_code_and_the_files_are_named(tmp_path: Path) -> None:
    commented = ALIAS.replace("\n\ndef adam", "\n# A comment.\n\ndef adam").replace("b1=0.9)", "b1 = 0.9 )")
    found = _compare(tmp_path, commented)
    assert found.same, found.why
    assert found.text_only == ("optax: optax/alias.py",)
    assert found.packages == {"optax": 2}
    assert "comments or layout only (optax/alias.py)" in found.why and "every other package pinned alike" in found.why


@pytest.mark.parametrize(
    "change, why",
    [
        (ALIAS.replace("b1=0.9", "b1=0.95"), "optax's code differs, first in optax/alias.py"),  # a default
        (ALIAS.replace("return learning_rate * b1", "return learning_rate + b1"), "optax's code differs"),  # a body
        (
            ALIAS.replace('"""Adam."""', '"""Adam, documented."""'),
            "optax's code differs",
        ),  # a docstring is code to Python
    ],
)
def test_a_changed_default_body_or_docstring_is_other_code(tmp_path: Path, change: Any, why: Any) -> None:
    found = _compare(tmp_path, change)
    assert not found.same and why in found.why


def test_another_version_a_file_more_other_inputs_or_other_pins_are_not_the_same(tmp_path: Path) -> None:
    cases: dict[str, dict[str, Any]] = {
        "version": dict(version="0.2.7"),
        "file": dict(extra_file=True),
        "inputs": dict(inputs={"files_sha256": "g"}),
        "pins": dict(candidate_lock_extra="chex==0.1.90\n"),
    }
    words = {
        "version": "is another version",
        "file": "files differ (1 in one environment only, first optax/new.py)",
        "inputs": "inputs differ beyond the lock (files_sha256)",
        "pins": "pin other packages (chex)",
    }
    for name, kwargs in cases.items():
        found = _compare(tmp_path / name, ALIAS, **kwargs)
        assert not found.same and words[name] in found.why, (name, found.why)


def test_a_package_pinned_alike_is_not_read_and_an_unknown_site_is_not_the_same(tmp_path: Path) -> None:
    lock = fake_lock(tmp_path / "a.txt", "optax==0.2.6")
    side = same_code.Installed(lock, tmp_path, INPUTS)
    same = same_code.compare(side, side)
    assert same.same and same.packages == {}
    assert not same_code.compare(same_code.Installed(lock, None, INPUTS), side).same
    other = tmp_path / "other"
    other.mkdir()
    two = same_code.compare(side, same_code.Installed(lock, other, INPUTS))  # fake environments: each side its own code
    assert not two.same and "two folders of one lock" in two.why


def test_lock_entries_join_continuations_sort_hashes_and_name_direct_references() -> None:
    text = (
        "# header\n--index-url https://x\noptax @ file:///w/optax-0.2.6-py3-none-any.whl \\\n"
        f"    --hash=sha256:{'b' * 64} \\\n    --hash=sha256:{'a' * 64}\n    # via -r in\nJax==0.11.2  # pinned\n"
    )
    got = same_code.lock_entries(text)
    assert set(got) == {"--index-url https://x", "optax", "jax"}
    assert got["optax"].endswith(f"--hash=sha256:{'a' * 64} --hash=sha256:{'b' * 64}")
    assert got["jax"] == "Jax==0.11.2"


def test_the_real_lock_is_read_whole() -> None:
    entries = same_code.lock_entries(LOCK.read_text())
    assert {"optax", "jax", "jaxlib", "flax"} <= set(entries)
    assert all("--hash=sha256:" in e for name, e in entries.items() if not name.startswith("-"))


# ------------------------------------------------------------------ the gate's flow

DRIVER = """
from pathlib import Path
from optax_gate.gate.install import environments
from optax_gate.gate import cli
pythons = {{"baseline": Path({base!r}), "candidate": Path({cand!r})}}
environments.ensure = lambda folder, lock, *a, **k: pythons["candidate" if Path(lock).name == "candidate-lock.txt" else "baseline"]
cli.entry(["gate", "--candidate-lock", {lock!r}, "--out", {out!r}, "--cache-dir", {cache!r}, *{extra!r}])
"""  # noqa: E501 (a script or page written out as it runs)


def _gate(tmp_path: Path, candidate_alias: str, extra: Any = ()) -> Any:
    """The gate with two fake environments whose site-packages hold optax as
    the baseline's lock pins it and as ``candidate_alias`` changes it."""
    files = {"optax/__init__.py": "from optax.alias import adam\n", "optax/alias.py": ALIAS}
    pythons = {}
    for side, alias in (("base", ALIAS), ("cand", candidate_alias)):
        fake_site(tmp_path / side, {**files, "optax/alias.py": alias})
        python = tmp_path / side / "bin" / "python"
        python.parent.mkdir(parents=True)
        python.write_text(FAKE_PYTHON.format(python=sys.executable, pause=0, tests=2))
        python.chmod(python.stat().st_mode | stat.S_IEXEC)
        pythons[side] = python
    text = LOCK.read_text()
    start = text.index("optax==0.2.6")
    cand_lock = tmp_path / "candidate.txt"  # the baseline lock with optax 0.2.6 from another wheel (built from source)
    cand_lock.write_text(text[:start] + "optax==0.2.6 \\\n    " + HASH + text[lock_entry_end(text, start) :])
    driver = DRIVER.format(
        base=str(pythons["base"]),
        cand=str(pythons["cand"]),
        lock=str(cand_lock),
        out=str(tmp_path / "out"),
        cache=str(tmp_path / "cache"),
        extra=list(extra),
    )
    proc = subprocess.run([sys.executable, "-c", driver], cwd=ROOT, capture_output=True, text=True, timeout=120)
    report = (
        json.loads((tmp_path / "out" / "report.json").read_text())
        if (tmp_path / "out" / "report.json").exists()
        else {}
    )
    ran = {side: (tmp_path / side / "bin" / "pytest-runs").exists() for side in ("base", "cand")}
    return proc, report, ran


def test_a_candidate_with_the_baseline_code_takes_its_outcomes_and_the_report_says_so(tmp_path: Path) -> None:
    proc, report, ran = _gate(tmp_path, ALIAS.replace("\n\ndef adam", "\n# only a comment\n\ndef adam"))
    assert proc.returncode == 0, proc.stderr
    assert ran == {"base": True, "cand": False}, "the candidate's contracts ran although its code is the baseline's"
    assert "candidate: its code is the baseline's" in proc.stderr
    same = report["candidate"]["same_code"]
    assert same["text_only"] == ["optax: optax/alias.py"] and same["packages"] == {"optax": 2}
    assert report["verdict"] == "pass" and report["summary"]["unchanged"] == len(report["contracts"]) > 0
    assert any("did not run: it runs the baseline's code" in n for n in report["notes"])
    assert report["speed"]["status"] == "not-measured" and "baseline's programs" in report["speed"]["reason"]
    md = (tmp_path / "out" / "report.md").read_text()
    assert "- candidate: **contracts not run**: its code is the baseline's" in md


@pytest.mark.parametrize("extra", [(), ("--no-cache",)])
def test_a_candidate_whose_code_differs_or_under_no_cache_runs_its_contracts(tmp_path: Path, extra: Any) -> None:
    alias = ALIAS.replace("b1=0.9", "b1=0.95") if not extra else ALIAS
    proc, report, ran = _gate(tmp_path, alias, extra)
    assert proc.returncode == 0, proc.stderr
    assert ran == {"base": True, "cand": True}
    assert "same_code" not in report["candidate"]
    assert "its code is the baseline's" not in proc.stderr
