"""A training loop with no jit at all: eager jax.grad + optax.sgd.

Exercises: a linear regression (params dict), jax.value_and_grad called
eagerly each step, optax.sgd(0.1) with tx.update / optax.apply_updates run
op by op in Python (nothing is wrapped in jax.jit), loss printed every step.

Imitates: the smallest Optax examples in the README / docs ("Basic usage":
`optimizer = optax.sgd(...)`, `grads = jax.grad(loss)(params)`,
`updates, opt_state = optimizer.update(grads, opt_state)`,
`params = optax.apply_updates(params, updates)`), run without jit as in
interactive notebooks.

EXPECTED TRUTH: same -- eager SGD on a 4-feature linear model is bit-identical
between optax 0.2.6/jax 0.11.2 and optax 0.2.8/jax 0.12.0.1.

python train.py [--out DIR]
"""
import argparse
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax


def loss_fn(params, x, y):
    pred = jnp.dot(x, params["w"]) + params["b"]
    return jnp.mean(optax.l2_loss(pred, y))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    x_np = rng.uniform(-1, 1, size=(50, 4))
    y_np = x_np @ np.array([2.0, -1.0, 0.5, 3.0]) - 1.0 + 0.05 * rng.normal(size=50)
    x = jnp.asarray(x_np, jnp.float32)
    y = jnp.asarray(y_np, jnp.float32)

    params = {"w": jnp.zeros((4,), jnp.float32), "b": jnp.zeros((), jnp.float32)}
    optimizer = optax.sgd(learning_rate=0.1)
    opt_state = optimizer.init(params)

    for step in range(25):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        updates, opt_state = optimizer.update(grads, opt_state)
        params = optax.apply_updates(params, updates)
        print(f"step {step} loss {float(loss):.9g}")
    print(f"final loss {float(loss_fn(params, x, y)):.9g} b {float(params['b']):.9g}")

    os.makedirs(args.out, exist_ok=True)
    np.savez(os.path.join(args.out, "params.npz"), **{k: np.asarray(v) for k, v in params.items()})


if __name__ == "__main__":
    main()
