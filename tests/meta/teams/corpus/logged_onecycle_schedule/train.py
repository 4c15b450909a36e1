"""Linear one-cycle schedule with a normal warm-up, logged with float(schedule(step)).

Exercises: optax.linear_onecycle_schedule(transition_steps=30, peak_value=1e-2)
(default pct_start=0.3, pct_final=0.85), called eagerly at a Python int step
for the log line and traced inside a @jax.jit step through
optax.sgd(schedule, momentum=0.9); the logged values are also saved in
params.npz; a functional linear regression on NumPy data.

Imitates: Optax's "Learning rate schedules" notebook / fast.ai-style one-cycle
training loops that print the current learning rate with
`float(schedule(step))`.

EXPECTED TRUTH: differs -- born in Optax: optax 0.2.6 evaluated
piecewise_interpolate_schedule (behind linear/cosine_onecycle_schedule) with
NumPy float64 tables, so float(schedule(step)) at a Python int step is a
float64 value ("lr 0.0004"); 0.2.8 computes it with jnp in float32 ("lr
0.00039999999"), first difference in the step-0 log line.  Inside the
jitted step the traced schedule also rounds differently, and jax 0.12's
XLA adds its own 1-ulp noise (loss from step 12).

python train.py [--out DIR]
"""
import argparse
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax

TOTAL_STEPS = 30
schedule = optax.linear_onecycle_schedule(transition_steps=TOTAL_STEPS, peak_value=1e-2)
optimizer = optax.sgd(learning_rate=schedule, momentum=0.9)


def loss_fn(params, x, y):
    return jnp.mean((x @ params["w"] + params["b"] - y) ** 2)


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
    x_np = rng.normal(size=(128, 3))
    y_np = x_np @ np.array([1.5, -2.0, 0.5]) + 0.25
    x = jnp.asarray(x_np, jnp.float32)
    y = jnp.asarray(y_np, jnp.float32)
    params = {"w": jnp.zeros((3,), jnp.float32), "b": jnp.zeros((), jnp.float32)}
    opt_state = optimizer.init(params)

    lrs = []
    for step in range(TOTAL_STEPS):
        lr = float(schedule(step))
        lrs.append(lr)
        params, opt_state, loss = train_step(params, opt_state, x, y)
        if step % 3 == 0:
            print(f"step {step} lr {lr:.9g} loss {float(loss):.9g}")
    print(f"final lr {float(schedule(TOTAL_STEPS)):.9g} loss {float(loss_fn(params, x, y)):.9g}")

    flat = {f"params/{k}": np.asarray(v) for k, v in params.items()}
    flat["logged_lr"] = np.asarray(lrs, np.float64)
    os.makedirs(args.out, exist_ok=True)
    np.savez(os.path.join(args.out, "params.npz"), **flat)


if __name__ == "__main__":
    main()
