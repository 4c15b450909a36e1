"""Flax Linen TrainState with a scheduled AdamW weight decay, checkpointed with msgpack.

Exercises: a flax.linen MLP, train_state.TrainState.create(..., tx=optax.adamw(
1e-3, weight_decay=optax.linear_schedule(0.0, 1e-2, 20))), a @jax.jit step
with state.apply_gradients (Optax's update is called inside Flax), the loss
printed each step, the params written with flax.serialization.to_bytes (a
msgpack checkpoint) and np.savez.

Imitates: the Flax Linen examples' TrainState loop, and checkpointing with
flax.serialization as the Flax docs show ("Save and load checkpoints").

EXPECTED TRUTH: differs -- born in Optax: optax 0.2.8 advances the weight
decay schedule's count (0.2.6 kept it at 0, so the decay stayed 0.0): optax
0.2.8 on jax 0.11.2 moves the loss from step 2 on, and so does it on jax
0.12.0.1 against optax 0.2.6 there; jaxlib 0.12 also rounds a matmul
otherwise (step 1's loss 0.199705735 vs 0.199705765 with either optax).
Established with the four environments (tests/meta/corpus_truth.py
--attribute --four).

python train.py [--out DIR]
"""
import argparse
import os

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import serialization
from flax.training import train_state


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(1)(nn.tanh(nn.Dense(16)(x)))


@jax.jit
def train_step(state, x, y):
    def loss_fn(params):
        return optax.l2_loss(state.apply_fn({"params": params}, x), y).mean()

    loss, grads = jax.value_and_grad(loss_fn)(state.params)
    return state.apply_gradients(grads=grads), loss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(32, 4)), jnp.float32)
    y = jnp.asarray(np.sin(rng.normal(size=(32, 1))), jnp.float32)
    model = MLP()
    params = model.init(jax.random.PRNGKey(0), x)["params"]
    tx = optax.adamw(1e-3, weight_decay=optax.linear_schedule(0.0, 1e-2, 20))
    state = train_state.TrainState.create(apply_fn=model.apply, params=params, tx=tx)
    for step in range(30):
        state, loss = train_step(state, x, y)
        print(f"step {step} loss {float(loss):.9g}")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "params.msgpack"), "wb") as f:
        f.write(serialization.to_bytes(state.params))
    flat = {jax.tree_util.keystr(p, simple=True, separator="/"): np.asarray(v) for p, v in jax.tree_util.tree_flatten_with_path(state.params)[0]}
    np.savez(os.path.join(args.out, "params.npz"), **flat)


if __name__ == "__main__":
    main()
