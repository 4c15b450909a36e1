"""Data and init drawn with jax.random / jax.nn.initializers (a JAX-born difference).

Exercises: the one program in the corpus that does NOT make its data with
NumPy: inputs and targets come from jax.random.normal / jax.random.randint on
keys split from jax.random.PRNGKey(0), and the weights from
jax.nn.initializers.normal(stddev=0.02) (the GPT-2-style init); a
functional two-layer MLP classifier, @jax.jit step, optax.adam.

Imitates: JAX / Optax tutorials that draw everything from `jax.random`
(`key, subkey = jax.random.split(key)`, `jax.random.normal(subkey, ...)`) and
GPT-style models initialised with `jax.nn.initializers.normal(0.02)`.

EXPECTED TRUTH: differs -- born in JAX, not Optax: jax 0.12 reimplemented
jax.nn.initializers.normal (and variance_scaling(distribution="normal")) as
sqrt(2)*stddev*erf_inv(uniform) instead of random.normal(key)*stddev, which
rounds differently, so the initial weights differ by ~1 ulp (stdout line 1:
w1[0,0] 0.0336364321 vs 0.0336364359).  jax.random.normal /
jax.random.randint themselves are bit-identical (data/x and data/y agree),
and the Optax part is unchanged (baseline python + optax 0.2.8 is
bit-identical to 0.2.6).

python train.py [--out DIR]
"""
import argparse
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax

init_normal = jax.nn.initializers.normal(stddev=0.02)
optimizer = optax.adam(learning_rate=1e-2)


def init_params(key):
    k1, k2 = jax.random.split(key)
    return {
        "w1": init_normal(k1, (12, 48), jnp.float32),
        "b1": jnp.zeros((48,), jnp.float32),
        "w2": init_normal(k2, (48, 5), jnp.float32),
        "b2": jnp.zeros((5,), jnp.float32),
    }


def loss_fn(params, x, y):
    h = jax.nn.relu(x @ params["w1"] + params["b1"])
    logits = h @ params["w2"] + params["b2"]
    return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()


@jax.jit
def train_step(params, opt_state, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    args = parser.parse_args()

    key = jax.random.PRNGKey(0)
    key, data_key, label_key, init_key = jax.random.split(key, 4)
    x = jax.random.normal(data_key, (128, 12))
    y = jax.random.randint(label_key, (128,), 0, 5)
    params = init_params(init_key)
    print(f"init w1[0,:3] {[float(f'{v:.9g}') for v in np.asarray(params['w1'][0, :3])]}")
    opt_state = optimizer.init(params)

    for step in range(20):
        params, opt_state, loss = train_step(params, opt_state, x, y)
        if step % 4 == 0:
            print(f"step {step} loss {float(loss):.9g}")
    print(f"final loss {float(loss_fn(params, x, y)):.9g}")

    flat = {f"params/{k}": np.asarray(v) for k, v in params.items()}
    flat["data/x"] = np.asarray(x)
    flat["data/y"] = np.asarray(y)
    os.makedirs(args.out, exist_ok=True)
    np.savez(os.path.join(args.out, "params.npz"), **flat)


if __name__ == "__main__":
    main()
