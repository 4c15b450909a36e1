"""A tiny team (tests/meta/team_run/test_team_run.py): SGD on a quadratic, the
optimizer built eagerly and a jitted training step; an Optax loss inside it.

python train.py STEPS [--out FILE.npy] [--random] [--eager]
"""
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax


def loss_fn(params, x):
    return optax.l2_loss(params["w"] * x, jnp.ones_like(x)).sum()


def main():
    steps = int(sys.argv[1])
    seed = time.time_ns() % 100_000 if "--random" in sys.argv else 0  # a run that is not deterministic
    x = jnp.asarray(np.random.default_rng(seed).normal(size=4), jnp.float32)
    params = {"w": jnp.ones(4, jnp.float32)}
    tx = optax.sgd(0.1)
    state = tx.init(params)

    def step(params, state):
        grads = jax.grad(loss_fn)(params, x)
        updates, state = tx.update(grads, state, params)
        return optax.apply_updates(params, updates), state

    step = step if "--eager" in sys.argv else jax.jit(step)
    for _ in range(steps):
        params, state = step(params, state)
    if "--out" in sys.argv:
        np.save(sys.argv[sys.argv.index("--out") + 1], np.asarray(params["w"]))
    print("w", np.asarray(params["w"]).tolist())


if __name__ == "__main__":
    main()
