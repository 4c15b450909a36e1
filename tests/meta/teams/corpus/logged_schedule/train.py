"""One-cycle learning-rate schedule, logged every step with float(schedule(step)).

Exercises: optax.cosine_onecycle_schedule(transition_steps=TOTAL_STEPS,
peak_value=1e-2, pct_start=WARMUP_STEPS / TOTAL_STEPS) with WARMUP_STEPS = 0
(no warm-up phase), evaluated eagerly at a Python int step for logging and
traced inside a @jax.jit step through optax.adam(schedule); a functional
softmax-regression classifier on NumPy data.

Imitates: Optax's "Learning rate schedules" notebook and the common training
loop that logs `float(schedule(step))` next to the loss.

EXPECTED TRUTH: differs -- born in Optax: with pct_start=0 the one-cycle
schedule has a zero-length first interval; optax 0.2.6's
piecewise_interpolate_schedule divides by that length (0/0).  Called with a
Python int step it runs in NumPy and returns NaN, so every log line reads
"lr nan" (plus a RuntimeWarning on stderr); optax 0.2.8 clamps interval sizes
to >= 1 and logs 0.00999999978, 0.00995722413, ...  First difference: 'step
0 lr nan loss 1.09861207' vs 'step 0 lr 0.00999999978 loss 1.09861207'.
Surprise: the *training* is not hurt in 0.2.6 -- traced with a jax int32
count inside the jitted Adam step, the same schedule evaluates to the right
values (the NaN is lost in the bool-indicator dot), so the losses of
baseline and baseline+optax-0.2.8 agree bit for bit; the later loss
differences (step 10 on, 1 ulp) are jax 0.12's own XLA noise.

python train.py [--out DIR]
"""
import argparse
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax

TOTAL_STEPS = 24
WARMUP_STEPS = 0

schedule = optax.cosine_onecycle_schedule(
    transition_steps=TOTAL_STEPS,
    peak_value=1e-2,
    pct_start=WARMUP_STEPS / TOTAL_STEPS,
)
optimizer = optax.adam(learning_rate=schedule)


def loss_fn(params, x, y):
    logits = x @ params["w"] + params["b"]
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

    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.normal(size=(96, 4)), jnp.float32)
    y = jnp.asarray(rng.integers(0, 3, size=96), jnp.int32)
    params = {"w": jnp.zeros((4, 3), jnp.float32), "b": jnp.zeros((3,), jnp.float32)}
    opt_state = optimizer.init(params)

    lrs = []
    for step in range(TOTAL_STEPS):
        lr = float(schedule(step))
        lrs.append(lr)
        params, opt_state, loss = train_step(params, opt_state, x, y)
        print(f"step {step} lr {lr:.9g} loss {float(loss):.9g}")
    print(f"final loss {float(loss_fn(params, x, y)):.9g}")

    flat = {f"params/{k}": np.asarray(v) for k, v in params.items()}
    flat["logged_lr"] = np.asarray(lrs, np.float64)
    os.makedirs(args.out, exist_ok=True)
    np.savez(os.path.join(args.out, "params.npz"), **flat)


if __name__ == "__main__":
    main()
