"""API surface diff (``optax_gate.gate.surface.public_api``) on two versions of a tiny
package built here, named ``optax`` so that the usage scanner tracks it (it is
never imported: the surface is read statically).

Each kind of change is made on purpose in the candidate copy, and the public
names are re-exported from a private folder without ``__init__.py``
(``optax/_src``, as the real optax does), which the walk must follow.
"""

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("griffe", reason="griffe comes with the tools lock (requirements-tools.txt)")

from optax_gate.gate.surface import public_api
from tests.meta.support.surface_sites import BASE_INIT, BASE_SRC, CAND_INIT, CAND_SRC, build


@pytest.fixture
def sites(tmp_path: Path) -> Any:
    base = build(tmp_path / "base", BASE_INIT, BASE_SRC, contrib=False)
    cand = build(tmp_path / "cand", CAND_INIT, CAND_SRC, contrib=True)
    return base, cand


def rows_by(rows: Any) -> Any:
    return {(r["path"], r["change"], r["param"]): r for r in rows}


def test_a_name_re_exported_from_a_private_folder_is_followed_to_its_definition(sites: Any) -> None:
    base, _ = sites
    entries = public_api.surface(base, ["optax"])
    e = entries["optax.scale"]
    assert (e.kind, e.target, e.where) == ("function", "optax._src.impl.scale", "optax/_src/impl.py:4")
    assert e.signature() == "(lr, momentum=0.9, nesterov=False)"
    assert entries["optax.losses.loss"].where == "optax/_src/impl.py:16"
    assert entries["optax.State"].signature() == "(count, mu=None)"
    assert entries["optax.State.step"].signature() == "(grads, lr=0.1)"


def test_every_kind_of_surface_change_is_reported(sites: Any) -> None:
    base, cand = sites
    rows = rows_by(public_api.diff(public_api.surface(base, ["optax"]), public_api.surface(cand, ["optax"])))
    expected = {
        ("optax.gone", "removed", ""): ("(x)", "—"),
        ("optax.mover", "moved", ""): ("optax.mover", "optax.contrib.mover"),
        ("optax.shape", "kind-changed", ""): ("function", "class"),
        ("optax.clip", "parameter-removed", "max_norm"): ("max_norm", "—"),
        ("optax.renamed_clip", "parameter-renamed", "max_norm"): ("max_norm", "max_norm2"),
        ("optax.swap", "parameter-reordered", ""): ("a, b", "b, a"),
        ("optax.losses.loss", "keyword-only", "delta"): ("delta (positional or keyword)", "delta (keyword-only)"),
        ("optax.losses.loss", "keyword-only", "axis"): ("axis (positional or keyword)", "axis (keyword-only)"),
        ("optax.posonly", "positional-only", "tree"): ("tree (positional or keyword)", "tree (positional-only)"),
        ("optax.posonly", "positional-only", "fn"): ("fn (positional or keyword)", "fn (positional-only)"),
        ("optax.needs", "new-required-parameter", "y"): ("—", "y"),
        ("optax.scale", "default-changed", "momentum"): ("momentum=0.9", "momentum=0.95"),
        ("optax.State.step", "keyword-only", "lr"): ("lr (positional or keyword)", "lr (keyword-only)"),
        ("optax.fresh", "added", ""): ("—", "(x)"),
        ("optax.contrib", "added", ""): ("—", "module"),
        ("optax.contrib.mover", "added", ""): ("—", "(x, y)"),
    }
    assert {k: (r["old"], r["new"]) for k, r in rows.items()} == expected
    assert rows[("optax.needs", "new-required-parameter", "y")]["where"] == "optax/_src/impl.py:24"
    assert rows[("optax.shape", "kind-changed", "")]["where"] == "optax/_src/impl.py:28"


def test_an_unchanged_tree_has_no_rows_and_a_missing_start_module_is_absent(sites: Any) -> None:
    base, _ = sites
    entries = public_api.surface(base, ["optax", "flax.nnx"])
    assert public_api.diff(entries, entries) == []
    assert not any(p.startswith("flax") for p in entries)


def test_third_party_re_exports_are_external_and_plain_imports_are_not_public(tmp_path: Path) -> None:
    (tmp_path / "optax").mkdir()
    (tmp_path / "optax" / "__init__.py").write_text("import jax\nimport jax.numpy as jnp\nfrom jax.nn import relu\n")
    entries = public_api.surface(tmp_path, ["optax"])
    assert set(entries) == {"optax"}  # no __all__: third-party names are not optax's API
    (tmp_path / "optax" / "__init__.py").write_text("from jax.nn import relu\n__all__ = ['relu']\n")
    assert public_api.surface(tmp_path, ["optax"])["optax.relu"].kind == "external"


def test_the_package_list_comes_from_pyproject(tmp_path: Path) -> None:
    py = tmp_path / "pyproject.toml"
    assert public_api.configured_packages(py) == public_api.DEFAULT_PACKAGES
    py.write_text('[tool.optax-gate]\nsurface = ["optax", "optax.contrib", "flax.nnx"]\n')
    assert public_api.configured_packages(py) == ("optax", "optax.contrib", "flax.nnx")
    py.write_text('[tool.optax-gate]\nsurface = "optax"\n')
    with pytest.raises(ValueError, match="list of module names"):
        public_api.configured_packages(py)
