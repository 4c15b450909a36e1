"""Flax NNX model trained with the step loop inside nnx.scan (under nnx.jit).

Exercises: an nnx.Module (two nnx.Linear layers, nnx.relu), nnx.Optimizer
with optax.adam(5e-3), a whole epoch run as nnx.scan over the stacked
mini-batches with the (model, optimizer) pair as nnx.Carry, wrapped in
@nnx.jit; three epochs; per-step losses returned as the scan output.

Imitates: the Flax NNX transforms guide (nnx.scan with nnx.Carry) applied to
the NNX training step from the Flax "MNIST tutorial" (nnx.value_and_grad +
optimizer.update), i.e. "scan over the epoch to cut Python overhead".

EXPECTED TRUTH: differs -- born in JAX, not Optax: jaxlib 0.12.0.1's XLA:CPU
compiles the fused elementwise/loss code of the scanned step without some
value-changing algebraic rewrites that jaxlib 0.11.2 applied, so a few
entries drift by 1 ulp and the step-19 loss differs in the 9th digit
(0.213494301 vs 0.213494316).  Not the YNNPACK dot change (still differs with
YNN fusions switched off), and not Optax (baseline python + optax 0.2.8 is
bit-identical).

python train.py [--out DIR]
"""
import argparse
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx


class MLP(nnx.Module):
    def __init__(self, din, dhidden, dout, *, rngs: nnx.Rngs):
        self.fc1 = nnx.Linear(din, dhidden, rngs=rngs)
        self.fc2 = nnx.Linear(dhidden, dout, rngs=rngs)

    def __call__(self, x):
        return self.fc2(nnx.relu(self.fc1(x)))


def loss_fn(model, x, y):
    return jnp.mean((model(x)[:, 0] - y) ** 2)


@nnx.jit
def train_epoch(model, optimizer, xs, ys):
    @nnx.scan(in_axes=(nnx.Carry, 0, 0), out_axes=(nnx.Carry, 0))
    def body(carry, x, y):
        model, optimizer = carry
        loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
        optimizer.update(model, grads)
        return (model, optimizer), loss

    _, losses = body((model, optimizer), xs, ys)
    return losses


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
    x_np = rng.normal(size=(160, 6))
    y_np = np.cos(x_np[:, 0]) * x_np[:, 1] + 0.1 * rng.normal(size=160)
    xs = jnp.asarray(x_np.reshape(10, 16, 6), jnp.float32)
    ys = jnp.asarray(y_np.reshape(10, 16), jnp.float32)

    model = MLP(6, 64, 1, rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(5e-3), wrt=nnx.Param)
    for epoch in range(3):
        losses = train_epoch(model, optimizer, xs, ys)
        for i in range(0, 10, 3):
            print(f"step {epoch * 10 + i} loss {float(losses[i]):.9g}")
    print(f"final step {int(optimizer.step[...])} loss {float(losses[-1]):.9g}")

    flat = flatten(nnx.state(model, nnx.Param), "model")
    flat.update(flatten(optimizer.opt_state, "opt_state"))
    os.makedirs(args.out, exist_ok=True)
    np.savez(os.path.join(args.out, "params.npz"), **flat)


if __name__ == "__main__":
    main()
