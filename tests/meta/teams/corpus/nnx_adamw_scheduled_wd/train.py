"""Flax NNX regressor trained with AdamW whose weight decay follows a schedule.

Exercises: nnx.Module (nnx.Linear + tanh), nnx.Optimizer(model,
optax.adamw(1e-2, weight_decay=optax.linear_schedule(0.5, 0.0, 10)),
wrt=nnx.Param), an @nnx.jit train_step with nnx.value_and_grad, full-batch
steps on a fixed NumPy data set.

Imitates: the Flax NNX basics / "Getting started" training loop with an
optax.adamw optimizer, with the weight-decay strength annealed by an Optax
schedule (a common recipe for decaying regularisation).

EXPECTED TRUTH: differs -- born in Optax: in optax 0.2.6
add_decayed_weights never advanced the count of a *scheduled* weight decay,
so adamw used weight_decay(0) = 0.5 on every step; 0.2.8 increments it
(0.5, 0.45, ... 0.0).  Step 0-1 losses agree, the step-2 loss differs
(0.764415383 vs 0.764828205) and the final hidden kernel is visibly larger
in 0.2.8.  (jax 0.12's XLA adds 1-ulp noise of its own from step ~7 on.)

python train.py [--out DIR]
"""
import argparse
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx


class Regressor(nnx.Module):
    def __init__(self, din, dhidden, *, rngs: nnx.Rngs):
        self.hidden = nnx.Linear(din, dhidden, rngs=rngs)
        self.out = nnx.Linear(dhidden, 1, rngs=rngs)

    def __call__(self, x):
        return self.out(jnp.tanh(self.hidden(x)))[:, 0]


@nnx.jit
def train_step(model, optimizer, x, y):
    def loss_fn(model):
        return jnp.mean(optax.l2_loss(model(x), y))

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


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
    x_np = rng.normal(size=(64, 8))
    y_np = np.tanh(x_np @ rng.normal(size=8)) + 0.05 * rng.normal(size=64)
    x = jnp.asarray(x_np, jnp.float32)
    y = jnp.asarray(y_np, jnp.float32)

    model = Regressor(8, 32, rngs=nnx.Rngs(0))
    weight_decay = optax.linear_schedule(init_value=0.5, end_value=0.0, transition_steps=10)
    optimizer = nnx.Optimizer(model, optax.adamw(1e-2, weight_decay=weight_decay), wrt=nnx.Param)

    for step in range(20):
        loss = train_step(model, optimizer, x, y)
        print(f"step {step} loss {float(loss):.9g} wd {float(weight_decay(step)):.9g}")
    kernel_norm = jnp.sqrt(jnp.sum(model.hidden.kernel[...] ** 2))
    print(f"final loss {float(loss):.9g} hidden_kernel_norm {float(kernel_norm):.9g}")

    flat = flatten(nnx.state(model, nnx.Param), "model")
    flat.update(flatten(optimizer.opt_state, "opt_state"))
    os.makedirs(args.out, exist_ok=True)
    np.savez(os.path.join(args.out, "params.npz"), **flat)


if __name__ == "__main__":
    main()
