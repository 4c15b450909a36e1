"""Dependency diff, warnings diff, the schema-3 report (validated against
``src/optax_gate/gate/report/report.schema.json``) and its Markdown sections."""

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from optax_gate.gate.base.run_record import RunRecord
from optax_gate.gate.diffs import dependencies, unseen
from optax_gate.gate.inputs.options import ScopeOptions
from optax_gate.gate.judge import compare
from optax_gate.gate.report import json_file as report_json
from optax_gate.gate.report import markdown as report_markdown
from optax_gate.gate.run import warnings_diff
from optax_gate.kit.environment import probe
from tests.meta.support.records import judged, record
from tests.meta.support.schema_and_locks import NEW_LOCK, OLD_LOCK, SCHEMA


def test_lock_diff_names_removed_moved_added_and_who_pulled_a_package_in() -> None:
    rows = {r["name"]: r for r in dependencies.diff(OLD_LOCK, NEW_LOCK)}
    assert set(rows) == {"chex", "jax", "numpy", "ml-dtypes"}
    assert (rows["chex"]["change"], rows["chex"]["via"], rows["chex"]["breaks"]) == ("removed", ["optax"], False)
    assert (rows["jax"]["change"], rows["jax"]["level"], rows["jax"]["down"]) == ("moved", "minor", False)
    assert (rows["numpy"]["level"], rows["numpy"]["down"]) == ("patch", True)
    assert rows["ml-dtypes"]["change"] == "added"
    assert rows["jax"]["via"] == ["requested"]  # "-r requirements.in": a direct requirement


def test_a_removed_package_the_team_imports_is_broken(tmp_path: Path) -> None:
    info = tmp_path / "chex-0.1.92.dist-info"
    info.mkdir()
    (info / "top_level.txt").write_text("chex\n")
    rows = {r["name"]: r for r in dependencies.diff(OLD_LOCK, NEW_LOCK, tmp_path, {"chex": ["teamlib/model.py:2"]})}
    assert rows["chex"]["breaks"]
    assert rows["chex"]["uses"] == [
        "teamlib/model.py:2: imports chex, installed only through optax in the baseline → ModuleNotFoundError"
    ]


def test_a_removed_package_the_teams_project_declares_is_not_broken(tmp_path: Path) -> None:
    """A removed package that the team's project declares is not broken: the team's own requirements install
    it, and the finding names the declaration (for example nanodo imports chex in its tests and declares it in
    ``[project.optional-dependencies] test``). The declaration is found from a --usage subfolder too, up to
    the project's root; a project that does not declare it stays broken ("installed only through optax →
    ModuleNotFoundError")."""
    from optax_gate.gate.inputs import declared

    info = tmp_path / "site" / "chex-0.1.92.dist-info"
    info.mkdir(parents=True)
    (info / "top_level.txt").write_text("chex\n")
    team = tmp_path / "nanodo"
    (team / "nanodo").mkdir(parents=True)
    (team / "pyproject.toml").write_text(
        '[project]\nname = "nanodo"\ndependencies = ["optax", '
        '"jax>=0.4"]\n[project.optional-dependencies]\ntest = ["Chex>=0.1.86", "pytest"]\n'
    )
    own = declared.packages([team / "nanodo"])
    assert (
        own["chex"] == "pyproject.toml [project.optional-dependencies] test"
        and own["optax"] == "pyproject.toml [project] dependencies"
    )
    rows = {
        r["name"]: r
        for r in dependencies.diff(OLD_LOCK, NEW_LOCK, tmp_path / "site", {"chex": ["tests/model_test.py:5"]}, own)
    }
    assert not rows["chex"]["breaks"] and rows["chex"]["declared"] == own["chex"]
    assert rows["chex"]["uses"] == [
        "tests/model_test.py:5: imports chex; your project declares chex (pyproject.toml "
        "[project.optional-dependencies] test), so your own requirements install it, not optax"
    ]
    (team / "pyproject.toml").write_text('[project]\nname = "nanodo"\n')
    (team / "requirements-dev.txt").write_text("# tools\n-r requirements.txt\nchex==0.1.92  # tests\n")
    assert declared.packages([team]) == {"chex": "requirements-dev.txt"}
    (team / "requirements-dev.txt").unlink()
    (team / "pyproject.toml").write_text("not [ toml")
    assert declared.packages([team]) == {}  # unreadable: declares nothing, the import stays broken
    rows = {
        r["name"]: r
        for r in dependencies.diff(
            OLD_LOCK, NEW_LOCK, tmp_path / "site", {"chex": ["a.py:1"]}, declared.packages([team])
        )
    }
    assert rows["chex"]["breaks"]


def test_requires_python_and_wheel_tags_come_from_dist_info(tmp_path: Path) -> None:
    info = tmp_path / "jaxlib-0.12.0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: jaxlib\nVersion: 0.12.0.1\nRequires-Python: >=3.11\n\nbody\n"
    )
    (info / "WHEEL").write_text("Wheel-Version: 1.0\nTag: cp312-cp312-manylinux_2_27_x86_64\n")
    assert dependencies.requires_python(tmp_path) == {"jaxlib": ">=3.11"}
    assert dependencies.wheel_tags(tmp_path) == ["cp312-cp312-manylinux_2_27_x86_64"]
    assert dependencies.requires_python(None) == {} and dependencies.wheel_tags(tmp_path / "absent") == []


def _warning(
    message: Any, category: Any = DeprecationWarning, filename: Any = "/x/site-packages/optax/_src/alias.py"
) -> Any:
    return warnings.WarningMessage(message, category, filename, 7)


def test_warning_records_name_category_message_and_module() -> None:
    r = probe.warning_record(_warning(DeprecationWarning("optax.foo is deprecated at 0xdeadbeef")))
    assert r == {
        "category": "DeprecationWarning",
        "message": "optax.foo is deprecated at 0x…",
        "module": "optax._src.alias",
        "lineno": 7,
    }


def test_plugin_writes_every_recorded_warning_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from optax_gate import pytest_plugin

    target = tmp_path / "w.json"
    monkeypatch.setenv(pytest_plugin.WARNINGS_ENV, str(target))
    monkeypatch.setattr(pytest_plugin, "_RECORDED", [])
    pytest_plugin.pytest_warning_recorded(
        _warning(FutureWarning("soon"), FutureWarning), "runtest", "tests/contracts/test_a.py::t", None
    )
    pytest_plugin.pytest_sessionfinish(None, 0)
    assert warnings_diff.read(target) == [
        {
            "nodeid": "tests/contracts/test_a.py::t",
            "when": "runtest",
            "category": "FutureWarning",
            "message": "soon",
            "module": "optax._src.alias",
            "lineno": 7,
        }
    ]


def _warnings(*messages: Any, when: Any = "runtest", nodeid: Any = "c1") -> Any:
    return [
        {"nodeid": nodeid, "when": when, "category": cat, "message": m, "module": "optax._src.alias", "lineno": 1}
        for cat, m in messages
    ]


def test_new_warnings_are_changed_or_broken_under_the_switch_and_gone_ones_noted() -> None:
    base = warnings_diff.fold([], _warnings(("UserWarning", "old")))
    cand = warnings_diff.fold(
        [{"category": "DeprecationWarning", "message": "import-time", "module": "jax"}],
        _warnings(("FutureWarning", "new"), ("UserWarning", "also new")),
    )
    apis = {"c1": "optax.sgd"}
    rows = warnings_diff.diff(base, cand, apis)
    assert [(r["change"], r["when"], r["message"], r["verdict"]) for r in rows] == [
        ("new", "contract", "new", "changed"),
        ("new", "contract", "also new", "changed"),
        ("new", "import", "import-time", "changed"),
        ("gone", "contract", "old", "noted"),
    ]
    assert (
        rows[0]["category"] == "FutureWarning" and rows[0]["apis"] == ["optax.sgd"] and rows[0]["contracts"] == ["c1"]
    )
    strict = {r["message"]: r["verdict"] for r in warnings_diff.diff(base, cand, apis, fail_on_new_deprecations=True)}
    assert strict == {"also new": "changed", "new": "broken", "import-time": "broken", "old": "noted"}


def test_a_warning_raised_from_another_module_is_one_moved_row_noted() -> None:
    """A warning that optax raises from another module is one ``moved`` row, noted (not a new
    deprecation even under the switch), naming both modules, and report.md shows the move: for example
    noisy_sgd's "Specifying a key will be required", new from ``optax.transforms._adding`` and gone from
    ``optax._src.alias``, is not said twice."""
    from optax_gate.gate.report import surface_section

    moved = [{**w, "module": "optax.transforms._adding"} for w in _warnings(("DeprecationWarning", "key required"))]
    base = warnings_diff.fold([], _warnings(("DeprecationWarning", "key required"), ("UserWarning", "old")))
    cand = warnings_diff.fold([], moved)
    for strict in (False, True):
        rows = warnings_diff.diff(base, cand, {"c1": "optax.noisy_sgd"}, fail_on_new_deprecations=strict)
        assert [(r["change"], r["message"], r["verdict"]) for r in rows] == [
            ("moved", "key required", "noted"),
            ("gone", "old", "noted"),
        ]
    assert rows[0]["module"] == "optax.transforms._adding" and rows[0]["module_before"] == "optax._src.alias"
    assert rows[0]["apis"] == ["optax.noisy_sgd"]
    text = "\n".join(surface_section.warnings_lines({"rows": rows}))
    assert "`optax._src.alias` → `optax.transforms._adding`" in text


def test_a_warning_attributed_to_its_callers_is_one_row_whichever_contract_called() -> None:
    """A deprecation raised with a ``stacklevel`` past optax names the caller's module: the kit's modules
    and the contract modules that called the API are one row, its module the caller in words."""
    from optax_gate.gate.report import surface_section

    callers = ("optax_gate.kit.surface.calls", "optax_gate.kit.corners.losses", "test_surface_sweep", "conftest")
    cand = warnings_diff.fold(
        [],
        [
            {**w, "module": m, "nodeid": f"c{i}"}
            for i, m in enumerate(callers)
            for w in _warnings(("DeprecationWarning", "f is deprecated"))
        ],
    )
    cand += warnings_diff.fold(
        [],
        [{**w, "module": "optax.losses._x"} for w in _warnings(("DeprecationWarning", "f is deprecated"), nodeid="c9")],
    )
    apis = {f"c{i}": "optax.f" for i in (0, 1, 2, 3, 9)}
    rows = warnings_diff.diff([], cand, apis)
    assert sorted((r["module"], r["contracts"]) for r in rows) == [
        ("optax.losses._x", ["c9"]),
        (warnings_diff.CALLER, ["c0", "c1", "c2", "c3"]),
    ], rows
    text = "\n".join(surface_section.warnings_lines({"rows": rows}))
    assert f"| {warnings_diff.CALLER} |" in text and "| `optax.losses._x` |" in text


def sample_report(tmp_path: Path, candidate_ran: Any = True) -> Any:
    (tmp_path / "old.txt").write_text(OLD_LOCK)
    (tmp_path / "new.txt").write_text(NEW_LOCK)
    base = record(golden_a="passed")
    cand = (
        record(golden_a="passed")
        if candidate_ran
        else {
            "label": "candidate",
            "status": "not-verified",
            "reason": "import failed",
            "versions": {},
            "contracts": {},
        }
    )
    base.update(
        lock_file=str(tmp_path / "old.txt"),
        warnings=warnings_diff.fold([], _warnings(("UserWarning", "a"), nodeid="golden_a")),
    )
    cand.update(
        lock_file=str(tmp_path / "new.txt"),
        warnings=warnings_diff.fold([], _warnings(("DeprecationWarning", "b"), nodeid="golden_a")),
    )
    return judged(base, cand, ScopeOptions(fail_on_new_deprecations=True))


@pytest.mark.parametrize("candidate_ran", [True, False])
def test_reports_validate_against_the_json_schema(tmp_path: Path, candidate_ran: Any) -> None:
    jsonschema = pytest.importorskip(
        "jsonschema", reason="jsonschema comes with the tools lock (requirements-tools.txt)"
    )
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    report = json.loads(report_json.render(sample_report(tmp_path, candidate_ran)))
    jsonschema.validate(report, schema)
    crashed = compare.compare(
        RunRecord.from_json(record()), RunRecord.from_json(record())
    )  # what the gate writes after crashing: no sections, still schema 3
    jsonschema.validate(json.loads(report_json.render(crashed)), schema)
    broken = dict(report, schema=1)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)


def test_a_broken_finding_fails_a_passing_gate_and_the_markdown_has_the_three_sections(tmp_path: Path) -> None:
    report = sample_report(tmp_path)
    assert report["schema"] == 3 and report["verdict"] == "fail"
    assert report["reasons"] == ["beyond the contracts: 1 warning row broken"]
    assert report["surface"]["status"] == "unavailable" and report["dependencies"]["counts"]["changed"] == 4
    text = report_markdown.render(report)
    assert (
        "Beyond the contracts — API surface: not compared; Warnings: 1 broken, 1 noted; Dependencies: 4 changed."
        in text
    )
    positions = [
        text.index(h)
        for h in ("## API surface (no differences)", "## Warnings (1 broken, 1 noted)", "## Dependencies (4 changed)")
    ]
    assert positions == sorted(positions)
    assert "| changed | `chex` | removed | 0.1.92 → — | optax |" in text
    assert "warnings" not in report["baseline"]


def test_not_verified_stays_not_verified(tmp_path: Path) -> None:
    report = sample_report(tmp_path, candidate_ran=False)
    assert report["verdict"] == "not-verified"
    assert report["warnings"]["reason"].startswith("contracts did not run in both environments")
    assert report["dependencies"]["status"] == "compared"


def test_broken_surface_rows_of_one_kind_are_one_finding_across_names() -> None:
    """Issue 17 item 6 (one cause, one finding): without --usage every removal
    or incompatibility of a contracted API is broken, and with the generated
    surface contracts every public API is contracted; six names removed with
    their module are one finding, not six."""
    from optax_gate.gate.report import surface_section as report_surface

    removed = [
        {"path": f"optax.monte_carlo.f{i}", "change": "removed", "verdict": "broken", "old": "function", "new": ""}
        for i in range(6)
    ]
    keyword = [
        {
            "path": "optax.huber_loss",
            "change": "keyword-only",
            "param": "delta",
            "verdict": "broken",
            "old": "delta (positional or keyword)",
            "new": "delta (keyword-only)",
        }
    ]
    found = unseen.broken_findings({"surface": {"rows": removed + keyword}})
    assert [(f["api"], f["cause"].split(":")[0]) for f in found] == [
        ("6 names", "removed"),
        ("optax.huber_loss", "keyword-only (delta)"),
    ]
    assert found[0]["apis"] == [r["path"] for r in removed]
    found[0]["number"] = 1
    line = report_surface.finding_line(found[0])
    assert (
        line.startswith('1. <a id="f1"></a>**broken** API surface 6 names: removed: `optax.monte_carlo.f0`')
        and "and" not in line.split("(see")[0][-30:]
    )
    # report.html: the finding's <details> carries the one anchor, and its heading says "broken" once
    from optax_gate.gate.report import html_page
    from optax_gate.gate.report import markdown as report_markdown

    found[0]["section"] = "surface"
    page = html_page.finding_html(report_markdown.Page({"findings": found[:1], "contracts": []}), found[0], {})
    assert page.count('id="f1"') == 1 and "<strong>broken</strong>" not in page, page
    assert '<span class="change broken">broken</span> 1. API surface 6 names: removed' in page, page


def test_a_merged_surface_finding_names_as_many_as_a_contract_finding() -> None:
    """One rule for "list of APIs" in a finding's line (``plain_text.named_list``):
    the merged API-surface finding and the contract finding across APIs both
    name ``plain_text.NAMED`` and say how many more."""
    from optax_gate.gate.base import plain_text
    from optax_gate.gate.judge import findings

    paths = [f"optax.f{i:02d}" for i in range(plain_text.NAMED + 3)]
    rows = [{"path": p, "change": "removed", "verdict": "broken", "old": "function", "new": ""} for p in paths]
    (found,) = unseen.broken_findings({"surface": {"rows": rows}})
    listed = f"`optax.f{plain_text.NAMED - 1:02d}`, and 3 more"
    assert found["cause"].endswith(listed) and f"`optax.f{plain_text.NAMED:02d}`" not in found["cause"]
    assert findings.subject(paths).endswith(listed + ")")


def test_the_broken_counts_beyond_the_contracts_are_said_in_words() -> None:
    """Each section's count beyond the contracts is said with its own noun, singular or plural as the
    count is, never as "1 dependencies finding(s) broken"."""
    from optax_gate.gate.judge.verdict import broken_words

    assert broken_words({"surface": 1, "dependencies": 0, "warnings": 0}) == "1 API surface row"
    assert broken_words({"surface": 0, "dependencies": 1, "warnings": 0}) == "1 dependency row"
    assert (
        broken_words({"surface": 20, "dependencies": 1, "warnings": 2})
        == "20 API surface rows, 1 dependency row and 2 warning rows"
    )


def test_a_requirements_file_in_the_package_folder_below_the_usage_root_is_read(tmp_path: Path) -> None:
    """big_vision keeps big_vision/requirements.txt in its package, below the repository's root that
    --usage names; it declares distrax (which brings chex): read, so chex reads cannot tell, not broken."""
    from optax_gate.gate.inputs import declared

    (tmp_path / "repo" / "big_vision").mkdir(parents=True)
    (tmp_path / "repo" / ".git").mkdir()
    (tmp_path / "repo" / "big_vision" / "requirements.txt").write_text("distrax\noptax\n")
    assert declared.packages([tmp_path / "repo"]) == {
        "distrax": "big_vision/requirements.txt",
        "optax": "big_vision/requirements.txt",
    }


def test_new_deprecation_warnings_are_one_changed_finding_naming_the_apis_that_warn() -> None:
    """0.2.8 deprecates `optax.global_norm` and `optax.second_order` (removed in 0.2.9): a team reading the
    findings learns it there, not only in the folded Warnings table. One changed finding, each warning's
    words once; under --fail-on-new-deprecations they are broken findings of their own instead."""
    from optax_gate.gate.report import html_page, surface_section
    from optax_gate.gate.report import markdown as report_markdown

    base = warnings_diff.fold([], _warnings(("DeprecationWarning", "old and gone")))
    cand = warnings_diff.fold(
        [],
        _warnings(("DeprecationWarning", "optax.global_norm is deprecated in favor of optax.tree.norm"), nodeid="c1")
        + _warnings(("FutureWarning", "hvp will be removed in optax 0.2.9"), nodeid="c2")
        + _warnings(("UserWarning", "not a deprecation"), nodeid="c1"),
    )
    apis = {"c1": "optax.global_norm", "c2": "optax.second_order.hvp"}
    report: Any = {"warnings": {"rows": warnings_diff.diff(base, cand, apis)}}
    (found,) = unseen.deprecation_finding(report)
    assert (found["change"], found["apis"]) == ("changed", ["optax.global_norm", "optax.second_order.hvp"])
    assert found["cause"].startswith("2 deprecation warnings new in the candidate")
    assert '`optax.global_norm`: "optax.global_norm is deprecated in favor of optax.tree.norm"' in found["cause"]
    assert "not a deprecation" not in found["cause"] and "old and gone" not in found["cause"]
    strict: Any = {"warnings": {"rows": warnings_diff.diff(base, cand, apis, fail_on_new_deprecations=True)}}
    assert unseen.deprecation_finding(strict) == [] and len(unseen.broken_findings(strict)) == 2
    found["number"] = 3
    line = surface_section.finding_line(found)
    assert line.startswith(
        '3. <a id="f3"></a>**changed** 2 APIs (`optax.global_norm`, `optax.second_order.hvp`): 2 deprecation'
    ), line
    page = html_page.finding_html(report_markdown.Page({"findings": [found], "contracts": []}), found, {})
    assert '<span class="change changed">changed</span> 3. 2 APIs' in page and page.count('id="f3"') == 1, page
