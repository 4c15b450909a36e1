"""A small float32 classifier: clipped Adam, a warmup-cosine schedule,
integer-label softmax cross-entropy; a jitted training step.

python train.py --steps 3 [--out params.npz]
"""
import argparse

import jax
import jax.numpy as jnp
import numpy as np
import optax


def init_params(key, n_in=8, n_hidden=16, n_classes=4):
    k1, k2 = jax.random.split(key)
    return {"w1": jax.random.normal(k1, (n_in, n_hidden), jnp.float32) * 0.3, "b1": jnp.zeros(n_hidden, jnp.float32),
            "w2": jax.random.normal(k2, (n_hidden, n_classes), jnp.float32) * 0.3, "b2": jnp.zeros(n_classes, jnp.float32)}


def loss_fn(params, x, y):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    logits = h @ params["w2"] + params["b2"]
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()


def make_optimizer(steps):
    schedule = optax.warmup_cosine_decay_schedule(0.0, 1e-2, warmup_steps=2, decay_steps=max(steps, 3))
    return optax.chain(optax.clip_by_global_norm(1.0), optax.adam(schedule))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(32, 8)), jnp.float32)
    y = jnp.asarray(rng.integers(0, 4, size=32), jnp.int32)
    params = init_params(jax.random.PRNGKey(0))
    tx = make_optimizer(args.steps)
    opt_state = tx.init(params)

    @jax.jit
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    for i in range(args.steps):
        params, opt_state, loss = step(params, opt_state, x, y)
        print(f"step {i}: loss {float(loss):.9g}")
    if args.out:
        np.savez(args.out, **{k: np.asarray(v) for k, v in params.items()})


if __name__ == "__main__":
    main()
