"""A team in the idiom of Flax's NNX examples (tests/meta/team_run/test_recorder_nnx.py):
an ``nnx.Module`` MLP (``nnx.Linear``, ``nnx.LayerNorm``, ``nnx.Dropout``,
``nnx.Rngs``), ``nnx.Optimizer`` over AdamW, and an ``nnx.jit`` train step
using ``nnx.value_and_grad``; the batch is a TrainState-like dataclass
PyTree whose static fields hold a function and a string. Data from NumPy.

python train.py [--steps N] [--out params.npz] [--eager] [--random]
"""
import dataclasses
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx


@dataclasses.dataclass(frozen=True)
class Batch:
    x: jax.Array
    y: jax.Array
    loss: object = dataclasses.field(default=None, metadata={"static": True})
    name: str = dataclasses.field(default="train", metadata={"static": True})


jax.tree_util.register_dataclass(Batch)


def squared(pred, y):
    return jnp.mean((pred - y) ** 2)


class MLP(nnx.Module):
    def __init__(self, rngs: nnx.Rngs):
        self.l1 = nnx.Linear(4, 8, rngs=rngs)
        self.ln = nnx.LayerNorm(8, rngs=rngs)
        self.drop = nnx.Dropout(0.1, rngs=rngs)
        self.l2 = nnx.Linear(8, 1, rngs=rngs)

    def __call__(self, x):
        return self.l2(self.drop(jnp.tanh(self.ln(self.l1(x)))))


def train_step(model, optimizer, batch):
    def loss_fn(model):
        return batch.loss(model(batch.x), batch.y)
    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss


def main():
    steps = int(sys.argv[sys.argv.index("--steps") + 1]) if "--steps" in sys.argv else 5
    seed = time.time_ns() % 100_000 if "--random" in sys.argv else 0  # a run that is not deterministic
    rng = np.random.default_rng(seed)
    x = jnp.asarray(rng.normal(size=(16, 4)), jnp.float32)
    batch = Batch(x, jnp.sum(x, axis=1, keepdims=True), loss=squared)
    model = MLP(nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adamw(1e-2, weight_decay=1e-4), wrt=nnx.Param)
    step = train_step if "--eager" in sys.argv else nnx.jit(train_step)
    for i in range(steps):
        loss = step(model, optimizer, batch)
        print(f"step {i} loss {float(loss):.9g}")
    if "--out" in sys.argv:
        flat = {"/".join(map(str, path)): np.asarray(v) for path, v in nnx.state(model, nnx.Param).flat_state()}
        np.savez(sys.argv[sys.argv.index("--out") + 1], **flat)


if __name__ == "__main__":
    main()
