"""API surface diff, by value and by deprecation (``optax_gate.gate.surface.public_api``,
``optax_gate.gate.surface.deprecations``), on two versions of a tiny ``optax`` built
here (never imported): a default written differently but equal by value is no
change; a deprecation new in the candidate (decorator, docstring directive,
``warnings.warn`` in the body) is a ``deprecated`` row, and ``--usage`` names
the team's call sites of it. Expected rows worked out by hand from the two
sources below."""

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("griffe", reason="griffe comes with the tools lock (requirements-tools.txt)")

from optax_gate.gate.diffs import unseen
from optax_gate.gate.surface import public_api
from optax_gate.gate.team_code import usage

BASE = '''\
import warnings

EPS = 1e-8


def same(x, n=100, eps=1e-8, flag=True, pair=(1, 2), lr=EPS):
    return x


def differ(x, n=100, flag=1, name="x", fn=None):
    return x


def dep1(x):
    return x


def dep2(x):
    """Identity."""
    return x


def dep3(x):
    return x


def dep4(x, seed=None):
    return x


def warned(x):
    warnings.warn("warned is deprecated", DeprecationWarning)
    return x


class Thing:
    def __init__(self, x):
        self.x = x
'''

CAND = '''\
import warnings
from typing_extensions import deprecated

from optax._src import consts
from optax._src.consts import TINY as SMALL

LIMIT = 101


def same(x, n=100.0, eps=consts.TINY, flag=True, pair=(1, 2), lr=SMALL):
    return x


def differ(x, n=LIMIT, flag=True, name="y", fn=consts.make()):
    return x


@deprecated("use same")
def dep1(x):
    return x


def dep2(x):
    """Identity.

    .. deprecated:: 0.2.8
       Use :func:`same`.
    """
    return x


def dep3(x):
    def inner(y):
        warnings.warn(f"dep3 is deprecated, {y}", category=FutureWarning)
    return inner


def dep4(x, seed=None):
    if seed is not None:
        warnings.warn("seed is deprecated", DeprecationWarning)
    return x


def warned(x):
    warnings.warn("warned is deprecated", DeprecationWarning)
    return x


class Thing:
    def __init__(self, x):
        warnings.warn("Thing goes away", PendingDeprecationWarning)
        self.x = x
'''

INIT = "from optax._src.impl import same, differ, dep1, dep2, dep3, dep4, warned, Thing\n"


def build(root: Path, src: str) -> Path:
    (root / "optax" / "_src").mkdir(parents=True)
    (root / "optax" / "__init__.py").write_text(INIT)
    (root / "optax" / "_src" / "impl.py").write_text(src)
    (root / "optax" / "_src" / "consts.py").write_text("TINY = 1e-08\n\n\ndef make():\n    return 1\n")
    return root


@pytest.fixture
def rows(tmp_path: Path) -> Any:
    old = public_api.surface(build(tmp_path / "base", BASE), ["optax"])
    new = public_api.surface(build(tmp_path / "cand", CAND), ["optax"])
    return public_api.diff(old, new), old, new


def test_defaults_equal_by_value_are_no_change_and_different_values_are(rows: Any) -> None:
    diff, _, _ = rows
    got = {(r["path"], r["change"], r["param"]): (r["old"], r["new"]) for r in diff if r["change"] == "default-changed"}
    assert got == {  # nothing of optax.same: 100 == 100.0, 1e-8 == consts.TINY == SMALL; bool True != 1
        ("optax.differ", "default-changed", "n"): ("n=100", "n=LIMIT"),
        ("optax.differ", "default-changed", "flag"): ("flag=1", "flag=True"),
        ("optax.differ", "default-changed", "name"): ("name='x'", "name='y'"),
        ("optax.differ", "default-changed", "fn"): ("fn=None", "fn=consts.make()"),  # a call: not told statically
    }


def test_the_value_of_a_named_constant_is_read_through_modules_and_aliases(rows: Any) -> None:
    _, _, new = rows
    values = {p.name: p.value for p in new["optax.same"].params}
    assert values == {"x": None, "n": "100.0", "eps": "1e-08", "flag": "True", "pair": "(1, 2)", "lr": "1e-08"}


def test_a_deprecation_new_in_the_candidate_is_a_row(rows: Any) -> None:
    diff, _, _ = rows
    got = {r["path"]: r["new"] for r in diff if r["change"] == "deprecated"}
    assert got == {
        "optax.dep1": "@deprecated('use same')",
        "optax.dep2": ".. deprecated:: 0.2.8",
        "optax.dep3": "warns FutureWarning: dep3 is deprecated, ",
        "optax.dep4": "warns DeprecationWarning under a condition: seed is deprecated",
        "optax.Thing": "warns PendingDeprecationWarning: Thing goes away",
    }  # optax.warned warns in both versions: not new


def test_usage_names_the_teams_call_sites_of_newly_deprecated_apis(tmp_path: Path, rows: Any) -> None:
    team = tmp_path / "team"
    team.mkdir()
    (team / "train.py").write_text(
        "import optax\nfrom optax import dep2\n\noptax.dep1(1)\ny = dep2(2)\noptax.warned(3)\n"
    )
    base, cand = tmp_path / "base", tmp_path / "cand"
    section = unseen.surface_section(base, cand, ("optax",), usage.scan([team], base=team), contracted=set())
    got = {r["path"]: (r["verdict"], r["uses"]) for r in section["rows"] if r["change"] == "deprecated"}
    assert got["optax.dep1"] == (
        "changed",
        ["train.py:4: calls optax.dep1; deprecated in the candidate (@deprecated('use same'))"],
    )
    assert got["optax.dep2"] == (
        "changed",
        [
            "train.py:2: imports optax.dep2; deprecated in the candidate (.. deprecated:: 0.2.8)",
            "train.py:5: calls optax.dep2; deprecated in the candidate (.. deprecated:: 0.2.8)",
        ],
    )
    assert got["optax.dep3"] == ("changed", [])
