"""Flax NNX model trained eagerly: nnx.value_and_grad and optimizer.update, no jit.

Exercises: an nnx.Module (nnx.Linear -> nnx.tanh -> nnx.Linear), nnx.Rngs(0)
init, nnx.Optimizer(model, optax.sgd(0.05, momentum=0.9), wrt=nnx.Param),
nnx.value_and_grad and optimizer.update(model, grads) called op by op from a
Python loop (no nnx.jit / jax.jit anywhere), as when debugging a model in a
notebook.

Imitates: the Flax NNX "Getting started" / nnx basics snippets that show
`grads = nnx.grad(loss_fn)(model)` and `optimizer.update(model, grads)`
executed directly, without a jitted train_step.

EXPECTED TRUTH: same -- eager nnx.value_and_grad / optimizer.update with SGD
momentum on this 3-64-1 tanh MLP are bit-identical between optax 0.2.6/jax
0.11.2 and optax 0.2.8/jax 0.12.0.1.  (Fragile: with a hidden width of 24 or
32 jaxlib 0.12's YNNPACK matmuls already change the step-0 loss.)

python train.py [--out DIR]
"""
import argparse
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx


class Net(nnx.Module):
    def __init__(self, *, rngs: nnx.Rngs):
        self.fc1 = nnx.Linear(3, 64, rngs=rngs)
        self.fc2 = nnx.Linear(64, 1, rngs=rngs)

    def __call__(self, x):
        return self.fc2(nnx.tanh(self.fc1(x)))[:, 0]


def loss_fn(model, x, y):
    return jnp.mean((model(x) - y) ** 2)


def flatten(tree, prefix):
    flat = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
        key = prefix + "/" + jax.tree_util.keystr(path, simple=True, separator="/")
        flat[key.removesuffix("/value")] = np.asarray(leaf)
    return flat


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    x_np = rng.uniform(-2, 2, size=(64, 3))
    y_np = np.sin(x_np[:, 0]) + 0.5 * x_np[:, 1] - 0.25 * x_np[:, 2] ** 2
    x = jnp.asarray(x_np, jnp.float32)
    y = jnp.asarray(y_np, jnp.float32)

    model = Net(rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.sgd(0.05, momentum=0.9), wrt=nnx.Param)
    for step in range(20):
        loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
        optimizer.update(model, grads)
        if step % 2 == 0:
            print(f"step {step} loss {float(loss):.9g}")
    print(f"final loss {float(loss_fn(model, x, y)):.9g}")

    flat = flatten(nnx.state(model, nnx.Param), "model")
    flat.update(flatten(optimizer.opt_state, "opt_state"))
    os.makedirs(args.out, exist_ok=True)
    np.savez(os.path.join(args.out, "params.npz"), **flat)


if __name__ == "__main__":
    main()
