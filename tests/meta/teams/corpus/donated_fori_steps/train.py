"""Several training steps per call in lax.fori_loop, buffers donated, float32.

Exercises: functional params (a dict of arrays), optax.chain(optax.clip_by_global_norm(1.0),
optax.adam(1e-2)), a multi-step function jax.jit(..., donate_argnums=(0, 1))
that runs 10 steps in jax.lax.fori_loop per call (the data indexed inside),
called 4 times; the loss printed per call, the params saved to npz.

Imitates: large training repositories that run several steps per dispatch
(fori_loop or scan over micro-steps) and donate the params and optimizer
state to save memory.

EXPECTED TRUTH: same -- bit for bit in all four environments (optax 0.2.6 and
0.2.8, each on jax 0.11.2 and 0.12.0.1: tests/meta/corpus_truth.py
--attribute --four): the clipped Adam computes the same, and these matmuls
(8 and 32 wide) are rounded alike by both jaxlibs.

python train.py [--out DIR]
"""
import argparse
import os
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import optax

tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(1e-2))


def loss_fn(params, x, y):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return optax.l2_loss(h @ params["w2"], y).mean()


@partial(jax.jit, donate_argnums=(0, 1))
def many_steps(params, opt_state, xs, ys):
    def body(i, carry):
        params, opt_state, _ = carry
        loss, grads = jax.value_and_grad(loss_fn)(params, xs[i], ys[i])
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.lax.fori_loop(0, xs.shape[0], body, (params, opt_state, jnp.zeros((), jnp.float32)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    params = {
        "w1": jnp.asarray(rng.normal(size=(8, 32)) * 0.3, jnp.float32),
        "b1": jnp.zeros(32, jnp.float32),
        "w2": jnp.asarray(rng.normal(size=(32, 1)) * 0.3, jnp.float32),
    }
    opt_state = tx.init(params)
    for call in range(4):
        xs = jnp.asarray(rng.normal(size=(10, 16, 8)), jnp.float32)
        ys = jnp.asarray(np.sin(rng.normal(size=(10, 16, 1))), jnp.float32)
        params, opt_state, loss = many_steps(params, opt_state, xs, ys)
        print(f"call {call} loss {float(loss):.9g}")
    os.makedirs(args.out, exist_ok=True)
    np.savez(os.path.join(args.out, "params.npz"), **{k: np.asarray(v) for k, v in params.items()})


if __name__ == "__main__":
    main()
