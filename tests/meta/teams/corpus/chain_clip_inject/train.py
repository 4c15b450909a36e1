"""optax.chain(clip_by_global_norm, inject_hyperparams(adam)) with a manual LR drop.

Exercises: optax.chain(optax.clip_by_global_norm(1.0),
optax.inject_hyperparams(optax.adam)(learning_rate=2e-2)), a @jax.jit step,
reading the injected learning rate back from
opt_state[1].hyperparams["learning_rate"] for the log, and overwriting it
(divide by 4 at step 15) between steps, the usual "reduce LR by hand"
recipe; the gradient global norm (optax.global_norm) is logged so clipping is
visible; float32 functional MLP regression on NumPy data.

Imitates: Optax's "inject_hyperparams" how-to (changing a hyperparameter in
the optimizer state between steps) combined with the clip-then-Adam chain of
many Flax/Optax examples.

EXPECTED TRUTH: differs -- born in JAX, not Optax: jaxlib 0.12.0.1's XLA:CPU
small-matmul kernels (YNNPACK "ynn_fusion") round this 5-32-2 MLP's
products differently, first visible in the step-3 loss (2.43888879 vs
2.43888903).
clip_by_global_norm and inject_hyperparams on float32 params are unchanged
(baseline python + optax 0.2.8 is bit-identical; with YNN fusions switched
off both environments agree bit for bit).

python train.py [--out DIR]
"""
import argparse
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax

optimizer = optax.chain(
    optax.clip_by_global_norm(1.0),
    optax.inject_hyperparams(optax.adam)(learning_rate=2e-2),
)


def loss_fn(params, x, y):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return jnp.mean(optax.l2_loss(h @ params["w2"] + params["b2"], y))


@jax.jit
def train_step(params, opt_state, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss, optax.global_norm(grads)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    x_np = rng.normal(size=(96, 5))
    y_np = 3.0 * np.stack([np.sin(x_np[:, 0]), x_np[:, 1] * x_np[:, 2]], axis=1)
    x = jnp.asarray(x_np, jnp.float32)
    y = jnp.asarray(y_np, jnp.float32)
    params = {
        "w1": jnp.asarray(rng.normal(size=(5, 32)) * 0.45, jnp.float32),
        "b1": jnp.zeros((32,), jnp.float32),
        "w2": jnp.asarray(rng.normal(size=(32, 2)) * 0.18, jnp.float32),
        "b2": jnp.zeros((2,), jnp.float32),
    }
    opt_state = optimizer.init(params)

    for step in range(30):
        if step == 15:
            opt_state[1].hyperparams["learning_rate"] = opt_state[1].hyperparams["learning_rate"] / 4
        lr = opt_state[1].hyperparams["learning_rate"]
        params, opt_state, loss, gnorm = train_step(params, opt_state, x, y)
        if step % 3 == 0 or step == 15:
            print(f"step {step} lr {float(lr):.9g} grad_norm {float(gnorm):.9g} loss {float(loss):.9g}")
    print(f"final loss {float(loss_fn(params, x, y)):.9g} "
          f"lr dtype {opt_state[1].hyperparams['learning_rate'].dtype}")

    flat = {f"params/{k}": np.asarray(v) for k, v in params.items()}
    inner = opt_state[1].inner_state[0]
    flat.update({f"adam/mu/{k}": np.asarray(v) for k, v in inner.mu.items()})
    flat.update({f"adam/nu/{k}": np.asarray(v) for k, v in inner.nu.items()})
    flat["hyperparams/learning_rate"] = np.asarray(opt_state[1].hyperparams["learning_rate"])
    os.makedirs(args.out, exist_ok=True)
    np.savez(os.path.join(args.out, "params.npz"), **flat)


if __name__ == "__main__":
    main()
