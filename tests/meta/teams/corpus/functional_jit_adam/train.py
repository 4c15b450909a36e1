"""Functional MLP classifier: params dict, jax.jit step, optax.adam.

Exercises: a plain params dict initialised with NumPy, jax.value_and_grad of a
loss built on optax.softmax_cross_entropy_with_integer_labels, tx.init /
tx.update / optax.apply_updates inside one @jax.jit step, a fixed number of
full-batch steps, accuracy evaluation.

Imitates: Optax's "Getting started" / quick-start notebook (MLP on a toy
classification problem: `loss, grads = jax.value_and_grad(loss_fn)(params,
...)`, `updates, opt_state = optimizer.update(grads, opt_state, params)`,
`params = optax.apply_updates(params, updates)`).

EXPECTED TRUTH: differs -- born in JAX, not Optax: jaxlib 0.12.0.1's
XLA:CPU runs small f32 matmuls through a newer YNNPACK ("ynn_fusion") whose
kernels round differently (this 2-32-3 MLP's products), so the step-0 loss
already differs in the 8th digit (1.38331687 vs 1.38331676); with YNN
fusions switched off a second JAX-side source (XLA:CPU no longer applying
some value-changing algebraic rewrites) still shows from step 12.  Adam
itself is unchanged (baseline python + optax 0.2.8 gives bit-identical
results).

python train.py [--out DIR]
"""
import argparse
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax

NUM_CLASSES = 3


def init_params(rng, sizes):
    params = {}
    for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        params[f"w{i}"] = jnp.asarray(rng.normal(size=(n_in, n_out)) / np.sqrt(n_in), jnp.float32)
        params[f"b{i}"] = jnp.zeros((n_out,), jnp.float32)
    return params


def predict(params, x):
    h = jax.nn.relu(x @ params["w0"] + params["b0"])
    return h @ params["w1"] + params["b1"]


def loss_fn(params, x, y):
    logits = predict(params, x)
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()


optimizer = optax.adam(learning_rate=1e-2)


@jax.jit
def step(params, opt_state, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    params = optax.apply_updates(params, updates)
    return params, opt_state, loss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    centers = rng.normal(size=(NUM_CLASSES, 2)) * 2.5
    labels = rng.integers(0, NUM_CLASSES, size=128)
    x = jnp.asarray(centers[labels] + rng.normal(size=(128, 2)), jnp.float32)
    y = jnp.asarray(labels, jnp.int32)

    params = init_params(rng, [2, 32, NUM_CLASSES])
    opt_state = optimizer.init(params)
    for i in range(30):
        params, opt_state, loss = step(params, opt_state, x, y)
        if i % 3 == 0:
            print(f"step {i} loss {float(loss):.9g}")
    accuracy = jnp.mean(jnp.argmax(predict(params, x), -1) == y)
    print(f"final loss {float(loss):.9g} accuracy {float(accuracy):.9g}")

    flat = {f"params/{k}": np.asarray(v) for k, v in params.items()}
    flat["opt_state/count"] = np.asarray(opt_state[0].count)
    for k in params:
        flat[f"opt_state/mu/{k}"] = np.asarray(opt_state[0].mu[k])
        flat[f"opt_state/nu/{k}"] = np.asarray(opt_state[0].nu[k])
    os.makedirs(args.out, exist_ok=True)
    np.savez(os.path.join(args.out, "params.npz"), **flat)


if __name__ == "__main__":
    main()
