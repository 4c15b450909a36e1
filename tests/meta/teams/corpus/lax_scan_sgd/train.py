"""Whole training loop inside jax.lax.scan under jax.jit; SGD with momentum.

Exercises: a functional linear-regression model (params dict), optax.sgd with
momentum=0.9 and nesterov=False, the full epoch loop written as
jax.lax.scan over pre-batched data inside a single @jax.jit function that
returns the per-step losses; the losses are printed after the fact.

Imitates: the JAX / Optax "training loop in lax.scan" pattern (e.g. Optax's
"Training a linear model with lax.scan"-style notebooks and the JAX
`jax.lax.scan` docs), where `step` is `(params, opt_state), batch ->
(params, opt_state), loss`.

EXPECTED TRUTH: same -- SGD+momentum, jax.lax.scan and the matrix-vector
products of a 5-feature linear model are bit-identical across optax
0.2.6/jax 0.11.2 and optax 0.2.8/jax 0.12.0.1 (stdout, params, momentum
trace and the 40 losses).

python train.py [--out DIR]
"""
import argparse
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax

optimizer = optax.sgd(learning_rate=0.05, momentum=0.9)


def loss_fn(params, x, y):
    pred = x @ params["w"] + params["b"]
    return jnp.mean((pred - y) ** 2)


def train_step(carry, batch):
    params, opt_state = carry
    x, y = batch
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    return (params, opt_state), loss


@jax.jit
def fit(params, opt_state, xs, ys):
    (params, opt_state), losses = jax.lax.scan(train_step, (params, opt_state), (xs, ys))
    return params, opt_state, losses


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    true_w = rng.normal(size=(5,))
    x = rng.normal(size=(400, 5))
    y = x @ true_w + 0.3 + 0.1 * rng.normal(size=400)
    # 40 steps: 4 epochs of 10 batches of 40 examples.
    xs = jnp.asarray(np.tile(x.reshape(10, 40, 5), (4, 1, 1)), jnp.float32)
    ys = jnp.asarray(np.tile(y.reshape(10, 40), (4, 1)), jnp.float32)

    params = {"w": jnp.zeros((5,), jnp.float32), "b": jnp.zeros((), jnp.float32)}
    opt_state = optimizer.init(params)
    params, opt_state, losses = fit(params, opt_state, xs, ys)
    for i, loss in enumerate(np.asarray(losses)):
        if i % 5 == 0:
            print(f"step {i} loss {float(loss):.9g}")
    print(f"final loss {float(losses[-1]):.9g} w {[float(f'{v:.9g}') for v in np.asarray(params['w'])]}")

    flat = {f"params/{k}": np.asarray(v) for k, v in params.items()}
    flat.update({f"opt_state/trace/{k}": np.asarray(v) for k, v in opt_state[0].trace.items()})
    flat["losses"] = np.asarray(losses)
    os.makedirs(args.out, exist_ok=True)
    np.savez(os.path.join(args.out, "params.npz"), **flat)


if __name__ == "__main__":
    main()
