"""Flax NNX MLP classifier (10 classes) trained with Adam through nnx.Optimizer.

Exercises: nnx.Module built from nnx.Linear / nnx.LayerNorm / nnx.Dropout with
nnx.Rngs(0) (init and dropout masks come from jax.random), nnx.Optimizer(model,
optax.adam(1e-3), wrt=nnx.Param), an @nnx.jit train_step using
nnx.value_and_grad and optimizer.update(model, grads), integer-label softmax
cross-entropy, model.train() / model.eval(), mini-batches over a few epochs.

Imitates: the Flax NNX "MNIST tutorial" (MLP + Dropout, 10 classes,
train_step with nnx.value_and_grad and optimizer.update).

EXPECTED TRUTH: differs -- born in JAX, not Optax: jaxlib 0.12.0.1's XLA:CPU
runs small f32 matmuls through a newer YNNPACK ("ynn_fusion") whose kernels
round differently for narrow outputs (here the 32x32 @ 32x10 logits layer and
its gradients), so params and Adam moments end up 1-50 ulp apart (first:
model/linear1/bias) although every printed loss agrees to 9 digits.  With
YNN fusions switched off in both environments the runs are bit-identical,
and baseline python + optax 0.2.8 is bit-identical to optax 0.2.6.

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
    logits = model(x)
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()


@nnx.jit
def train_step(model, optimizer, x, y):
    loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
    optimizer.update(model, grads)
    return loss


@nnx.jit
def eval_step(model, x, y):
    logits = model(x)
    loss = optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
    return loss, (logits.argmax(-1) == y).mean()


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
    centers = rng.normal(size=(10, 16)) * 2.0
    labels = rng.integers(0, 10, size=256)
    x_all = jnp.asarray(centers[labels] + rng.normal(size=(256, 16)), jnp.float32)
    y_all = jnp.asarray(labels, jnp.int32)

    model = MLP(16, 32, 10, rngs=nnx.Rngs(0))
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
        print(f"epoch {epoch} eval_loss {float(eval_loss):.9g} accuracy {float(acc):.9g}")

    flat = flatten(nnx.state(model), "model")
    flat.update(flatten(optimizer.opt_state, "opt_state"))
    os.makedirs(args.out, exist_ok=True)
    np.savez(os.path.join(args.out, "params.npz"), **flat)
    print(f"final step {step} eval_loss {float(eval_loss):.9g}")


if __name__ == "__main__":
    main()
