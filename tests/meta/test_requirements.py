"""Candidate requirement sets (``optax_gate.gate.requirements``)."""

import pytest

from optax_gate.gate import requirements

BASE = "# comment\noptax==0.2.6\njax==0.11.2\njaxlib==0.11.2\nflax==0.12.12\nnumpy\n\npytest  # runner\n"


def test_named_packages_are_replaced_and_others_kept():
    out = requirements.replace(BASE, ["optax==0.2.8", "JAX==0.12.0.1"])
    assert out.splitlines() == ["optax==0.2.8", "JAX==0.12.0.1", "jaxlib==0.11.2", "flax==0.12.12", "numpy", "pytest"]


def test_unknown_packages_are_appended():
    assert requirements.replace(BASE, ["orbax-checkpoint>=0.12"]).splitlines()[-1] == "orbax-checkpoint>=0.12"


@pytest.mark.parametrize(("spec", "name"), [("Flax_Nnx.x>=1", "flax-nnx-x"), ("jaxlib==0.12.0.1", "jaxlib"), ("optax", "optax")])
def test_canonical_name(spec, name):
    assert requirements.canonical_name(spec) == name


@pytest.mark.parametrize("specs", [["optax==0.2.7", "optax==0.2.8"], ["==0.2.8"]])
def test_bad_specs_raise(specs):
    with pytest.raises(ValueError):
        requirements.replace(BASE, specs)
