"""A candidate runs only the contract modules that executed a function it changed
(``optax_gate.gate.reuse.function_diff``, ``optax_gate.gate.reuse.selection``): what counts
as a changed function, what makes every module run, and the gate's flow with it."""

import json
import os
import stat
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from optax_gate.gate.reuse import function_diff, same_code, selection
from optax_gate.gate.run import reach_record
from tests.meta.support.gate_cli import FAKE_PYTHON
from tests.meta.support.paths import LOCK, ROOT
from tests.meta.support.same_code_sites import HASH, INPUTS, fake_lock, fake_site, lock_entry_end

SOURCE = '''"""Aliases."""

import math

RATE = 0.1


def adam(learning_rate, b1=0.9):
    """Adam."""
    def inner(x):
        return x * b1
    return inner(learning_rate)


def sgd(learning_rate):
    return learning_rate


class MultiSteps:
    """Wrapper."""

    every = 2

    def update(self, g):
        """Update."""
        return g

    class Inner:
        def step(self):
            return 1
'''


def _changed(new: str) -> Any:
    return function_diff.changed_in_file("optax", "optax/alias.py", SOURCE.encode(), new.encode())


@pytest.mark.parametrize(
    "edit, changed",
    [
        (("return learning_rate\n", "return -learning_rate\n"), {"optax/alias.py::sgd"}),
        (("return x * b1", "return x / b1"), {"optax/alias.py::adam"}),  # a nested function is its top-level function's
        (("return g\n", "return 2 * g\n"), {"optax/alias.py::MultiSteps.update"}),
        (("return 1\n", "return 2\n"), {"optax/alias.py::MultiSteps.Inner.step"}),
        (("\ndef sgd", "\n# a comment\ndef sgd"), set()),  # comments and layout are no change
    ],
)
def test_a_body_change_names_its_function_and_layout_names_none(edit: Any, changed: Any) -> None:
    found, why = _changed(SOURCE.replace(*edit))
    assert why == "" and found == changed


@pytest.mark.parametrize(
    "edit",
    [
        ("b1=0.9", "b1=0.95"),  # a default
        ('"""Adam."""', '"""Adam, changed."""'),  # a docstring (read by the surface contracts)
        ("def sgd(learning_rate)", "def sgd(learning_rate, extra=None)"),  # a signature
        ("RATE = 0.1", "RATE = 0.2"),  # what runs at import
        ("    every = 2", "    every = 3"),  # a class attribute
        ("\ndef sgd", "\n@staticmethod\ndef sgd"),  # a decorator
        ("import math\n", "import math\nimport os\n"),
    ],
)
def test_a_change_of_the_top_level_cannot_be_mapped_to_functions(edit: Any) -> None:
    found, why = _changed(SOURCE.replace(*edit))
    assert found == set() and why.startswith("the top level of optax/alias.py changed"), why


def test_a_file_that_does_not_parse_or_defines_a_name_twice_cannot_be_mapped() -> None:
    assert "does not parse" in _changed(SOURCE + "\ndef (:\n")[1]
    assert "defines a function twice" in _changed(SOURCE + "\n\ndef sgd(x):\n    return x\n")[1]


def _compare(
    tmp_path: Path,
    candidate: str,
    *,
    version: Any = "0.2.6",
    extra_file: Any = False,
    inputs: Any = None,
    candidate_lock_extra: Any = "",
) -> Any:
    files = {"optax/__init__.py": "from optax.alias import adam\n", "optax/alias.py": SOURCE}
    base = fake_site(tmp_path / "base", files)
    cand = fake_site(
        tmp_path / "cand",
        {**files, "optax/alias.py": candidate, **({"optax/new.py": "x = 1\n"} if extra_file else {})},
        version=version,
    )
    base_lock = fake_lock(tmp_path / "base.txt", "optax==0.2.6")
    cand_lock = fake_lock(
        tmp_path / "cand.txt", "optax @ file:///tmp/optax-0.2.6-py3-none-any.whl", candidate_lock_extra
    )
    return function_diff.compare(
        same_code.Installed(base_lock, base, INPUTS),
        same_code.Installed(cand_lock, cand, {**INPUTS, "lock_sha256": "2", **(inputs or {})}),
    )


def test_the_installed_packages_are_compared_function_by_function(tmp_path: Path) -> None:
    found = _compare(tmp_path, SOURCE.replace("return learning_rate\n", "return -learning_rate\n"))
    assert found == function_diff.FunctionDiff(frozenset({"optax/alias.py::sgd"}))


@pytest.mark.parametrize(
    "kwargs, why",
    [
        ({"version": "0.2.7"}, "optax 0.2.7 is another version than the baseline's 0.2.6"),
        ({"extra_file": True}, "optax's files differ (1 in one environment only, first optax/new.py)"),
        ({"inputs": {"python": "3.12.4"}}, "the sides' inputs differ beyond the lock"),
        ({"candidate_lock_extra": "numpy==2.0 \\\n    " + HASH + "\n"}, "the locks pin other packages"),
    ],
)
def test_another_version_file_input_or_package_runs_every_module(tmp_path: Path, kwargs: Any, why: Any) -> None:
    assert _compare(tmp_path, SOURCE, **kwargs).everything == why


def test_a_package_beyond_optax_and_flax_pinned_differently_runs_every_module(tmp_path: Path) -> None:
    base_lock = fake_lock(tmp_path / "base.txt", "optax==0.2.6")
    cand_lock = tmp_path / "cand.txt"
    cand_lock.write_text(base_lock.read_text().replace("jax==0.11.2", "jax==0.12.0"))
    site = fake_site(tmp_path / "base", {"optax/alias.py": SOURCE})
    found = function_diff.compare(
        same_code.Installed(base_lock, site, INPUTS),
        same_code.Installed(cand_lock, site, {**INPUTS, "lock_sha256": "2"}),
    )
    assert found.everything == "jax is pinned differently, and only changes of optax and flax map to functions"


BASE = {
    "tests/contracts/test_adam.py": {"reach": ["optax/alias.py::adam", "optax/base.py::chain"]},
    "tests/contracts/test_sgd.py": {"reach": ["optax/alias.py::sgd"]},
    "tests/contracts/test_old.py": {},  # cached before what modules execute was recorded
}
MODULES = [*BASE, "team:own"]


def test_a_module_runs_when_it_executed_a_changed_function_or_has_no_record() -> None:
    chosen = selection.choose(
        MODULES, BASE, ["optax/__init__.py::<module>"], function_diff.FunctionDiff(frozenset({"optax/alias.py::adam"}))
    )
    assert chosen.run == ("tests/contracts/test_adam.py", "tests/contracts/test_old.py", "team:own")
    assert chosen.taken == ("tests/contracts/test_sgd.py",)
    assert chosen.reached == {"tests/contracts/test_adam.py": ["optax/alias.py::adam"]}
    assert (
        chosen.everything == ""
        and "1 function(s) changed (optax/alias.py::adam): 3 contract module(s) run, 1 take" in chosen.words()
    )


@pytest.mark.parametrize(
    "session, diff, why",
    [
        (
            None,
            function_diff.FunctionDiff(frozenset({"optax/alias.py::adam"})),
            "the baseline's record of what ran outside the modules is missing",
        ),
        (
            ["optax/alias.py::adam"],
            function_diff.FunctionDiff(frozenset({"optax/alias.py::adam"})),
            "optax/alias.py::adam changed and runs outside any module",
        ),
        ([], function_diff.FunctionDiff(everything="jax is pinned differently"), "jax is pinned differently"),
    ],
)
def test_every_module_runs_when_the_change_reaches_outside_the_modules_or_cannot_be_mapped(
    session: Any, diff: Any, why: Any
) -> None:
    chosen = selection.choose(MODULES, BASE, session, diff)
    assert chosen.run == tuple(MODULES) and chosen.taken == () and chosen.everything.startswith(why)


def test_the_records_of_several_processes_are_joined_and_a_bad_one_is_none(tmp_path: Path) -> None:
    (tmp_path / "base.reach.json.gw0").write_text(
        json.dumps({"format": "reach-v1", "session": ["a"], "modules": {"m": ["x"]}})
    )
    (tmp_path / "base.reach.json.gw1").write_text(
        json.dumps({"format": "reach-v1", "session": ["b"], "modules": {"m": ["y"], "n": []}})
    )
    assert reach_record.read(tmp_path, "base") == {"session": ["a", "b"], "modules": {"m": ["x", "y"], "n": []}}
    assert reach_record.read(tmp_path, "cand") is None
    (tmp_path / "cand.reach.json").write_text(json.dumps({"format": "reach-v0", "session": [], "modules": {}}))
    assert reach_record.read(tmp_path, "cand") is None
    (tmp_path / "cand.reach.json").write_text("{")
    assert reach_record.read(tmp_path, "cand") is None


# ------------------------------------------------------------------ the gate's flow

DRIVER = """
from pathlib import Path
from optax_gate.gate.install import environments
from optax_gate.gate import cli
pythons = {{"baseline": Path({base!r}), "candidate": Path({cand!r})}}
environments.ensure = lambda folder, lock, *a, **k: pythons["candidate" if Path(lock).name == "candidate-lock.txt" else "baseline"]
cli.entry(["gate", "--candidate-lock", {lock!r}, "--out", {out!r}, "--cache-dir", {cache!r}, *{extra!r}])
"""  # noqa: E501 (a script or page written out as it runs)


def _gate(tmp_path: Path, tag: str, source: str, extra: Any = ()) -> Any:
    """The gate with fake environments (``test_cli.FAKE_PYTHON``: a module named for adam executes
    ``optax/alias.py::adam``, every other one ``sgd``) whose optax is the baseline's and ``source``;
    the results cache is shared between calls. Returns (process, report, modules the candidate ran)."""
    files = {"optax/__init__.py": "from optax.alias import adam\n", "optax/alias.py": SOURCE}
    pythons = {}
    for side, text in (("base", SOURCE), (f"cand-{tag}", source)):
        if not (tmp_path / side).exists():
            fake_site(tmp_path / side, {**files, "optax/alias.py": text})
            python = tmp_path / side / "bin" / "python"
            python.parent.mkdir(parents=True)
            python.write_text(FAKE_PYTHON.format(python=sys.executable, pause=0, tests=2))
            python.chmod(python.stat().st_mode | stat.S_IEXEC)
        pythons[side] = tmp_path / side / "bin" / "python"
    text = LOCK.read_text()
    start = text.index("optax==0.2.6")
    cand_lock = (
        tmp_path / f"candidate-{tag}.txt"
    )  # the baseline lock with optax 0.2.6 from another wheel (built from source)
    cand_lock.write_text(
        text[:start] + "optax==0.2.6 \\\n    --hash=sha256:" + (tag * 64)[:64] + text[lock_entry_end(text, start) :]
    )
    out = tmp_path / f"out-{tag}"
    driver = DRIVER.format(
        base=str(pythons["base"]),
        cand=str(pythons[f"cand-{tag}"]),
        lock=str(cand_lock),
        out=str(out),
        cache=str(tmp_path / "cache"),
        extra=list(extra),
    )
    proc = subprocess.run([sys.executable, "-c", driver], cwd=ROOT, capture_output=True, text=True, timeout=120)
    report = json.loads((out / "report.json").read_text()) if (out / "report.json").exists() else {}
    runs = tmp_path / f"cand-{tag}" / "bin" / "pytest-modules"
    ran = sorted(m for line in runs.read_text().splitlines() for m in json.loads(line)[1]) if runs.exists() else []
    return proc, report, ran


def test_a_candidate_runs_the_modules_that_execute_the_changed_function_and_takes_the_rest(tmp_path: Path) -> None:
    changed = SOURCE.replace("return x * b1", "return x / b1")
    proc, first, ran = _gate(tmp_path, "a", changed)  # the baseline is not cached yet: every module runs
    assert proc.returncode == 0, proc.stderr
    assert "the baseline's results are not all cached" in proc.stderr
    assert first["candidate"]["selection"]["everything"].startswith(
        "the baseline's results are not all cached (its first run)"
    )
    assert "every contract module of the candidate ran: the baseline's results are not all cached" in first["notes"][0]
    every = len(ran)
    proc, report, ran = _gate(tmp_path, "b", changed)  # another candidate of the same change, the baseline cached now
    assert proc.returncode == 0, proc.stderr
    assert ran == ["tests/contracts/test_adam.py", "tests/contracts/test_adamw.py"], ran
    chosen = report["candidate"]["selection"]
    assert chosen["changed"] == ["optax/alias.py::adam"] and chosen["ran"] == ran and len(chosen["taken"]) == every - 2
    assert chosen["reached"] == {m: ["optax/alias.py::adam"] for m in ran}
    assert report["summary"]["unchanged"] == len(report["contracts"]) == len(first["contracts"])
    assert report["warnings"]["rows"] == [], (
        "test_nnx.py, taken, is still collected: its collect-time warning is the candidate's too"
    )
    assert report["notes"][0].startswith("the candidate changed the body of 1 function(s) (`optax/alias.py::adam`)")
    assert "reach" not in report["candidate"] and "reach" not in report["baseline"]
    # in each module that ran, only the contracts of the API that executed adam (optax.adam, not optax.sgd)
    assert chosen["apis"] == {m: ["optax.adam"] for m in ran}
    runs = (tmp_path / "cand-b" / "bin" / "pytest-apis").read_text().splitlines()
    assert [json.loads(line) for line in runs] == [{m: 1 for m in ran}], "one test of two in each"
    rows = {r["id"]: r for r in report["contracts"]}
    assert {rows[f"{m}::test_{i}"]["candidate"] for m in ran for i in (0, 1)} == {"passed"}, "both APIs' contracts"
    md = (tmp_path / "out-b" / "report.md").read_text()
    assert (
        "   - `tests/contracts/test_adam.py`: ran (executes `optax/alias.py::adam`; only the contracts of "
        "`optax.adam` ran" in md
    )
    assert (
        "the baseline's outcomes, not run (they execute no changed function): "
        "`tests/contracts/multidevice/test_data_parallel.py`, " in md
    )
    page = (tmp_path / "out-b" / "report.html").read_text()
    assert (
        "<li><code>tests/contracts/test_adam.py</code>: ran (executes <code>optax/alias.py::adam</code>; only the "
        "contracts of <code>optax.adam</code> ran" in page
    )


def first_of(tmp_path: Path, tag: Any) -> Any:
    return json.loads((tmp_path / f"out-{tag}" / "report.json").read_text())


def test_a_change_no_module_executes_runs_none_and_a_top_level_change_runs_every_one(tmp_path: Path) -> None:
    proc, _, every = _gate(tmp_path, "a", SOURCE.replace("return 1\n", "return 2\n"))  # caches the baseline
    assert proc.returncode == 0, proc.stderr
    proc, report, ran = _gate(
        tmp_path, "b", SOURCE.replace("return 1\n", "return 2\n")
    )  # MultiSteps.Inner.step: no module runs it
    assert proc.returncode == 0, proc.stderr
    assert ran == [] and report["candidate"]["selection"]["ran"] == [] and report["verdict"] == "pass"
    assert report["summary"]["unchanged"] == len(report["contracts"]) > 0
    proc, report, ran = _gate(tmp_path, "c", SOURCE.replace("RATE = 0.1", "RATE = 0.2"))
    assert proc.returncode == 0, proc.stderr
    assert ran == every and report["candidate"]["selection"]["everything"].startswith(
        "the top level of optax/alias.py changed"
    )
    assert "every contract module runs: the top level of optax/alias.py changed" in proc.stderr
    md = (tmp_path / "out-c" / "report.md").read_text()
    assert "   - every contract module ran: the top level of optax/alias.py changed" in md
    for tag, extra in (("d", "--no-cache"), ("e", "--all-modules")):
        proc, report, ran = _gate(
            tmp_path, tag, SOURCE.replace("return learning_rate\n", "return -learning_rate\n"), extra=(extra,)
        )
        assert proc.returncode == 0, proc.stderr
        assert ran == every, extra
    assert "selection" not in first_of(tmp_path, "d")["candidate"]  # --no-cache: nothing is tried
    assert report["candidate"]["selection"]["everything"] == "--all-modules"
    assert "every contract module runs (--all-modules)" in proc.stderr


def test_the_gate_imports_without_pytest() -> None:
    """The gate's own environment (``./noxw -s gate``) has no pytest: the recorder's names come from a module without
    it."""
    code = (
        "import sys; sys.modules['pytest'] = sys.modules['_pytest'] = sys.modules['pluggy'] = None; import "
        "optax_gate.gate.cli"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_a_hypothesis_profile_that_draws_other_examples_each_run_runs_every_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPTAX_GATE_HYPOTHESIS_PROFILE", "dev")
    changed = SOURCE.replace("return x * b1", "return x / b1")
    _, _, every = _gate(tmp_path, "a", changed)
    proc, report, ran = _gate(tmp_path, "b", changed)
    assert proc.returncode == 0, proc.stderr
    assert ran == every and report["candidate"]["selection"]["everything"].startswith(
        "the hypothesis profile 'dev' draws other examples"
    )


def test_collect_time_warnings_stay_when_only_some_modules_run(tmp_path: Path) -> None:
    """Collecting test_nnx.py warns (the stand-in pytest says so, as flax's import does); a run that takes it
    from the baseline (selected) or from the side's own cache (the other modules run) still has the warning."""
    changed = SOURCE.replace("return learning_rate\n", "return -learning_rate\n")  # sgd: every module but adam's
    before: list[str] = []
    for tag, extra in (("a", ()), ("b", ()), ("b", ("--all-modules",))):
        proc, report, ran = _gate(tmp_path, tag, changed, extra)
        assert proc.returncode == 0, proc.stderr
        assert report["warnings"]["rows"] == [], (tag, extra, report["warnings"]["rows"])
        last, before = Counter(ran) - Counter(before if tag == "b" else []), ran
    assert sorted(last.elements()) == ["tests/contracts/test_adam.py", "tests/contracts/test_adamw.py"], (
        "the last run ran only the modules not cached"
    )
    assert report["notes"][0] == (
        "every contract module of the candidate that its own cache lacked ran (2; 46 came from the cache): "
        "--all-modules"
    ), "the note does not say every module ran when some came from the candidate's own cache"


# ------------------------------------------------------------------ per API within a module


def _grid(common: Any = (), **apis: Any) -> Any:
    """A grid module's cached payload: one contract per API, and what each API (and the module outside them)
    executed."""
    return {
        "reach": sorted(set(common) | {f for found in apis.values() for f in found}),
        "reach_common": list(common),
        "reach_apis": {f"optax.{a}": list(found) for a, found in apis.items()},
        "contracts": {f"m::test[{a}]": {"api": f"optax.{a}", "outcome": "passed"} for a in apis},
    }


ADAM, LION, CHAIN = "optax/alias.py::adam", "optax/alias.py::lion", "optax/base.py::chain"


@pytest.mark.parametrize(
    "payload, apis",
    [
        (_grid(adam=[ADAM, CHAIN], lion=[LION, CHAIN], sgd=[CHAIN]), ["optax.lion"]),  # only the API that ran lion
        (_grid(common=[LION], adam=[ADAM], lion=[LION]), None),  # lion ran outside any API's contracts too
        (_grid(adam=[ADAM, LION], lion=[LION]), None),  # every API ran it: the whole module
        ({**_grid(adam=[ADAM], lion=[LION]), "reach_common": None}, None),  # no record per API
    ],
    ids=["one-api", "outside-the-apis", "every-api", "no-record"],
)
def test_a_module_runs_only_the_apis_whose_contracts_executed_the_change(payload: Any, apis: Any) -> None:
    """Each API is named once in the words, however many modules run it in part."""
    chosen = selection.choose(["m"], {"m": payload}, [], function_diff.FunctionDiff(frozenset({LION})))
    assert chosen.run == ("m",) and chosen.apis == ({"m": apis} if apis else {})
    if apis:
        assert (
            "1 contract module(s) run (1 of them only for the contracts of optax.lion: the API(s) whose "
            "contracts executed" in chosen.words()
        )


def test_a_contract_whose_api_has_no_record_runs_its_whole_module() -> None:
    payload = _grid(adam=[ADAM], lion=[LION])
    payload["contracts"]["m::test_new"] = {"api": "optax.new", "outcome": "passed"}
    chosen = selection.choose(["m"], {"m": payload}, [], function_diff.FunctionDiff(frozenset({LION})))
    assert chosen.run == ("m",) and chosen.apis == {}


def test_the_deselection_plugin_keeps_only_the_selected_apis_of_a_listed_module(tmp_path: Path) -> None:
    (tmp_path / "test_grid.py").write_text(
        "import pytest\n"
        "@pytest.mark.parametrize('api', [pytest.param(a, marks=pytest.mark.contract(api=a), id=a)"
        " for a in ('optax.adam', 'optax.lion')])\n"
        "def test_grid(api): pass\n"
        "def test_no_api(): pass\n"
    )
    (tmp_path / "test_other.py").write_text("def test_other(): pass\n")
    (tmp_path / "apis.json").write_text(json.dumps({"test_grid.py": ["optax.lion"]}))
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "OPTAX_GATE_SELECT_APIS": str(tmp_path / "apis.json")}
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-v",
        "-p",
        "no:cacheprovider",
        "-p",
        "optax_gate.kit.environment.select_apis",
    ]
    proc = subprocess.run(
        [*cmd, "-W", "ignore::pytest.PytestUnknownMarkWarning"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout
    ran = sorted(line.split(" ")[0] for line in proc.stdout.splitlines() if "PASSED" in line)
    assert ran == ["test_grid.py::test_grid[optax.lion]", "test_other.py::test_other"], proc.stdout
    assert "2 deselected" in proc.stdout


def test_the_words_name_each_api_once_across_the_modules_that_run_it() -> None:
    payloads = {m: _grid(adam=[ADAM], lion=[LION]) for m in ("m1", "m2", "m3")}
    chosen = selection.choose(list(payloads), payloads, [], function_diff.FunctionDiff(frozenset({LION})))
    assert chosen.apis == {m: ["optax.lion"] for m in payloads}
    assert "3 contract module(s) run (3 of them only for the contracts of optax.lion: the API(s)" in chosen.words()
