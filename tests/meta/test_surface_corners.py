"""The corner grids' tables (``optax_gate.kit.surface_corners``) and how a
drift of their snapshots reads as a finding (``findings.corner_cause``)."""

from __future__ import annotations

from optax_gate.gate import findings
from optax_gate.kit import surface_corners as sc
from optax_gate.kit.surface_calls import CALLS


def _row(cid, detail, api):
    return {"id": cid, "api": api, "change": "changed", "detail": detail, "kind": "snapshot",
            "baseline": "passed", "candidate": "failed"}


def test_every_tree_utility_has_a_grid_or_a_reason():
    gridded = {p for p, _, _ in sc.TREE_CALLS}
    trees = {p for p, (kind, _, _) in CALLS.items() if kind == "tree"}
    assert trees - gridded - set(sc.TREE_LEFT_OUT) == set()
    assert not gridded & set(sc.TREE_LEFT_OUT)
    assert all(reason for reason in sc.TREE_LEFT_OUT.values())


def test_grid_tables_are_data():
    assert {form for _, form, _ in sc.TREE_CALLS} <= {"tree", "two", "scalar_tree", "add_scale", "clip", "cast", "where"}
    assert all(dtype in ("float32", "int32", "bfloat16") for leaves, _ in sc.TREES.values() for dtype, _ in leaves)
    assert {len(shape) for dtype, shape in sc.TREES["ranks_0_5"][0]} == set(range(6))
    assert set(sc.WRAPPERS) >= {"optax.MultiSteps", "optax.inject_hyperparams", "optax.masked", "optax.chain",
                                "optax.apply_if_finite"}
    assert any("mu_dtype" in kw for _, kw in sc.INNERS.values()) and set(sc.PARAM_DTYPES) == {"float32", "bfloat16", "float16"}


def test_a_corner_drift_is_one_finding_across_apis():
    """tree max and min raising on an empty leaf in the baseline and returning a value now: one cause."""
    detail = ("snapshot drift: corner.empty_leaf: raises ValueError -> ok float32[] -0.920853; "
              "corner.only_empty: raises ValueError -> ok python float -inf")
    rows = [_row(f"tests/contracts/test_surface_corners_trees.py::test_tree_corners[optax.tree.{n}]", detail, f"optax.tree.{n}")
            for n in ("max", "min")]
    (found,) = findings.group(rows)
    assert found["apis"] == ["optax.tree.max", "optax.tree.min"] and found["key"] == "corner"
    assert found["cause"] == ("at corner `empty_leaf` the outcome differs: raises ValueError in the baseline, "
                              "ok float32[] -0.920853 now (and 1 more corners)")


def test_other_corners_are_other_causes():
    rows = [_row("tests/contracts/test_surface_corners_losses.py::test_loss_corners[optax.l2_loss]",
                 "snapshot drift: corner.neg_inf_logit/jvp: ok float32[] 1 -> non-finite float32[] nan", "optax.l2_loss"),
            _row("tests/contracts/test_surface_corners_trees.py::test_tree_corners[optax.tree.max]",
                 "snapshot drift: corner.empty_leaf: raises ValueError -> ok float32[] 1", "optax.tree.max")]
    assert len(findings.group(rows)) == 2
    assert findings.corner_cause([]) is None
