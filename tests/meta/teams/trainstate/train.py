"""A linen team (tests/meta/test_team_run.py) in the idiom of Flax's examples: a
``flax.training.train_state.TrainState`` stepped in a jitted function with
``state.apply_gradients``, which calls the optimizer's update inside Flax;
``adamw`` with a scheduled weight decay.

python train.py STEPS
"""
import sys

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax.training import train_state


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(1)(jnp.tanh(nn.Dense(8)(x)))


def main():
    steps = int(sys.argv[1])
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(16, 4)), jnp.float32)
    y = jnp.asarray(rng.normal(size=(16, 1)), jnp.float32)
    model = MLP()
    params = model.init(jax.random.PRNGKey(0), x)["params"]
    tx = optax.adamw(0.05, weight_decay=optax.linear_schedule(0.0, 0.1, 10))
    state = train_state.TrainState.create(apply_fn=model.apply, params=params, tx=tx)

    @jax.jit
    def train_step(state, x, y):
        def loss_fn(params):
            return optax.l2_loss(state.apply_fn({"params": params}, x), y).mean()

        loss, grads = jax.value_and_grad(loss_fn)(state.params)
        return state.apply_gradients(grads=grads), loss

    for i in range(steps):
        state, loss = train_step(state, x, y)
        print(f"step {i} loss {float(loss):.9g}")


if __name__ == "__main__":
    main()
