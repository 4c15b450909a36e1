"""Robust regression with optax.huber_loss(predictions, targets, delta) -- delta positional.

Exercises: optax.huber_loss called with its delta hyperparameter passed
positionally (`optax.huber_loss(pred, y, 0.5)`), a functional linear model
on NumPy data with a few outliers, optax.adam, @jax.jit step.

Imitates: regression snippets and older Optax docs/examples that call the
loss helpers positionally (`optax.huber_loss(predictions, targets, delta)`).

EXPECTED TRUTH: differs -- born in Optax: optax 0.2.8 made the loss
hyperparameters keyword-only (huber_loss(predictions, targets=None, *,
delta=1.0)), so `optax.huber_loss(pred, y, 0.5)` raises "TypeError:
huber_loss() takes from 1 to 2 positional arguments but 3 were given"
while tracing the first step (exit status 0 vs 1, no params.npz written in
the candidate); 0.2.6 only warned.

python train.py [--out DIR]
"""
import argparse
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax

DELTA = 0.5
optimizer = optax.adam(learning_rate=5e-2)


def loss_fn(params, x, y):
    pred = x @ params["w"] + params["b"]
    return jnp.mean(optax.huber_loss(pred, y, DELTA))


@jax.jit
def train_step(params, opt_state, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    x_np = rng.normal(size=(80, 3))
    y_np = x_np @ np.array([1.0, -0.5, 2.0]) + 0.1 * rng.normal(size=80)
    y_np[::10] += 8.0   # outliers the Huber loss should shrug off
    x = jnp.asarray(x_np, jnp.float32)
    y = jnp.asarray(y_np, jnp.float32)
    params = {"w": jnp.zeros((3,), jnp.float32), "b": jnp.zeros((), jnp.float32)}
    opt_state = optimizer.init(params)

    for step in range(30):
        params, opt_state, loss = train_step(params, opt_state, x, y)
        if step % 5 == 0:
            print(f"step {step} loss {float(loss):.9g}")
    print(f"final loss {float(loss):.9g} w {[float(f'{v:.9g}') for v in np.asarray(params['w'])]}")

    os.makedirs(args.out, exist_ok=True)
    np.savez(os.path.join(args.out, "params.npz"), **{k: np.asarray(v) for k, v in params.items()})


if __name__ == "__main__":
    main()
