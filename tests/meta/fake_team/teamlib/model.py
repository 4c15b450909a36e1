"""A module of the team's package (fake; scanned, never imported)."""
import chex
import optax
from optax import gone


def build(x):
    return optax.swap(x, 1), optax.swap(a=x, b=1), gone(x)


def step(state, grads):
    return optax.State(0, mu=None).step(grads), optax.State.step(state, grads, 0.5)
