"""A small mixed-precision regressor: bfloat16 params, gradient accumulation
with MultiSteps over AdamW (weight decay 0.1), a Huber loss (delta given
positionally); a jitted training step.

python train.py --steps 3 [--out params.npz]
"""
import argparse

import jax
import jax.numpy as jnp
import numpy as np
import optax


def init_params(key):
    return {"w": (jax.random.normal(key, (8, 2)) * 0.3).astype(jnp.bfloat16), "b": jnp.zeros(2, jnp.bfloat16)}


def loss_fn(params, x, y):
    pred = x.astype(jnp.bfloat16) @ params["w"] + params["b"]
    return optax.huber_loss(pred, y.astype(jnp.bfloat16), 1.0).mean()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    x = jnp.asarray(rng.normal(size=(16, 8)), jnp.float32)
    y = jnp.asarray(rng.normal(size=(16, 2)), jnp.float32)
    params = init_params(jax.random.PRNGKey(1))
    tx = optax.MultiSteps(optax.adamw(1e-3, weight_decay=0.1), every_k_schedule=2)
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
        np.savez(args.out, **{k: np.asarray(v).astype(np.float32) for k, v in params.items()})


if __name__ == "__main__":
    main()
