"""Data parallel over 8 CPU devices with jax.shard_map (a jitted step whose
gradients are averaged with lax.pmean over the batch axis) and then one step
with jax.pmap; optax.adam and optax.l2_loss inside each device's program.
NumPy data.

Imitates: JAX's "Distributed arrays and automatic parallelization" and
shard_map tutorials (a data-parallel training step: batch sharded, params
replicated, pmean of the gradients), with Optax inside the per-device step.

EXPECTED TRUTH: same -- established with tests/meta/corpus_truth.py: every
printed weight is bit-identical between optax 0.2.6/jax 0.11.2 and optax
0.2.8/jax 0.12.0.1.

python train.py [--out DIR]
"""
import argparse
import os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
import jax, jax.numpy as jnp, numpy as np, optax
from jax.sharding import Mesh, PartitionSpec as P
mesh = Mesh(np.array(jax.devices()), ("batch",))
rng = np.random.default_rng(0)
x = jnp.asarray(rng.normal(size=(64, 4)), jnp.float32); y = jnp.asarray(rng.normal(size=(64,)), jnp.float32)
params = {"w": jnp.zeros(4)}
tx = optax.adam(1e-2); state = tx.init(params)

def loss_fn(p, xb, yb):
    return optax.l2_loss(xb @ p["w"], yb).mean()

def local_step(p, s, xb, yb):
    g = jax.grad(loss_fn)(p, xb, yb)
    g = jax.lax.pmean(g, "batch")
    u, s = tx.update(g, s, p)
    return optax.apply_updates(p, u), s

step = jax.jit(jax.shard_map(local_step, mesh=mesh, in_specs=(P(), P(), P("batch"), P("batch")), out_specs=(P(), P())))
for i in range(3):
    params, state = step(params, state, x, y)
print("w", [f"{v:.9g}" for v in np.asarray(params["w"])])
pstep = jax.pmap(local_step, axis_name="batch", in_axes=(None, None, 0, 0))
pp = pstep(params, state, x.reshape(8, 8, 4), y.reshape(8, 8))
print("pmap w", [f"{v:.9g}" for v in np.asarray(pp[0]["w"][0])])
parser = argparse.ArgumentParser()
parser.add_argument("--out", default=".")
out = parser.parse_args().out
np.savez(os.path.join(out, "params.npz"), w=np.asarray(params["w"]))
