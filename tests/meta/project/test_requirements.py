"""Candidate requirement sets (``optax_gate.gate.inputs.requirements``)."""

from typing import Any

import pytest

from optax_gate.gate.inputs import requirements

BASE = "# comment\noptax==0.2.6\njax==0.11.2\njaxlib==0.11.2\nflax==0.12.12\nnumpy\n\npytest  # runner\n"


def test_named_packages_are_replaced_and_others_kept() -> None:
    out = requirements.replace(BASE, ["optax==0.2.8", "JAX==0.12.0.1"])
    assert out.splitlines() == ["optax==0.2.8", "JAX==0.12.0.1", "jaxlib==0.11.2", "flax==0.12.12", "numpy", "pytest"]


def test_unknown_packages_are_appended() -> None:
    assert requirements.replace(BASE, ["orbax-checkpoint>=0.12"]).splitlines()[-1] == "orbax-checkpoint>=0.12"


@pytest.mark.parametrize(
    ("spec", "name"), [("Flax_Nnx.x>=1", "flax-nnx-x"), ("jaxlib==0.12.0.1", "jaxlib"), ("optax", "optax")]
)
def test_canonical_name(spec: Any, name: Any) -> None:
    assert requirements.canonical_name(spec) == name


@pytest.mark.parametrize("specs", [["optax==0.2.7", "optax==0.2.8"], ["==0.2.8"]])
def test_bad_specs_raise(specs: Any) -> None:
    with pytest.raises(ValueError):
        requirements.replace(BASE, specs)


def test_a_pin_the_baseline_lock_contradicts_takes_the_lock_version() -> None:
    """The packages a candidate does not name keep the baseline lock's versions: with a team's
    --baseline-lock on jax 0.12.0.1 and the project's requirements.in (jax==0.11.2), a candidate naming only
    optax keeps jax 0.12.0.1, never moving jax backwards (as optax main from source against a 0.2.8 lock
    would, with jax 0.11.2). A spec still wins, and unpinned lines stay as they are."""
    pins = {"optax": "0.2.8", "jax": "0.12.0.1", "jaxlib": "0.12.0.1", "numpy": "2.5.5"}
    text, moved = requirements.replace_held(BASE, ["optax @ file:///src"], pins)
    lines = text.splitlines()
    assert "jax==0.12.0.1" in lines and "jaxlib==0.12.0.1" in lines and "optax @ file:///src" in lines, lines
    assert moved == [
        "jax==0.11.2 → jax==0.12.0.1 (the baseline lock's)",
        "jaxlib==0.11.2 → jaxlib==0.12.0.1 (the baseline lock's)",
    ], moved
    text, moved = requirements.replace_held(BASE, ["jax==0.12.1"], pins)
    assert "jax==0.12.1" in text.splitlines() and "jax==0.12.0.1" not in text.splitlines()
    assert requirements.replace_held(BASE, ["optax==0.2.8"], {})[1] == []  # the pinned baseline: nothing moves
