"""A team's training script (fake; scanned, never run, by tests/meta/team_code/test_usage.py)."""
import optax as ox
from optax import losses


def main(params, grads):
    tx = ox.scale(1e-3)
    grads = ox.clip(grads, 1.0)
    a = losses.loss(params, grads, 2.0)
    b = losses.loss(params, grads, delta=2.0)
    return tx, a, b
