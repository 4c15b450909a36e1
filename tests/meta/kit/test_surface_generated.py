"""Generated surface entries (``optax_gate.kit.surface.generated``): what the
generator makes of a signature and docstring, its reach over the pinned
baseline's whole surface, and generated contracts that fail when the
behaviour they pin moves (a real pytest run of the contracts, with optax.lion
taken out of the hand-written table so that it is generated)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from optax_gate.gate.reuse import baseline_snapshots
from optax_gate.gate.surface import public_api
from optax_gate.kit.surface import calls as surface_calls
from optax_gate.kit.surface import enumeration as surface_enum
from optax_gate.kit.surface import generated as surface_generated
from optax_gate.kit.surface import table as surface_table

ROOT = Path(__file__).resolve().parents[3]


def test_the_pinned_baseline_generates_nothing() -> None:
    """At optax 0.2.6 the hand-written tables know every public callable."""
    made, transformations, calls = surface_generated.generate(
        surface_enum.public_callables(), surface_generated.hand_written()
    )
    assert (made.kinds, made.aliases, made.left_out, transformations, calls) == ({}, {}, {}, {}, {})


def test_over_the_whole_pinned_surface_the_generator_matches_the_hand_tables() -> None:
    """As if no table existed: every transformation the hand table builds by
    name alone is generated as one, every hand-written call whose required
    parameters the generator can name is generated as a call of the same
    kind, and each callable left out says why."""
    public = surface_enum.public_callables()
    made, transformations, calls = surface_generated.generate(public, {})
    canonical = {p: made.aliases.get(p, p) for p in public}
    by_name = [e.path for e in surface_table.TRANSFORMATIONS.values() if not (e.args or e.builder or e.left_out)]
    assert not [p for p in by_name if canonical[p] not in transformations]
    for path, (kind, _, _) in surface_calls.CALLS.items():
        if canonical[path] in made.left_out or canonical[path] in transformations:
            # hutchinson_estimator_diag_hessian: a call in the hand table, its docstring returns a transformation
            continue
        assert canonical[path] in calls, path
        assert calls[canonical[path]][0] == kind or {kind, calls[canonical[path]][0]} <= {"tree", "other"}, path
    assert made.left_out and all("no value by name" in why or "no signature" in why for why in made.left_out.values())
    assert len(transformations) + len(calls) + len(made.left_out) == len(made.kinds)


def _factory(doc: str, annotation: Any = None) -> Any:
    def factory(learning_rate: float, b1: float = 0.9) -> Any:
        return None

    factory.__doc__ = doc
    if annotation is not None:
        factory.__annotations__["return"] = annotation
    return factory


def test_a_docstring_that_returns_a_gradient_transformation_makes_a_transformation() -> None:
    monitor_like = _factory(
        "Monitor.\n\nArgs:\n  learning_rate: a rate.\n\nReturns:\n  A gradient transformation that captures "
        "measurements.\n"
    )
    assert surface_generated.kind_of(["optax.monitor_like"], monitor_like) == "transformation"
    plain = _factory("A helper.\n\nReturns:\n  A number.\n")
    assert surface_generated.kind_of(["optax.helper"], plain) == "other"
    assert surface_generated.kind_of(["optax.helper", "optax.losses.helper"], plain) == "loss"


def test_a_new_path_of_a_known_object_is_an_alias_and_a_new_object_is_generated() -> None:
    known_obj, new_obj = _factory("Known."), _factory("New.\n\nReturns:\n  A GradientTransformation.\n")
    public = {
        "optax.known": known_obj,
        "optax.transforms.known": known_obj,
        "optax.new": new_obj,
        "optax.transforms.new": new_obj,
    }
    made, transformations, calls = surface_generated.generate(public, {"optax.known": "optax.known"})
    assert made.aliases == {"optax.transforms.known": "optax.known", "optax.transforms.new": "optax.new"}
    assert list(transformations) == ["optax.new"] and transformations["optax.new"].generated
    assert transformations["optax.new"].aliases == ("optax.transforms.new",) and not calls


def test_a_required_parameter_with_no_value_by_name_is_left_out_with_its_name() -> None:
    def needs_fun(fun: Any, microbatch_size: Any) -> Any:
        return fun

    made, _transformations, calls = surface_generated.generate({"optax.needs_fun": needs_fun}, {})
    assert (
        not calls
        and "`fun`" in made.left_out["optax.needs_fun"]
        and "microbatch_size" not in made.left_out["optax.needs_fun"]
    )


def test_an_api_contracted_by_hand_is_neither_generated_nor_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """``optax.microbatch`` (and its other path) has a hand-written module: recorded with that module,
    not left out (test_known then passes for it) and not counted as generated."""

    def microbatch(fun: Any, argnums: Any, microbatch_size: Any) -> Any:
        return fun

    public = {"optax.microbatch": microbatch, "optax.microbatching.microbatch": microbatch}
    made, transformations, calls = surface_generated.generate(public, {})
    assert made.by_hand == {"optax.microbatch": "tests/contracts/test_microbatching.py"}
    assert not made.left_out and not transformations and not calls
    monkeypatch.setattr(surface_generated, "GENERATED", made)
    assert not surface_generated.is_generated("optax.microbatch")


def test_a_call_by_name_passes_positional_parameters_in_order_and_integer_labels_where_the_docstring_says() -> None:
    def loss(logits: Any, labels: Any, *, axis: Any) -> None:
        """A loss.

        Args:
          logits: scores.
          labels: Integers specifying the correct class.
          axis: an axis.
        """

    seen: dict[str, Any] = {}

    def spy(*args: Any, **kwargs: Any) -> None:
        seen.update(args=args, kwargs=kwargs)

    surface_generated.call_by_name(loss, {"logits": lambda: "L", "labels": lambda: "P", "axis": lambda: -1})(spy)
    assert seen["args"][0] == "L" and seen["kwargs"] == {"axis": -1}
    assert str(seen["args"][1].dtype) == "int32"  # surface_calls.ints(), not the probabilities


PLUGIN = """
import functools
import os

from optax_gate.kit.surface import table as surface_table

# optax.lion as if no hand-written table knew it: the contracts' conftest generates its entry
surface_table.TRANSFORMATIONS.pop("optax.lion")


def pytest_configure(config):
    if os.environ.get("MUTATE_LION"):
        import optax

        original = optax.lion

        @functools.wraps(original)
        def lion(*args, **kwargs):
            kwargs.setdefault("b1", 0.5)  # the default 0.9 moved
            return original(*args, **kwargs)
        optax.lion = lion
"""


def _contracts(
    tmp_path: Path,
    snapshots: Any,
    record: Any = False,
    mutate: Any = False,
    module: Any = "tests/contracts/test_surface_transformations.py",
) -> Any:
    env = {k: v for k, v in os.environ.items() if k not in (baseline_snapshots.SNAPSHOT_DIR, baseline_snapshots.RECORD)}
    env.update(
        {
            baseline_snapshots.SNAPSHOT_DIR: str(snapshots),
            "PYTHONPATH": os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")]),
        }
    )
    if record:
        env[baseline_snapshots.RECORD] = "1"
    if mutate:
        env["MUTATE_LION"] = "1"
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rfEs",
            "-p",
            "no:cacheprovider",
            "-p",
            "lion_untabled",
            "-n",
            "0",
            module,
            "-k",
            "optax.lion",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.timeout(900)
def test_generated_contracts_record_at_the_baseline_and_fail_when_the_behaviour_moves(tmp_path: Path) -> None:
    (tmp_path / "lion_untabled.py").write_text(PLUGIN)
    snapshots = tmp_path / "snapshots"
    recorded = _contracts(tmp_path, snapshots, record=True)
    assert recorded.returncode == 0, recorded.stdout[-3000:]
    assert (
        "13 passed" in recorded.stdout
    )  # 10 protocol properties, the trajectory, the non-finite/state and edge records
    assert any(snapshots.rglob("test_trajectory_optax_lion_.npz"))
    assert _contracts(tmp_path, snapshots).returncode == 0
    moved = _contracts(tmp_path, snapshots, mutate=True)
    assert (
        moved.returncode == 1
        and "FAILED tests/contracts/test_surface_transformations.py::test_trajectory[optax.lion]" in moved.stdout
    )
    # with no recorded baseline (the API is new in this environment) its snapshots are skipped as new
    new = _contracts(tmp_path, tmp_path / "nothing-recorded")
    assert new.returncode == 0 and "new: optax.lion has generated contracts, and no snapshot" in new.stdout


@pytest.mark.timeout(600)
def test_a_generated_apis_memory_snapshot_recorded_at_a_team_baseline_is_the_candidates_to_compare(
    tmp_path: Path,
) -> None:
    """The compiled-memory contract of a generated API records its snapshot at a team's own baseline under the
    name the candidate looks it up by: else every such contract read 'passed -> skipped: new' (0.2.8 -> main:
    seven false findings, galore, madgrad, signum...)."""
    (tmp_path / "lion_untabled.py").write_text(PLUGIN)
    snapshots, module = tmp_path / "snapshots", "tests/contracts/test_surface_memory.py"
    recorded = _contracts(tmp_path, snapshots, record=True, module=module)
    assert recorded.returncode == 0 and "1 passed" in recorded.stdout, recorded.stdout[-2000:]
    again = _contracts(tmp_path, snapshots, module=module)
    assert again.returncode == 0 and "1 passed" in again.stdout and "new:" not in again.stdout, again.stdout[-2000:]


def test_the_report_names_the_generated_apis_and_why_others_are_not_contracted() -> None:
    from optax_gate.gate.report import generated_section, markdown

    gen = surface_generated.GUIDE
    rows = [
        {
            "id": "t::test_protocol[optax.signum-init_update]",
            "api": "optax.signum",
            "guide": gen,
            "baseline": "passed",
            "candidate": "passed",
            "change": "unchanged",
            "detail": "",
        },
        {
            "id": "t::test_known[optax.microbatch]",
            "api": "optax.microbatch",
            "guide": gen,
            "baseline": "skipped",
            "candidate": "skipped",
            "change": "unchanged",
            "detail": "Skipped: new, not contracted: optax.microbatch (other) is public in optax 0.2.8; no contract "
            "could "
            "be generated: required parameter `fun` has no value by name in the generator (the caller's own)",
        },
        {
            "id": "t::test_x[optax.adam]",
            "api": "optax.adam",
            "guide": "docs: x",
            "baseline": "passed",
            "candidate": "passed",
            "change": "unchanged",
            "detail": "",
        },
    ]
    (line,) = generated_section.lines({"contracts": rows})
    assert "1 APIs of the baseline, 1 contracts (`optax.signum`)" in line
    assert "not generated: `optax.microbatch`: required parameter `fun` has no value by name in the generator" in line
    assert "adam" not in line and generated_section.lines({"contracts": rows[2:]}) == []
    new = [dict(rows[0], baseline=None, change="new")]
    assert "1 APIs new in the candidate, 1 contracts run only there" in generated_section.lines({"contracts": new})[0]
    # beside hand-written contracts of another new API, the counts say of how many (the `new` finding's)
    hand = {
        "id": "t::test_y[optax.micro]",
        "api": "optax.micro",
        "guide": "docs: y",
        "baseline": None,
        "candidate": "passed",
        "change": "new",
        "detail": "",
    }
    line = generated_section.lines({"contracts": [*new, hand, dict(hand, id="t::test_z[optax.micro]")]})[0]
    assert "1 APIs new in the candidate, 1 of the 3 contracts that run only in the candidate" in line, line
    assert "report_generated.lines(report)" in Path(markdown.__file__).read_text()  # the page shows it


def test_an_alias_no_table_names_is_as_broken_as_the_contracted_path_defined_at_the_same_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The 0.2.8 -> main gate: `optax.contrib.dpsgd`'s seed became keyword-only (broken: contracted) and
    `optax.dpsgd`, the same function (`optax/contrib/_privacy.py:114`), read only changed."""
    from optax_gate.gate.diffs import unseen

    def row(path: Any) -> Any:
        return {
            "path": path,
            "change": "keyword-only",
            "kind": "function",
            "old": "seed (positional or keyword)",
            "new": "seed (keyword-only)",
            "param": "seed",
            "where": "optax/contrib/_privacy.py:114",
        }

    monkeypatch.setattr(public_api, "cached_surface", lambda site, packages: {})
    monkeypatch.setattr(
        public_api,
        "diff",
        lambda old, new: [
            row("optax.contrib.dpsgd"),
            row("optax.dpsgd"),
            dict(row("optax.other"), where="optax/_src/x.py:1"),
        ],
    )
    section = unseen.surface_section(tmp_path, tmp_path, ("optax",), None, {"optax.contrib.dpsgd"})
    assert {r["path"]: r["verdict"] for r in section["rows"]} == {
        "optax.contrib.dpsgd": "broken",
        "optax.dpsgd": "broken",
        "optax.other": "changed",
    }
    assert "optax.transforms.known" in unseen.contracted_paths(
        {
            "contracts": [
                {
                    "id": "tests/contracts/test_surface_sweep.py::test_known[optax.transforms.known]",
                    "api": "optax.known",
                }
            ]
        }
    )
