"""A stack of NNX blocks made with nnx.vmap and run with nnx.scan over nnx.remat.

Exercises: an nnx.Module whose layers are created by nnx.vmap over rngs
(nnx.split_rngs), applied with nnx.scan over the stacked layers and
nnx.remat (gradient checkpointing), nnx.Optimizer(model, optax.adamw(3e-3),
wrt=nnx.Param) stepped in @nnx.jit, the loss printed per step and the params
saved to npz.

Imitates: the Flax NNX guide "Scan over layers" (nnx.vmap to create, nnx.scan
to apply, nnx.remat to save memory) that big-model code bases follow.

EXPECTED TRUTH: differs -- born in JAX, not Optax: the layers' float32 matmuls
are rounded otherwise by jaxlib 0.12; optax 0.2.8 on jax 0.11.2 is
bit-identical to the baseline (tests/meta/corpus_truth.py --attribute --four).

python train.py [--out DIR]
"""
import argparse
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

DEPTH, WIDTH = 4, 16


class Block(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.linear = nnx.Linear(WIDTH, WIDTH, rngs=rngs)

    def __call__(self, x):
        return x + jnp.tanh(self.linear(x))


class Model(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        @nnx.split_rngs(splits=DEPTH)
        @nnx.vmap(in_axes=(0,), out_axes=0)
        def create(rngs: nnx.Rngs):
            return Block(rngs)

        self.blocks = create(rngs)
        self.head = nnx.Linear(WIDTH, 1, rngs=rngs)

    def __call__(self, x):
        @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
        @nnx.remat
        def forward(x, block):
            return block(x)

        return self.head(forward(x, self.blocks))


@nnx.jit
def train_step(model, optimizer, x, y):
    def loss_fn(model):
        return optax.l2_loss(model(x), y).mean()

    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(32, WIDTH)), jnp.float32)
    y = jnp.asarray(np.sin(rng.normal(size=(32, 1))), jnp.float32)
    model = Model(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adamw(3e-3), wrt=nnx.Param)
    for step in range(20):
        loss = train_step(model, optimizer, x, y)
        print(f"step {step} loss {float(loss):.9g}")
    os.makedirs(args.out, exist_ok=True)
    state = nnx.state(model, nnx.Param)
    flat = {jax.tree_util.keystr(p, simple=True, separator="/"): np.asarray(v) for p, v in jax.tree_util.tree_flatten_with_path(state)[0]}
    np.savez(os.path.join(args.out, "params.npz"), **flat)


if __name__ == "__main__":
    main()
