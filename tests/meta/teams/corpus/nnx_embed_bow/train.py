"""Flax NNX bag-of-embeddings text classifier (nnx.Embed default init).

Exercises: nnx.Embed(num_embeddings, features, rngs=nnx.Rngs(0)) with its
default embedding_init (variance_scaling(1.0, "fan_in", "normal")), mean
pooling, an nnx.Linear head, nnx.Optimizer(model, optax.adamw(1e-2),
wrt=nnx.Param), an @nnx.jit train_step with nnx.value_and_grad; token ids
from NumPy.

Imitates: the Flax NNX text examples (nnx.Embed + pooling + Linear, e.g. the
sentiment / "bag of words" classifier in the Flax NNX tutorials).

EXPECTED TRUTH: differs -- born in JAX, not Optax: nnx.Embed's default
embedding_init is variance_scaling(1.0, "fan_in", "normal"), which jax 0.12
reimplemented as sqrt(2)*stddev*erf_inv(uniform); the initial table differs
by ~1 ulp (stdout line 1: -0.160219297 vs -0.160219282) and training
follows.  adamw is unchanged by optax 0.2.8.

python train.py [--out DIR]
"""
import argparse
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

VOCAB, DIM, CLASSES = 64, 32, 2


class BagOfEmbeddings(nnx.Module):
    def __init__(self, *, rngs: nnx.Rngs):
        self.embed = nnx.Embed(VOCAB, DIM, rngs=rngs)
        self.head = nnx.Linear(DIM, CLASSES, rngs=rngs)

    def __call__(self, tokens):
        return self.head(self.embed(tokens).mean(axis=1))


@nnx.jit
def train_step(model, optimizer, tokens, labels):
    def loss_fn(model):
        logits = model(tokens)
        return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

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
    tokens_np = rng.integers(0, VOCAB, size=(128, 8))
    labels_np = (tokens_np < VOCAB // 2).sum(axis=1) > 4
    tokens = jnp.asarray(tokens_np, jnp.int32)
    labels = jnp.asarray(labels_np, jnp.int32)

    model = BagOfEmbeddings(rngs=nnx.Rngs(0))
    first_row = np.asarray(model.embed.embedding[...][0, :3])
    print(f"init embedding[0,:3] {[float(f'{v:.9g}') for v in first_row]}")
    optimizer = nnx.Optimizer(model, optax.adamw(1e-2), wrt=nnx.Param)
    for step in range(20):
        loss = train_step(model, optimizer, tokens, labels)
        if step % 4 == 0:
            print(f"step {step} loss {float(loss):.9g}")
    print(f"final loss {float(loss):.9g}")

    flat = flatten(nnx.state(model, nnx.Param), "model")
    os.makedirs(args.out, exist_ok=True)
    np.savez(os.path.join(args.out, "params.npz"), **flat)


if __name__ == "__main__":
    main()
