"""Plain words in a report's rows and findings (issue 25, item 3): direction
words that match the change, values never cut inside a token, no raw pytest
introspection, and the gate's own compilation-cache warnings never reported
as the candidate's (a corrupt cache entry is discarded).

The texts are those of the optax 0.2.8 gate report read on 2026-12-01."""

import functools
import json
import re
import zlib
from pathlib import Path
from typing import Any

import pytest

from optax_gate.gate.base import details, drift, plain_text
from optax_gate.gate.base.run_record import RunRecord
from optax_gate.gate.diffs import unseen
from optax_gate.gate.install import compilation_cache
from optax_gate.gate.judge import findings
from optax_gate.gate.run import outcomes, warnings_diff
from tests.meta.support.rows import contract_row

row = functools.partial(contract_row, change="changed", api="optax.adan", kind="snapshot")


# ------------------------------------------------------------------ direction words


@pytest.mark.parametrize(
    "detail, words",
    [
        ("snapshot drift: nan_param: '[''r3'']' -> none", "fewer non-finite outputs"),
        ("snapshot drift: nan_param: none -> '[''r3'']'", "more non-finite outputs"),
        ("snapshot drift: nan_param: '[''r3'']' -> '[''r1'', ''r3'']'", "more non-finite outputs"),
        ("snapshot drift: nan_param: '[''r3'']' -> '[''r1'']'", "other outputs come out non-finite"),
    ],
)
def test_a_nonfinite_drift_says_fewer_or_more(detail: Any, words: Any) -> None:
    """Read on 0.2.8: "other updates come out non-finite: `nan_param`: leaves r3 in the baseline, none now"
    meant fewer NaNs now."""
    r = row("tests/contracts/test_surface_transformations.py::test_nonfinite_and_state[optax.adan]", detail)
    (found,) = findings.group([r])
    assert found["cause"].startswith(words + ": `nan_param`"), found["cause"]
    assert details.plain_detail(r).split(": `")[0].endswith(words)


def test_fewer_and_more_nonfinite_are_not_one_finding() -> None:
    rows: Any = [
        row(f"t.py::test_nonfinite_and_state[{api}]", detail, api=api)
        for api, detail in (
            ("optax.adan", "snapshot drift: nan_param: '[''r3'']' -> none"),
            ("optax.sgd", "snapshot drift: nan_param: none -> '[''r3'']'"),
        )
    ]
    assert sorted(f["cause"].split(":")[0] for f in findings.group(rows)) == [
        "fewer non-finite outputs",
        "more non-finite outputs",
    ]


def test_an_edge_hyperparameter_drift_to_none_is_fewer() -> None:
    r = row(
        "tests/contracts/test_surface_transformations.py::test_edge_hyperparams[optax.adamw]",
        "snapshot drift: weight_decay=0/nan_inf_params/updates: r1,r3 -> none",
        api="optax.adamw",
    )
    (found,) = findings.group([r])
    assert found["cause"] == (
        "with `weight_decay=0` and nan inf params, fewer non-finite outputs: `updates` r1,r3 in the baseline, none now"
    )


@pytest.mark.parametrize(
    "got, want, words",
    [
        ("ok", "recompiled 1 time(s)", "no longer recompiles (the baseline recompiled 1 time)"),
        ("recompiled 2 time(s)", "ok", "now recompiles (ok in the baseline)"),
        ("ok", "ValueError", "no longer raises ValueError"),
        ("ok", "eager step: ValueError", "no longer raises ValueError (eager step)"),
        ("TypeError", "ok", "now raises TypeError (ok in the baseline)"),
    ],
)
def test_a_recorded_outcome_that_moved_says_which_way(got: Any, want: Any, words: Any) -> None:
    """A recorded outcome that moved says which way: "changed: got 'ok', expected 'recompiled 1 time(s)'"
    (0.2.8) reads as a regression where it is an improvement, so it says "no longer recompiles". An error
    that is gone is said once: "no longer raises ValueError", not also "(the baseline raised
    ValueError)"."""
    r = row(
        "tests/contracts/test_surface_transformations.py::test_protocol[optax.lbfgs-no_recompile]",
        f"AssertionError: assert '{got}' == '{want}' - {want} + {got}",
        api="optax.lbfgs",
    )
    assert details.plain_detail(r) == words
    (found,) = findings.group([r])
    # the finding names the call the property checks (findings.PROTOCOL_WORDS), then the change
    assert found["cause"] == f"at a second jitted step: {words}" and "expected" not in found["text"]


# ------------------------------------------------------------------ values never cut inside a token

# pytest 9's crash message of test_losses.py::test_signature_names_kinds_and_defaults[huber_loss] at optax 0.2.8
SIGNATURE_MESSAGE = (
    "AssertionError: [('predictions', 'POSITIONAL_OR_KEYWORD', None), ('targets', 'POSITIONAL_OR_KEYWORD', None), "
    "('delta', 'KEYWORD_ONLY', 1.0)]\nassert [('prediction...D_ONLY', 1.0)] == [('prediction...EYWORD', 1.0)]\n  \n"
    "  At index 2 diff: ('delta', 'KEYWORD_ONLY', 1.0) != ('delta', 'POSITIONAL_OR_KEYWORD', 1.0)\n  Use -v "
    "to get more diff"
)


def _balanced(text: Any) -> Any:
    depth = 0
    for ch in re.sub(r"'[^']*'", "", text):
        depth += ch in "([{"
        depth -= ch in ")]}"
    return depth == 0 and text.count("'") % 2 == 0


def test_a_row_detail_keeps_the_first_difference_whole() -> None:
    """A row's detail keeps its first difference whole, never cut at 300 characters as in "expected ('delta',
    'POSITIONAL_OR_KEYWORD', 1" (0.2.8)."""
    detail = outcomes.short_message({"longrepr": {"reprcrash": {"message": SIGNATURE_MESSAGE}}})
    assert "('delta', 'POSITIONAL_OR_KEYWORD', 1.0)" in detail
    r = row(
        "tests/contracts/test_losses.py::test_signature_names_kinds_and_defaults[huber_loss]",
        detail,
        change="broken",
        api="optax.huber_loss",
        kind="negative",
    )
    words = details.plain_detail(r)
    assert words.endswith("delta (parameter 3) is now keyword-only (was positional or keyword), default 1.0"), words


@pytest.mark.parametrize("limit", range(20, 200, 7))
def test_a_cut_never_falls_inside_a_value(limit: Any) -> None:
    text = (
        "got [('predictions', 'POSITIONAL_OR_KEYWORD', None), ('targets', 'POSITIONAL_OR_KEYWORD', None), "
        "('delta', 'KEYWORD_ONLY', 1.0)] at index 2, expected ('delta', 'POSITIONAL_OR_KEYWORD', 1.0)"
    )
    short = plain_text.shorten(text, limit)
    assert len(short) <= limit + 4 and _balanced(short.replace("…", "")), short
    if short != text:  # what is kept ends where a token of the text ends
        head = short.rstrip(")]").removesuffix("…").rstrip(" ")
        assert text.startswith(head) and text[len(head)] in " ,", short


def test_a_long_message_in_a_row_detail_is_cut_outside_quotes() -> None:
    message = "ValueError: " + " ".join(f"'word{i} with spaces'" for i in range(60))
    detail = outcomes.short_message({"longrepr": {"reprcrash": {"message": message}}})
    assert len(detail) <= outcomes.MESSAGE_LIMIT and detail.endswith("'…") and detail.count("'") % 2 == 0


# ------------------------------------------------------------------ no raw pytest introspection

BARE = "assert False + where False = bool(Array(False, dtype=bool))"


def test_a_fixed_defect_row_never_prints_pytest_introspection() -> None:
    """A fixed defect row never prints pytest's introspection, such as "now assert False + where False =
    bool(Array(False…" (0.2.8)."""
    r = row(
        "tests/contracts/test_known_defects.py::test_nan_guard",
        f"{details.DEFECT_PREFIX} (d-1: a reason); now: {BARE}",
        change="fixed",
        api="optax.sgd",
        kind="golden",
        defect="d-1: a reason",
        baseline="passed",
        candidate="failed",
    )
    for text in (details.plain_detail(r), findings.group([r])[0]["text"]):
        assert "assert" not in text and "where" not in text and "Array(" not in text, text
    assert details.plain_detail(r) == "d-1: a reason; now: the pinned behaviour no longer holds"


@pytest.mark.parametrize(
    "detail, words",
    [
        (BARE, "the contract's check is false"),
        ("AssertionError: momentum was not applied " + BARE, "momentum was not applied"),
        ("assert x is None + where x = f()", "the contract's check `x is None` is false"),
    ],
)
def test_a_bare_assert_is_read_not_quoted(detail: Any, words: Any) -> None:
    r = row("t.py::test_x", detail, change="broken", kind="golden")
    assert details.plain_detail(r) == words
    assert "where" not in findings.group([r])[0]["text"]
    assert details.plain_detail(dict(r, change="fixed", detail="was: " + detail)) == "was: " + words


# ------------------------------------------------------------------ the gate's own compilation cache

OWN = (
    "Error reading persistent compilation cache entry for 'jit_ntxent': error: Error -5 while decompressing data: "
    "incomplete or truncated stream"
)


def _folded(*messages: Any, nodeid: Any = "tests/contracts/test_losses.py::test_ntxent") -> Any:
    return warnings_diff.fold(
        [],
        [
            {
                "category": "UserWarning",
                "message": m,
                "module": "jax._src.compiler",
                "when": "runtest",
                "nodeid": nodeid,
            }
            for m in messages
        ],
    )


def test_a_compilation_cache_warning_is_never_the_candidates() -> None:
    """jax's compilation cache read error is never a new warning of the candidate's, for example of optax.ntxent
    on 0.2.8."""
    apis = {"tests/contracts/test_losses.py::test_ntxent": "optax.ntxent"}
    rows = warnings_diff.diff(_folded(), _folded(OWN, "a real new warning"), apis)
    assert [r["message"] for r in rows] == ["a real new warning"]
    report: Any = {"contracts": [{"id": c, "api": a} for c, a in apis.items()]}
    section = unseen.warnings_section(
        report,
        RunRecord("baseline", "ran", fields={"warnings": _folded()}),
        RunRecord("candidate", "ran", fields={"warnings": _folded(OWN), "compilation_cache_discarded": ["k-cache"]}),
        False,
    )
    assert section["rows"] == [] and section["own"] == {"baseline": 0, "candidate": 1, "discarded": 1}
    assert (
        "gate's own compilation cache" in section["reason"] and "1 corrupt cache entry discarded" in section["reason"]
    )


def test_a_corrupt_cache_entry_is_discarded_and_a_whole_one_kept(tmp_path: Path) -> None:
    whole = zlib.compress(b"executable" * 1000)
    (tmp_path / "good-cache").write_bytes(whole)
    (tmp_path / "cut-cache").write_bytes(whole[: len(whole) // 2])  # a run killed while JAX wrote it
    (tmp_path / "cut-atime").write_bytes(b"12345678")
    (tmp_path / "junk-cache").write_bytes(b"not zlib at all")
    assert compilation_cache.discard_corrupt(tmp_path) == ["cut-cache", "junk-cache"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["good-cache"]
    assert (
        compilation_cache.discard_corrupt(tmp_path / "absent") == [] and compilation_cache.discard_corrupt(None) == []
    )


def test_only_jaxs_cache_warnings_are_the_gates_own() -> None:
    assert compilation_cache.is_own_warning({"message": OWN})
    assert compilation_cache.is_own_warning(
        {"message": "Error writing persistent compilation cache entry for 'jit_f': x"}
    )
    assert not compilation_cache.is_own_warning({"message": "optax.ntxent is deprecated; reading the cache entry"})
    assert not compilation_cache.is_own_warning({"message": json.dumps(OWN)})  # quoted inside another message


def test_a_value_an_older_report_cut_mid_tuple_is_closed_at_its_last_whole_element() -> None:
    """A detail an older report holds cut mid-tuple, as the 723-contract report of 2026-12-01 holds huber_loss's
    signature, is closed at its last whole element and read as the parameter's change."""
    report = json.loads(
        (__import__("pathlib").Path(__file__).parents[1] / "data" / "report-optax-0.2.8-2026-12-01.json").read_text()
    )
    (r,) = [r for r in report["contracts"] if "signature_names_kinds_and_defaults[huber_loss]" in r["id"]]
    assert r["detail"].endswith("('delta', 'POSITIONAL_OR_KEYWORD', 1")
    assert details.plain_detail(r).endswith("delta (parameter 3) is now keyword-only (was positional or keyword)")
    (found,) = [f for f in findings.group([r])]
    assert "delta (parameter 3) is now keyword-only (was positional or keyword)" in found["cause"]
    assert _balanced(found["cause"].replace("…", ""))


def test_a_recorded_word_that_drifted_is_said_not_none_to_none() -> None:
    """A drift of recorded words says the words: a record that went from ``r1,r3`` to ``none`` never reads
    "`weight_decay=0/nan_inf_params/updates` None → None: budget 0"."""
    text = drift.drift_words(drift.parse_drift("snapshot drift: weight_decay=0/nan_inf_params/updates: r1,r3 -> none"))
    assert "None → None" not in text and "r1,r3 → none" in text, text


def test_an_edge_record_whose_outputs_moved_both_ways_names_the_shown_outputs_direction() -> None:
    """An edge record whose outputs moved both ways says the shown output's direction (fewer non-finite leaves
    here), never "other outputs come out non-finite" for an output that has fewer; the others moved another
    way."""
    from optax_gate.gate.judge import findings

    rows: Any = [
        {
            "id": "t::test_edge[optax.adafactor]",
            "api": "optax.adafactor",
            "kind": "snapshot",
            "change": "changed",
            "baseline": "passed",
            "candidate": "failed",
            "detail": "snapshot drift: weight_decay=0/nan_inf_params/state/[1].e_g: r1,r3 -> none; "
            "weight_decay=0/nan_inf_params/updates: none -> r1",
        }
    ]
    (f,) = findings.group(rows)
    assert "fewer non-finite outputs: `state/[1].e_g` r1,r3 in the baseline, none now" in f["cause"], f["cause"]
    assert "not all the same way" in f["cause"]


def test_a_snapshot_row_of_a_recorded_outcome_reads_as_drift_never_passed_to_failed() -> None:
    """A snapshot row of a recorded outcome that moved ("no longer recompiles") says in its outcome
    cell that it drifted from the baseline's record, never ``passed → failed``, which is what broken
    means (docs/report.md)."""
    from optax_gate.gate.base import details

    row = {
        "kind": "snapshot",
        "baseline": "passed",
        "candidate": "failed",
        "change": "changed",
        "detail": "AssertionError: assert 'ok' == 'recompiled 1 time(s)'",
    }
    assert details.outcome_words(row) == "drift from the baseline's record"
    assert details.outcome_words({**row, "kind": "golden", "change": "broken"}) == "passed → failed"


def test_a_guide_file_is_named_by_its_title_in_the_rows() -> None:
    """A guide file is shown in the guide column by its title, never by the project's handle of it (such
    as "001_3de679c23eb4e8d7.txt"); every guide of the registry has one, and any other source label (a
    guide known from a summary, a paper) stays as it is."""
    from optax_gate.gate.report import markdown
    from optax_gate.kit import guides

    row: Any = {
        "api": "optax.sgd",
        "guide": guides.SGD_STEP,
        "kind": "golden",
        "change": "broken",
        "baseline": "passed",
        "candidate": "failed",
        "detail": "AssertionError: x",
    }
    assert markdown.row_cells(row)[1] == f"SGD step guide ({guides.SGD_STEP})"
    files = [g for g in guides.GUIDES if g.endswith(".txt")]
    assert files and all(guides.shown(g).endswith(f" guide ({g})") for g in files)
    assert guides.shown(guides.MULTI_STEPS) == guides.MULTI_STEPS and guides.shown("paper: X") == "paper: X"


def test_a_signature_contracts_parameter_is_said_in_words() -> None:
    """A signature contract's change reads as the parameter's change in a finding's heading, never as raw
    Python such as "got ('delta', 'KEYWORD_ONLY', 1.0) at index 2, expected ('delta',
    'POSITIONAL_OR_KEYWORD', 1.0)"."""
    detail = (
        "AssertionError: assert [('predictions', 'POSITIONAL_OR_KEYWORD', '<required>'), ('delta', "
        "'KEYWORD_ONLY', 1.0)] == "
        "[('predictions', 'POSITIONAL_OR_KEYWORD', '<required>'), ('delta', 'POSITIONAL_OR_KEYWORD', 1.0)] At "
        "index 1 diff: "
        "('delta', 'KEYWORD_ONLY', 1.0) != ('delta', 'POSITIONAL_OR_KEYWORD', 1.0) Use -v to get more diff"
    )
    assert (
        details.pytest_words(detail)
        == "delta (parameter 2) is now keyword-only (was positional or keyword), default 1.0"
    )
    assert details.parameter_words(
        "('eps', 'POSITIONAL_OR_KEYWORD', 1e-06)", "('eps', 'POSITIONAL_OR_KEYWORD', 1e-08)"
    ) == ("eps now defaults to 1e-06 (was 1e-08)")
    assert details.parameter_words("('lr', 'POSITIONAL_ONLY', 1)", "('learning_rate', 'POSITIONAL_ONLY', 1)") == (
        "learning_rate is now named lr (was learning_rate), default 1"
    )
    assert details.parameter_words("1 at index 2", "2") == ""
    assert details.pytest_words("AssertionError: assert 1 == 2") == "got 1, expected 2"


def test_a_run_that_met_a_corrupt_cache_entry_discards_it_in_the_folder_it_compiled_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With one cache shared by both sides (issue 42), a side may read an entry the other is still
    writing ("Error reading persistent compilation cache entry"): the runner discards it in the folder
    the side's processes were given, without crashing the gate (the runner is given
    ``EnvironmentOptions``, which has no ``get``)."""
    from optax_gate.gate.inputs.options import EnvironmentOptions
    from optax_gate.gate.run import outcomes, pytest_process, runner

    folder = tmp_path / "gate-cache" / compilation_cache.FOLDER
    folder.mkdir(parents=True)
    whole = zlib.compress(b"executable" * 1000)
    (folder / "jit_f-1-cache").write_bytes(whole)
    (folder / "jit_g-2-cache").write_bytes(whole[:10])  # the other side was still writing it
    part = pytest_process.Part(
        "single",
        0,
        "",
        outcomes.ReportLog(),
        warnings=[
            {"category": "UserWarning", "message": OWN, "module": "jax", "when": "runtest", "nodeid": "t.py::test_x"}
        ],
    )
    monkeypatch.setattr(runner, "run_parts", lambda *a, **k: [part, part])
    how = runner.ContractRunOptions(extra_env=compilation_cache.environment(tmp_path / "gate-cache"))
    env = EnvironmentOptions(tmp_path, tmp_path / "lock.txt", "python3", tmp_path / "envs")
    record = runner.run(
        tmp_path / "python",
        "candidate",
        tmp_path / "out",
        env,
        how,
        probed=({"optax": "0.2.8"}, None, [], {"loaded": [], "left_out": []}),
    )
    assert record.fields.get("compilation_cache_discarded") == ["jit_g-2-cache"]
    assert sorted(p.name for p in folder.iterdir()) == ["jit_f-1-cache"]


def test_every_protocol_property_is_said_in_words() -> None:
    """A ``test_protocol[<api>-<property>]`` finding names the call it checks: every property of the probe."""
    from optax_gate.kit.surface.probe import PROPERTIES

    assert set(PROPERTIES) == set(findings.PROTOCOL_WORDS)
