"""Flax NNX classifier with a clipped AdamW and a cosine schedule, checkpointed with Orbax.

Exercises: an nnx.Module of nnx.Linear layers (init from nnx.Rngs(0)),
nnx.Optimizer(model, optax.chain(optax.clip_by_global_norm(1.0),
optax.adamw(optax.warmup_cosine_decay_schedule(...), weight_decay=1e-4)),
wrt=nnx.Param), an @nnx.jit train_step with nnx.value_and_grad and
optimizer.update(model, grads), softmax cross-entropy with integer labels, and
an Orbax CheckpointManager saving the model's state (nnx.split) every 10 steps,
keeping the last 2; the loss printed every 5 steps.

Imitates: the Flax NNX "Save and load checkpoints" guide (orbax
StandardCheckpointer of nnx.split's state) inside the NNX MNIST tutorial's
training loop.

EXPECTED TRUTH: differs -- born in JAX, not Optax: from step 15 the printed
loss moves in its last digits (0.872993708 vs 0.872993648) between optax
0.2.6/jax 0.11.2 and optax 0.2.8/jax 0.12.0.1, and so do the params and the
Orbax checkpoints; optax 0.2.8 on jax 0.11.2 gives the baseline's outputs bit
for bit and optax 0.2.6 on jax 0.12.0.1 the candidate's (corpus_truth.py
--attribute --four, 2026-12-06).

python train.py [--out DIR]
"""
import argparse
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax
import orbax.checkpoint as ocp
from flax import nnx


class Classifier(nnx.Module):
    def __init__(self, din, dmid, classes, *, rngs: nnx.Rngs):
        self.hidden = nnx.Linear(din, dmid, rngs=rngs)
        self.head = nnx.Linear(dmid, classes, rngs=rngs)

    def __call__(self, x):
        return self.head(nnx.gelu(self.hidden(x)))


def loss_fn(model, x, labels):
    return optax.softmax_cross_entropy_with_integer_labels(model(x), labels).mean()


@nnx.jit
def train_step(model, optimizer, x, labels):
    loss, grads = nnx.value_and_grad(loss_fn)(model, x, labels)
    optimizer.update(model, grads)
    return loss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(64, 8)), jnp.float32)
    labels = jnp.asarray((x[:, 0] + x[:, 1] > 0).astype(np.int32) + (x[:, 2] > 1).astype(np.int32))
    model = Classifier(8, 32, 3, rngs=nnx.Rngs(0))
    schedule = optax.warmup_cosine_decay_schedule(0.0, 3e-3, warmup_steps=5, decay_steps=30)
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(schedule, weight_decay=1e-4))
    optimizer = nnx.Optimizer(model, tx, wrt=nnx.Param)
    manager = ocp.CheckpointManager(os.path.abspath(os.path.join(args.out, "checkpoints")), options=ocp.CheckpointManagerOptions(max_to_keep=2))
    for step in range(1, 31):
        loss = train_step(model, optimizer, x, labels)
        if step % 5 == 0:
            print(f"step {step} loss {float(loss):.9g}")
        if step % 10 == 0:
            _, state = nnx.split(model)
            manager.save(step, args=ocp.args.StandardSave(state))
    manager.wait_until_finished()
    manager.close()
    _, state = nnx.split(model)
    flat = {jax.tree_util.keystr(p, simple=True, separator="/"): np.asarray(v) for p, v in jax.tree_util.tree_flatten_with_path(nnx.to_pure_dict(state))[0]}
    np.savez(os.path.join(args.out, "params.npz"), **flat)


if __name__ == "__main__":
    main()
