"""A team whose run carries rounding far (tests/meta/team_run/test_team_run.py): a
small tanh network fitted with Adam in a jitted step until its loss is near
zero, the loss printed each step and the params saved; a 1-ULP change of one
operation moves the late losses by much more than the ULP budget, as a new
JAX's rounding does.

python train.py STEPS [--out FILE.npz]
"""
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax


def loss_fn(params, x, y):
    hidden = jnp.tanh(x @ params["w1"] + params["b1"])
    return optax.l2_loss(hidden @ params["w2"], y).mean()


def main():
    steps = int(sys.argv[1])
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(16, 4)), jnp.float32)
    y = jnp.asarray(np.tanh(rng.normal(size=(16, 1))), jnp.float32)
    params = {
        "w1": jnp.asarray(rng.normal(size=(4, 16)) * 0.5, jnp.float32),
        "b1": jnp.zeros(16, jnp.float32),
        "w2": jnp.asarray(rng.normal(size=(16, 1)) * 0.5, jnp.float32),
    }
    tx = optax.adam(0.1)
    state = tx.init(params)

    @jax.jit
    def step(params, state):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        updates, state = tx.update(grads, state, params)
        return optax.apply_updates(params, updates), state, loss

    for i in range(steps):
        params, state, loss = step(params, state)
        print(f"step {i} loss {float(loss):.9g}")
    if "--out" in sys.argv:
        np.savez(sys.argv[sys.argv.index("--out") + 1], **{k: np.asarray(v) for k, v in params.items()})


if __name__ == "__main__":
    main()
