"""inject_hyperparams(adam) over a mixed-dtype params tree (bf16 embedding, f32 head).

Exercises: a bag-of-tokens classifier whose embedding table is stored in
bfloat16 (to save memory) while the dense head stays float32, optax
.inject_hyperparams(optax.adam)(learning_rate=3e-3) with no explicit
hyperparam_dtype, the injected learning rate read back from
opt_state.hyperparams for the log, a @jax.jit step; NumPy data and init.

Imitates: mixed-precision recipes that keep big embedding tables in bf16 and
Optax's "inject_hyperparams" how-to (log / change the LR in the state).

EXPECTED TRUTH: differs -- born in Optax: optax 0.2.6's inject_hyperparams
casts every float hyperparameter to the dtype of the *first* leaf (here the
bf16 embedding), so b2=0.999 becomes 1.0 in bf16, Adam's bias correction
divides by 1-b2**t = 0 and the loss is NaN from step 3; learning_rate is
logged as 0.00300598145 (bf16).  optax 0.2.8 uses the highest dtype in the
tree (float32): 'injected learning_rate 0.00300000003 dtype float32' and a
normal run.  (jax 0.12 adds 1-ulp noise in the f32 head as well.)

python train.py [--out DIR]
"""
import argparse
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax

VOCAB, DIM, CLASSES, SEQ = 50, 16, 3, 6
optimizer = optax.inject_hyperparams(optax.adam)(learning_rate=3e-3)


def loss_fn(params, tokens, labels):
    emb = params["embedding"][tokens].astype(jnp.float32)   # (B, SEQ, DIM)
    pooled = emb.mean(axis=1)
    logits = pooled @ params["head"]["w"] + params["head"]["b"]
    return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()


@jax.jit
def train_step(params, opt_state, tokens, labels):
    loss, grads = jax.value_and_grad(loss_fn)(params, tokens, labels)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    tokens = jnp.asarray(rng.integers(0, VOCAB, size=(120, SEQ)), jnp.int32)
    labels = jnp.asarray(np.asarray(tokens).sum(axis=1) % CLASSES, jnp.int32)
    params = {
        "embedding": jnp.asarray(rng.normal(size=(VOCAB, DIM)), jnp.bfloat16),
        "head": {
            "w": jnp.asarray(rng.normal(size=(DIM, CLASSES)) * 0.25, jnp.float32),
            "b": jnp.zeros((CLASSES,), jnp.float32),
        },
    }
    opt_state = optimizer.init(params)
    lr = opt_state.hyperparams["learning_rate"]
    print(f"injected learning_rate {float(lr):.9g} dtype {lr.dtype}")

    for step in range(30):
        params, opt_state, loss = train_step(params, opt_state, tokens, labels)
        if step % 3 == 0:
            print(f"step {step} loss {float(loss):.9g}")
    print(f"final loss {float(loss_fn(params, tokens, labels)):.9g}")

    flat = {
        "params/embedding": np.asarray(params["embedding"].astype(jnp.float32)),
        "params/head/w": np.asarray(params["head"]["w"]),
        "params/head/b": np.asarray(params["head"]["b"]),
        "hyperparams/learning_rate": np.asarray(opt_state.hyperparams["learning_rate"].astype(jnp.float32)),
    }
    os.makedirs(args.out, exist_ok=True)
    np.savez(os.path.join(args.out, "params.npz"), **flat)


if __name__ == "__main__":
    main()
