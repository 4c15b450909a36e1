"""Flax NNX model with bfloat16 params, gradient accumulation via optax.MultiSteps.

Exercises: nnx.Linear layers created with param_dtype=jnp.bfloat16 (bf16
weights, computations in bf16), nnx.Optimizer(model, optax.MultiSteps(
optax.sgd(0.1, momentum=0.9), every_k_schedule=4), wrt=nnx.Param) so that 4
micro-batch gradients are averaged before each real update, an @nnx.jit
train_step; NumPy data.

Imitates: the Flax NNX training loop (nnx.value_and_grad +
optimizer.update) with Optax's "Gradient accumulation" how-to
(optax.MultiSteps), in the low-memory bf16 setting where accumulation is used.

EXPECTED TRUTH: differs -- born in Optax: optax 0.2.8's MultiSteps
accumulates gradients in float32 by default (new accumulator_dtype=float32)
where 0.2.6 accumulated them in the params' dtype (bfloat16), so the
averaged gradient and every update after the first real step differ
(stdout 'step 7 loss 0.400717467' vs 'step 7 loss 0.400659353'; the final
line reports acc_grads dtype bfloat16 vs float32).  Nothing born in JAX
here (baseline python + optax 0.2.8 reproduces the candidate bit for bit).

python train.py [--out DIR]
"""
import argparse
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx


class Model(nnx.Module):
    def __init__(self, *, rngs: nnx.Rngs):
        kw = dict(param_dtype=jnp.bfloat16, dtype=jnp.bfloat16, rngs=rngs)
        self.fc1 = nnx.Linear(8, 32, **kw)
        self.fc2 = nnx.Linear(32, 1, **kw)

    def __call__(self, x):
        return self.fc2(nnx.relu(self.fc1(x)))[:, 0]


def loss_fn(model, x, y):
    pred = model(x.astype(jnp.bfloat16)).astype(jnp.float32)
    return jnp.mean((pred - y) ** 2)


@nnx.jit
def train_step(model, optimizer, x, y):
    loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
    optimizer.update(model, grads)
    return loss


def flatten(tree, prefix):
    flat = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
        key = prefix + "/" + jax.tree_util.keystr(path, simple=True, separator="/")
        if leaf.dtype == jnp.bfloat16:
            leaf = leaf.astype(jnp.float32)   # lossless; .npz cannot hold bf16
        flat[key.removesuffix("/value")] = np.asarray(leaf)
    return flat


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    x_np = rng.normal(size=(128, 8))
    y_np = np.tanh(x_np @ rng.normal(size=8) * 0.5)
    x = jnp.asarray(x_np, jnp.float32)
    y = jnp.asarray(y_np, jnp.float32)

    model = Model(rngs=nnx.Rngs(0))
    tx = optax.MultiSteps(optax.sgd(0.1, momentum=0.9), every_k_schedule=4)
    optimizer = nnx.Optimizer(model, tx, wrt=nnx.Param)

    for step in range(32):
        i = (step % 8) * 16
        loss = train_step(model, optimizer, x[i:i + 16], y[i:i + 16])
        if step % 4 == 3:
            print(f"step {step} loss {float(loss):.9g}")
    acc = optimizer.opt_state.acc_grads
    print(f"final loss {float(loss_fn(model, x, y)):.9g} "
          f"acc_grads dtype {jax.tree.leaves(acc)[0].dtype}")

    flat = flatten(nnx.state(model, nnx.Param), "model")
    flat.update(flatten(optimizer.opt_state, "opt_state"))
    os.makedirs(args.out, exist_ok=True)
    np.savez(os.path.join(args.out, "params.npz"), **flat)


if __name__ == "__main__":
    main()
