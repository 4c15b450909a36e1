"""Data-parallel training over 8 (virtual) CPU devices with jax.sharding.

Exercises: XLA_FLAGS=--xla_force_host_platform_device_count=8 set through
os.environ before jax is imported, a 1-D jax.sharding.Mesh over the 8
devices with axis "data", the batch placed with NamedSharding(mesh,
P("data")) and the params / Adam state replicated with NamedSharding(mesh,
P()), one @jax.jit step (gradients all-reduced by the SPMD partitioner),
optax.adam, a functional MLP on NumPy data.

Imitates: the JAX "Distributed arrays and automatic parallelization"
tutorial and Flax/Optax data-parallel examples (`jax.device_put(batch,
NamedSharding(mesh, P('data')))`, replicated params, `jax.jit` step).

EXPECTED TRUTH: same -- the 8-device SPMD-partitioned step (all-reduced
gradients), Adam and the tanh MLP are bit-identical between optax 0.2.6/jax
0.11.2 and optax 0.2.8/jax 0.12.0.1 (stdout, params, Adam moments).

python train.py [--out DIR]
"""
import os

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()

import argparse  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

optimizer = optax.adam(learning_rate=5e-3)


def loss_fn(params, x, y):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    pred = (h @ params["w2"] + params["b2"])[:, 0]
    return jnp.mean((pred - y) ** 2)


@jax.jit
def train_step(params, opt_state, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    updates, opt_state = optimizer.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    args = parser.parse_args()

    devices = jax.devices()
    assert len(devices) == 8, devices
    mesh = Mesh(np.array(devices), ("data",))
    data_sharding = NamedSharding(mesh, P("data"))
    replicated = NamedSharding(mesh, P())

    rng = np.random.default_rng(0)
    x_np = rng.normal(size=(256, 8))
    y_np = np.sin(x_np @ rng.normal(size=8) * 0.5)
    params = {
        "w1": jnp.asarray(rng.normal(size=(8, 32)) * 0.35, jnp.float32),
        "b1": jnp.zeros((32,), jnp.float32),
        "w2": jnp.asarray(rng.normal(size=(32, 1)) * 0.18, jnp.float32),
        "b2": jnp.zeros((1,), jnp.float32),
    }
    params = jax.device_put(params, replicated)
    opt_state = jax.device_put(optimizer.init(params), replicated)

    for step in range(24):
        i = (step % 4) * 64
        x = jax.device_put(jnp.asarray(x_np[i:i + 64], jnp.float32), data_sharding)
        y = jax.device_put(jnp.asarray(y_np[i:i + 64], jnp.float32), data_sharding)
        params, opt_state, loss = train_step(params, opt_state, x, y)
        if step % 3 == 0:
            print(f"step {step} loss {float(loss):.9g}")
    print(f"final loss {float(loss):.9g} devices {len(devices)} "
          f"w1 sharding {params['w1'].sharding.spec}")

    flat = {f"params/{k}": np.asarray(v) for k, v in params.items()}
    flat.update({f"opt_state/mu/{k}": np.asarray(v) for k, v in opt_state[0].mu.items()})
    flat.update({f"opt_state/nu/{k}": np.asarray(v) for k, v in opt_state[0].nu.items()})
    os.makedirs(args.out, exist_ok=True)
    np.savez(os.path.join(args.out, "params.npz"), **flat)


if __name__ == "__main__":
    main()
