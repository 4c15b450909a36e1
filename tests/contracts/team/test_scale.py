"""A team's own contract, as an example to copy: ``optax.scale``.

This module is what a team adds for an API the suite does not cover (see the
README, "Your own contracts"). It names its API and its source with the
``contract`` marker, using a free ``team:`` source label instead of a guide of
``optax_gate.kit.guides``, so nothing in the package is edited. Its mutants
live beside it in ``scale_mutants.py``, which ``./noxw -s mutants`` finds by
its name.

Source of the expected values: the formula in ``optax.scale``'s docstring and
source (optax 0.2.6 ``optax/_src/transform.py``: ``updates = step_size * g``
on every leaf, empty state).
"""

import jax.numpy as jnp
import optax
import pytest

from optax_gate.kit.tolerances import EXACT, assert_close
from optax_gate.kit.trees import assert_dtype

pytestmark = pytest.mark.contract(api="optax.scale", guide="team: our training code scales updates by a fixed factor")


@pytest.mark.golden
def test_updates_are_step_size_times_the_gradient() -> None:
    """0.5 * [2, -4] = [1, -2] and 0.5 * [[6]] = [[3]]: halving is exact in float32."""
    tx = optax.scale(0.5)
    grads = {"w": jnp.array([2.0, -4.0]), "b": jnp.array([[6.0]])}
    updates, _ = tx.update(grads, tx.init(grads))
    assert_close(updates["w"], [1.0, -2.0], dtype=jnp.float32, ulps=EXACT, what="updates['w']")
    assert_close(updates["b"], [[3.0]], dtype=jnp.float32, ulps=EXACT, what="updates['b']")


@pytest.mark.acceptance
def test_state_is_empty_and_dtypes_are_kept() -> None:
    """The state holds nothing to checkpoint; a bfloat16 gradient gives a bfloat16 update."""
    tx = optax.scale(0.5)
    grads = {"w": jnp.ones(3, jnp.bfloat16)}
    state = tx.init(grads)
    updates, new_state = tx.update(grads, state)
    assert state == optax.EmptyState() and new_state == optax.EmptyState()
    assert_dtype(updates, jnp.bfloat16, what="updates")
