"""Usage scope (``optax_gate.gate.team_code.usage``): the fake team repository in
``tests/meta/fake_team/`` (a script, a module of a package, a notebook) is
scanned and matched against the surface diff of the tiny package of
``test_surface``; each expected sentence was worked out by hand from the two
versions of the package (see ``test_surface.BASE_SRC`` / ``CAND_SRC``)."""

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("griffe", reason="griffe comes with the tools lock (requirements-tools.txt)")

from optax_gate.gate.diffs import unseen
from optax_gate.gate.surface import public_api
from optax_gate.gate.team_code import binding, usage
from tests.meta.support.surface_sites import BASE_INIT, BASE_SRC, CAND_INIT, CAND_SRC, build

TEAM = Path(__file__).parents[1] / "fake_team"

EXPECTED = {
    ("optax.clip", "parameter-removed", "broken"): [
        "train.py:8: calls optax.clip with 2 positional arguments; max_norm was removed in the candidate → TypeError "
        "(takes 1 positional argument(s) but 2 were given)"
    ],
    # breaks only because delta is passed positionally; line 10 passes it by keyword and is unaffected
    ("optax.losses.loss", "keyword-only", "broken"): [
        "train.py:9: calls optax.losses.loss with 3 positional arguments; delta is keyword-only in the "
        "candidate → TypeError "
        "(takes 2 positional argument(s) but 3 were given; delta, axis keyword-only)",
        "train.py:10: calls optax.losses.loss with 2 positional arguments and keywords delta; passes delta by "
        "keyword, unaffected",
    ],
    ("optax.losses.loss", "keyword-only", "changed"): [
        "train.py:9: calls optax.losses.loss with 3 positional arguments; does not pass axis, unaffected",
        "train.py:10: calls optax.losses.loss with 2 positional arguments and keywords delta; does not pass "
        "axis, unaffected",
    ],
    ("optax.scale", "default-changed", "changed"): [
        "train.py:7: calls optax.scale without momentum; relies on its default: momentum=0.9 → momentum=0.95"
    ],
    ("optax.gone", "removed", "broken"): [
        "teamlib/model.py:4: imports optax.gone; removed in the candidate → ImportError",
        "teamlib/model.py:8: calls optax.gone; removed in the candidate → AttributeError",
    ],
    ("optax.swap", "parameter-reordered", "broken"): [
        "teamlib/model.py:8: calls optax.swap with 2 positional arguments; parameters reordered (a, b → b, a) → "
        "argument 1 binds to b instead of a; argument 2 binds to a instead of b (silently)",
        "teamlib/model.py:8: calls optax.swap with 0 positional arguments and keywords a, b; unaffected",
    ],
    ("optax.State.step", "keyword-only", "broken"): [
        "teamlib/model.py:12: calls optax.State.step with 2 positional arguments; lr is keyword-only in the "
        "candidate → "
        "TypeError (takes 1 positional argument(s) but 2 were given; lr keyword-only)"
    ],
    ("optax.needs", "new-required-parameter", "broken"): [
        "notebooks/explore.ipynb:code cell 2 (cell 3 of the notebook):2: calls optax.needs with 1 positional "
        "argument; y is a new required parameter "
        "in the candidate → TypeError (missing required argument(s): y)"
    ],
    ("optax.mover", "moved", "broken"): [
        "notebooks/explore.ipynb:code cell 2 (cell 3 of the notebook):3: calls optax.mover; moved in the "
        "candidate (now optax.contrib.mover) → AttributeError"
    ],
}


@pytest.fixture
def section(tmp_path: Path) -> Any:
    base = build(tmp_path / "base", BASE_INIT, BASE_SRC, contrib=False)
    cand = build(tmp_path / "cand", CAND_INIT, CAND_SRC, contrib=True)
    return unseen.surface_section(base, cand, ("optax",), usage.scan([TEAM], base=TEAM), contracted=set())


def test_the_fake_team_repository_gives_exactly_the_expected_rows(section: Any) -> None:
    got = {(r["path"], r["change"], r["verdict"]): r["uses"] for r in section["rows"] if r["uses"]}
    assert got == EXPECTED


def test_rows_the_team_does_not_touch_are_changed_and_additions_new(section: Any) -> None:
    verdicts = {(r["path"], r["change"]): r["verdict"] for r in section["rows"]}
    assert (
        verdicts[("optax.renamed_clip", "parameter-renamed")] == "changed"
    )  # incompatible, but the team never calls it
    assert verdicts[("optax.posonly", "positional-only")] == "changed"
    assert verdicts[("optax.fresh", "added")] == "new"
    assert section["counts"] == {"broken": 7, "cannot-tell": 0, "changed": 6, "new": 3, "noted": 0}


def test_without_usage_only_contracted_apis_break(tmp_path: Path) -> None:
    base = build(tmp_path / "base", BASE_INIT, BASE_SRC, contrib=False)
    cand = build(tmp_path / "cand", CAND_INIT, CAND_SRC, contrib=True)
    s = unseen.surface_section(base, cand, ("optax",), None, contracted={"optax.State", "optax.scale"})
    broken = sorted((r["path"], r["change"]) for r in s["rows"] if r["verdict"] == "broken")
    assert broken == [("optax.State.step", "keyword-only")]  # optax.scale's default moved: compatible, changed


def test_the_scanner_sees_aliases_from_imports_notebook_cells_and_other_imports() -> None:
    uses = usage.scan([TEAM], base=TEAM).uses
    imports = usage.imported_modules(uses)
    assert imports["chex"] == ["teamlib/model.py:2"] and imports["jax"] == [
        "notebooks/explore.ipynb:code cell 1 (cell 1 of the notebook):3"
    ]
    calls = {(u.where, u.path, u.positional, u.keywords) for u in uses if u.how == "call"}
    assert ("train.py:7", "optax.scale", 1, ()) in calls  # `import optax as ox`
    assert ("train.py:10", "optax.losses.loss", 2, ("delta",)) in calls  # `from optax import losses`
    assert (
        "notebooks/explore.ipynb:code cell 2 (cell 3 of the notebook):1",
        "jax.numpy.ones",
        1,
        (),
    ) in calls  # magic line blanked, cells share imports


@pytest.mark.parametrize(
    "params, positional, keywords, error",
    [
        ((public_api.Param("a", public_api.POSITIONAL),), 2, (), "takes 1 positional argument(s) but 2 were given"),
        ((public_api.Param("a", public_api.POSITIONAL),), 0, ("b",), "got an unexpected keyword argument 'b'"),
        ((public_api.Param("a", public_api.POSITIONAL_ONLY),), 0, ("a",), "'a' is positional-only"),
        ((public_api.Param("a", public_api.POSITIONAL), public_api.Param("k", public_api.VAR_KEYWORD)), 1, ("b",), ""),
        ((public_api.Param("a", public_api.POSITIONAL), public_api.Param("r", public_api.VAR_POSITIONAL)), 3, (), ""),
    ],
)
def test_bind_follows_python(params: Any, positional: Any, keywords: Any, error: Any) -> None:
    assert binding.bind(params, positional, keywords)[1] == error


def test_a_call_that_does_not_pass_an_added_parameter_gets_its_default_never_unaffected() -> None:
    """A call that does not pass a new parameter gets its default: affected, the default named, never
    "unaffected". For example MultiSteps gains ``accumulator_dtype=jnp.float32`` in 0.2.8, and a call that
    does not pass it turns its bfloat16 accumulator float32."""
    from optax_gate.gate.surface.public_api import POSITIONAL, Param

    old = (Param("opt", POSITIONAL), Param("every_k_schedule", POSITIONAL))
    new = (*old, Param("accumulator_dtype", POSITIONAL, "jnp.float32"))
    row = {
        "change": "parameter-added",
        "param": "accumulator_dtype",
        "old": "—",
        "new": "accumulator_dtype=jnp.float32",
        "uses": [],
        "sites": [],
        "breaks": False,
    }
    binding.judge_call(usage.Use("train.py:33", "optax.MultiSteps", "call", 1, ("every_k_schedule",)), row, old, new)
    assert row["uses"] == [
        "train.py:33: calls optax.MultiSteps with 1 positional argument and keywords every_k_schedule; "
        "does not pass accumulator_dtype: gets its default in the candidate (accumulator_dtype=jnp.float32)"
    ]
    assert row["sites"] == [
        {
            "where": "train.py:33",
            "verdict": "affected",
            "note": "does not pass accumulator_dtype: gets its new default accumulator_dtype=jnp.float32",
        }
    ]
    assert not row["breaks"]
