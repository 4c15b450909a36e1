"""Flax NNX MLP regressor trained with Adam through nnx.Optimizer.

Exercises: nnx.Module built from nnx.Linear / nnx.LayerNorm / nnx.Dropout with
nnx.Rngs(0) (init and dropout masks come from jax.random), nnx.Optimizer(model,
optax.adam(1e-3), wrt=nnx.Param), an @nnx.jit train_step using
nnx.value_and_grad and optimizer.update(model, grads), model.train() /
model.eval() switching Dropout, an @nnx.jit eval_step, squared-error loss,
mini-batches over three epochs.

Imitates: the Flax NNX "MNIST tutorial" / nnx basics example (MLP + Dropout,
train_step with nnx.value_and_grad and optimizer.update), with a regression
head.

EXPECTED TRUTH: differs -- born in JAX, not Optax: on the machine of
2026-12-06 the output bias (params.npz model/linear2/bias) is 1 ulp apart
between optax 0.2.6/jax 0.11.2 and optax 0.2.8/jax 0.12.0.1, every logged loss
the same; optax 0.2.6 on jax 0.12.0.1 gives the candidate's bias and optax 0.2.8
on jax 0.11.2 the baseline's (corpus_truth.py --attribute --four). On the
machine of 2026-12-02 everything was bit-identical: jaxlib 0.12's XLA:CPU
rounds a few fused ops differently (see nnx_mlp_classifier), which this
16-64-1 configuration hits on some CPUs only.

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
    def __init__(self, din, dmid, dout, *, rngs: nnx.Rngs):
        self.linear1 = nnx.Linear(din, dmid, rngs=rngs)
        self.norm = nnx.LayerNorm(dmid, rngs=rngs)
        self.dropout = nnx.Dropout(0.2, rngs=rngs)
        self.linear2 = nnx.Linear(dmid, dout, rngs=rngs)

    def __call__(self, x):
        x = nnx.relu(self.dropout(self.norm(self.linear1(x))))
        return self.linear2(x)


def loss_fn(model, x, y):
    pred = model(x)[:, 0]
    return optax.squared_error(pred, y).mean()


@nnx.jit
def train_step(model, optimizer, x, y):
    loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
    optimizer.update(model, grads)
    return loss


@nnx.jit
def eval_step(model, x, y):
    pred = model(x)[:, 0]
    loss = optax.squared_error(pred, y).mean()
    return loss, jnp.abs(pred - y).max()


def flatten(tree, prefix):
    flat = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
        key = prefix + "/" + jax.tree_util.keystr(path, simple=True, separator="/")
        key = key.removesuffix("/value")
        if jnp.issubdtype(leaf.dtype, jax.dtypes.prng_key):
            leaf = jax.random.key_data(leaf)
        flat[key] = np.asarray(leaf)
    return flat


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    x_np = rng.normal(size=(256, 16))
    w_true = rng.normal(size=16)
    y_np = np.sin(x_np @ w_true) + 0.1 * rng.normal(size=256)
    x_all = jnp.asarray(x_np, jnp.float32)
    y_all = jnp.asarray(y_np, jnp.float32)

    model = MLP(16, 64, 1, rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)

    step = 0
    batch = 32
    for epoch in range(3):
        model.train()
        for i in range(0, 256, batch):
            loss = train_step(model, optimizer, x_all[i:i + batch], y_all[i:i + batch])
            if step % 4 == 0:
                print(f"step {step} loss {float(loss):.9g}")
            step += 1
        model.eval()
        eval_loss, acc = eval_step(model, x_all, y_all)
        print(f"epoch {epoch} eval_loss {float(eval_loss):.9g} max_err {float(acc):.9g}")

    flat = flatten(nnx.state(model), "model")
    flat.update(flatten(optimizer.opt_state, "opt_state"))
    os.makedirs(args.out, exist_ok=True)
    np.savez(os.path.join(args.out, "params.npz"), **flat)
    print(f"final step {step} eval_loss {float(eval_loss):.9g}")


if __name__ == "__main__":
    main()
