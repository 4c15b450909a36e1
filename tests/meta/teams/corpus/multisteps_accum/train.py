"""Gradient accumulation with optax.MultiSteps(optax.adam(...), every_k_schedule=4).

Exercises: optax.MultiSteps wrapping Adam so that 4 micro-batches are averaged
before one real update, a @jax.jit step calling tx.update / apply_updates on
every micro-batch, MultiSteps.has_updated to log real updates, a float32
functional MLP (params dict, NumPy init).

Imitates: the Optax "Gradient accumulation" how-to
(`optimizer = optax.MultiSteps(optax.adam(...), every_k_schedule=k)` with an
unchanged training step).

EXPECTED TRUTH: differs -- born in JAX, not Optax: the jitted MultiSteps
update (`emit * updates`, adam's scaling) is compiled differently by jaxlib
0.12.0.1's XLA:CPU, which no longer applies some value-changing algebraic
rewrites of jaxlib 0.11.2 (e.g. x*c1*c2 -> x*(c1*c2)); the first real update
(micro-step 3) leaves 3/192 entries of w1 1 ulp apart, first visible in
stdout at step 43 (0.34752962 vs 0.34752959).  MultiSteps on float32
params is otherwise unchanged by optax 0.2.8 (baseline python + optax 0.2.8
is bit-identical to 0.2.6); the YNNPACK switch is not involved.

python train.py [--out DIR]
"""
import argparse
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax

ACCUMULATION_STEPS = 4
optimizer = optax.MultiSteps(optax.adam(learning_rate=3e-3), every_k_schedule=ACCUMULATION_STEPS)


def forward(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return (h @ params["w2"] + params["b2"])[:, 0]


def loss_fn(params, x, y):
    return jnp.mean(optax.l2_loss(forward(params, x), y))


@jax.jit
def train_step(params, opt_state, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    return params, opt_state, loss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    x_np = rng.normal(size=(192, 6))
    y_np = np.sin(x_np[:, 0]) + 0.5 * x_np[:, 1] * x_np[:, 2]
    x = jnp.asarray(x_np, jnp.float32)
    y = jnp.asarray(y_np, jnp.float32)
    params = {
        "w1": jnp.asarray(rng.normal(size=(6, 32)) * 0.4, jnp.float32),
        "b1": jnp.zeros((32,), jnp.float32),
        "w2": jnp.asarray(rng.normal(size=(32, 1)) * 0.2, jnp.float32),
        "b2": jnp.zeros((1,), jnp.float32),
    }
    opt_state = optimizer.init(params)

    micro = 16
    for i in range(48):
        j = (i * micro) % 192
        params, opt_state, loss = train_step(params, opt_state, x[j:j + micro], y[j:j + micro])
        updated = bool(optimizer.has_updated(opt_state))
        if updated:
            print(f"step {i} loss {float(loss):.9g} gradient_step {int(opt_state.gradient_step)}")
    print(f"final loss {float(loss_fn(params, x, y)):.9g} mini_step {int(opt_state.mini_step)}")

    flat = {f"params/{k}": np.asarray(v) for k, v in params.items()}
    flat.update({f"acc_grads/{k}": np.asarray(v) for k, v in opt_state.acc_grads.items()})
    inner = opt_state.inner_opt_state[0]
    flat.update({f"inner/mu/{k}": np.asarray(v) for k, v in inner.mu.items()})
    flat.update({f"inner/nu/{k}": np.asarray(v) for k, v in inner.nu.items()})
    flat["inner/count"] = np.asarray(inner.count)
    os.makedirs(args.out, exist_ok=True)
    np.savez(os.path.join(args.out, "params.npz"), **flat)


if __name__ == "__main__":
    main()
