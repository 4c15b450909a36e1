"""Flax Linen model + flax.training.train_state.TrainState, jitted step.

Exercises: a flax.linen Module (nn.Dense layers) initialised with
model.init(jax.random.PRNGKey(0), ...), train_state.TrainState.create(
apply_fn=model.apply, params=params, tx=optax.adamw(...)) holding params and
opt_state in one flax.struct dataclass, a @jax.jit train_step calling
jax.value_and_grad and state.apply_gradients(grads=grads), an evaluation
metric, softmax cross-entropy on one-hot labels (optax.softmax_cross_entropy).

Imitates: the Flax Linen MNIST example / "Getting started" (create_train_state,
train_step with state.apply_gradients) that countless code bases copy.

EXPECTED TRUTH: differs -- born in JAX, not Optax: the Dense(4) output
kernel is initialised by lecun_normal, i.e. jax.random.truncated_normal(key,
-2, 2, (32, 4)) with Python-int bounds, which in jax 0.12.0.1 returns 5/128
samples 1 ulp apart (only for some shapes with a 3-4 wide last axis); the
YNNPACK matmul change adds more, so the epoch-0 loss differs (1.47798777 vs
1.47798765).  adamw / apply_gradients are unchanged by optax 0.2.8.

python train.py [--out DIR]
"""
import argparse
import os

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax.training import train_state

NUM_CLASSES = 4


class MLP(nn.Module):
    hidden: int = 32

    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(self.hidden)(x))
        x = nn.relu(nn.Dense(self.hidden)(x))
        return nn.Dense(NUM_CLASSES)(x)


def create_train_state(rng_key, learning_rate):
    model = MLP()
    params = model.init(rng_key, jnp.ones((1, 10), jnp.float32))["params"]
    tx = optax.adamw(learning_rate, weight_decay=1e-3)
    return train_state.TrainState.create(apply_fn=model.apply, params=params, tx=tx)


@jax.jit
def train_step(state, x, labels):
    def loss_fn(params):
        logits = state.apply_fn({"params": params}, x)
        one_hot = jax.nn.one_hot(labels, NUM_CLASSES)
        return optax.softmax_cross_entropy(logits, one_hot).mean(), logits

    (loss, logits), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
    state = state.apply_gradients(grads=grads)
    accuracy = jnp.mean(jnp.argmax(logits, -1) == labels)
    return state, loss, accuracy


def flatten(tree, prefix):
    flat = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
        flat[prefix + "/" + jax.tree_util.keystr(path, simple=True, separator="/")] = np.asarray(leaf)
    return flat


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    centers = rng.normal(size=(NUM_CLASSES, 10)) * 1.5
    labels_np = rng.integers(0, NUM_CLASSES, size=240)
    x_all = jnp.asarray(centers[labels_np] + rng.normal(size=(240, 10)), jnp.float32)
    y_all = jnp.asarray(labels_np, jnp.int32)

    state = create_train_state(jax.random.PRNGKey(0), learning_rate=3e-3)
    for epoch in range(3):
        for i in range(0, 240, 40):
            state, loss, acc = train_step(state, x_all[i:i + 40], y_all[i:i + 40])
        print(f"epoch {epoch} step {int(state.step)} loss {float(loss):.9g} accuracy {float(acc):.9g}")
    print(f"final step {int(state.step)} loss {float(loss):.9g}")

    flat = flatten(state.params, "params")
    flat.update(flatten(state.opt_state, "opt_state"))
    os.makedirs(args.out, exist_ok=True)
    np.savez(os.path.join(args.out, "params.npz"), **flat)


if __name__ == "__main__":
    main()
