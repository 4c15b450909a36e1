"""Speed of three representative training steps in this environment: the in-environment half of the gate's speed
drift readings (``optax_gate.gate.speed.readings``).

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import os

# Before JAX is imported: never read or write a persistent compilation cache here.
os.environ.pop("JAX_COMPILATION_CACHE_DIR", None)
if os.environ.get(
    "OPTAX_GATE_REACH"
):  # the gate asks what the set-ups execute: recorded from before Optax and Flax are imported
    from optax_gate.kit.environment import reach
else:
    reach = None  # type: ignore[assignment]

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.monitoring
import jax.numpy as jnp
import optax
from flax import nnx

from optax_gate.kit.environment import probe
from optax_gate.kit.training import models

jax.config.update("jax_enable_compilation_cache", False)
jax.config.update("jax_compilation_cache_dir", None)

SETUPS = ("nnx-sgd-momentum", "adamw-multisteps", "scan-20")
#: Compilations timed per set-up and round.
COMPILES = 1
#: Untimed calls before the timed ones.
WARMUP = 5
#: Timed calls per set-up and request, each timed on its own: on a loaded
#: machine a preemption then spoils a few calls (which the median ignores),
#: not a whole sample of many calls.
REPEATS = {"nnx-sgd-momentum": 60, "adamw-multisteps": 60, "scan-20": 20}
SCAN_LENGTH = 20
BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"
PREFIX = "@speed"

#: A set-up: a maker of fresh step functions, and the arguments to call them with.
Setup = tuple[Callable[[], Callable[..., Any]], tuple[Any, ...]]


def _nnx_sgd_momentum() -> Setup:
    model = models.MLP(nnx.Rngs(params=0, dropout=1))
    optimizer = nnx.Optimizer(model, optax.sgd(0.1, momentum=0.9), wrt=nnx.Param)
    graphdef, state = nnx.split((model, optimizer))
    x = jax.random.normal(jax.random.key(0), (32, 3), jnp.float32)
    y = jax.random.normal(jax.random.key(1), (32, 2), jnp.float32)

    def make() -> Callable[..., Any]:
        def step(state: Any, x: Any, y: Any) -> Any:
            model, optimizer = nnx.merge(graphdef, state)

            def loss_fn(m: Any) -> Any:
                return jnp.mean((m(x) - y) ** 2)

            loss, grads = nnx.value_and_grad(loss_fn)(model)
            optimizer.update(model, grads)
            return nnx.state((model, optimizer)), loss

        return step

    return make, (state, x, y)


def _mlp_params() -> dict[str, jax.Array]:
    k1, k2 = jax.random.split(jax.random.key(2))
    return {
        "w1": 0.1 * jax.random.normal(k1, (16, 32), jnp.float32),
        "b1": jnp.zeros((32,), jnp.float32),
        "w2": 0.1 * jax.random.normal(k2, (32, 4), jnp.float32),
        "b2": jnp.zeros((4,), jnp.float32),
    }


def _adamw_multisteps_tx() -> optax.GradientTransformation:
    schedule = optax.warmup_cosine_decay_schedule(0.0, 1e-3, 10, 100, 1e-5)
    inner = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(schedule, weight_decay=1e-4))
    return optax.MultiSteps(inner, every_k_schedule=2)


def _adamw_step(tx: optax.GradientTransformation) -> Callable[..., Any]:
    def loss_fn(params: Any, x: Any, y: Any) -> Any:
        hidden = jnp.tanh(x @ params["w1"] + params["b1"])
        return jnp.mean((hidden @ params["w2"] + params["b2"] - y) ** 2)

    def step(params: Any, opt_state: Any, x: Any, y: Any) -> Any:
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return step


def _adamw_multisteps() -> Setup:
    tx = _adamw_multisteps_tx()
    params = _mlp_params()
    x = jax.random.normal(jax.random.key(3), (32, 16), jnp.float32)
    y = jax.random.normal(jax.random.key(4), (32, 4), jnp.float32)
    return (lambda: _adamw_step(tx)), (params, tx.init(params), x, y)


def _scan() -> Setup:
    tx = _adamw_multisteps_tx()
    params = _mlp_params()
    xs = jax.random.normal(jax.random.key(5), (SCAN_LENGTH, 32, 16), jnp.float32)
    ys = jax.random.normal(jax.random.key(6), (SCAN_LENGTH, 32, 4), jnp.float32)

    def make() -> Callable[..., Any]:
        one = _adamw_step(tx)

        def train(params: Any, opt_state: Any, xs: Any, ys: Any) -> Any:
            def body(carry: Any, batch: Any) -> Any:
                params, opt_state, loss = one(*carry, *batch)
                return (params, opt_state), loss

            (params, opt_state), losses = jax.lax.scan(body, (params, opt_state), (xs, ys))
            return params, opt_state, losses

        return train

    return make, (params, tx.init(params), xs, ys)


BUILDERS: dict[str, Callable[[], Setup]] = {
    "nnx-sgd-momentum": _nnx_sgd_momentum,
    "adamw-multisteps": _adamw_multisteps,
    "scan-20": _scan,
}


def build() -> dict[str, Setup]:
    """The three set-ups, built (parameters and optimizer states initialised)."""
    return {name: BUILDERS[name]() for name in SETUPS}


def _time_compile(make: Callable[[], Callable[..., Any]], args: tuple[Any, ...]) -> tuple[dict[str, float], Any]:
    backend: list[float] = []

    def listener(event: str, duration: float, **kwargs: Any) -> None:
        if event == BACKEND_COMPILE:
            backend.append(duration)

    step = make()  # a new function object: nothing compiled for it yet in this process
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        t0 = time.perf_counter()
        lowered = jax.jit(step).lower(*args)
        t1 = time.perf_counter()
        compiled = lowered.compile()
        t2 = time.perf_counter()
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    t3 = time.perf_counter()
    jax.block_until_ready(compiled(*args))
    t4 = time.perf_counter()
    return {
        "compile_s": t2 - t0,
        "lower_s": t1 - t0,
        "backend_compile_s": sum(backend),
        "first_call_s": t4 - t3,
    }, compiled


def _time_steps(compiled: Any, args: tuple[Any, ...], repeats: int, warmup: int) -> list[float]:
    for _ in range(warmup):
        jax.block_until_ready(compiled(*args))
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        samples.append(time.perf_counter() - t0)
    return samples


class Session:
    """The set-ups of this process and their latest executables."""

    def __init__(self) -> None:
        self.setups = build()
        self.compiled: dict[str, Any] = {}

    def warm_up(self) -> None:
        """Untimed: one tiny compilation (loads XLA's own machinery) and a
        lowering of every set-up (fills the tracing caches of jax.numpy), so
        the first timed compilation is like the later ones."""
        jax.block_until_ready(jax.jit(lambda v: v * 2.0 + 1.0)(jnp.ones((3,), jnp.float32)))
        for make, args in self.setups.values():
            jax.jit(make()).lower(*args)

    def compile_round(
        self, compiles: int = COMPILES, repeats: dict[str, int] | None = None, warmup: int = WARMUP
    ) -> dict[str, dict[str, list[float]]]:
        """Compile every set-up ``compiles`` times, then time its steps:
        ``{setup: {metric: [seconds, ...]}}`` (metrics: module docstring)."""
        out: dict[str, dict[str, list[float]]] = {}
        for name, (make, args) in self.setups.items():
            reading: dict[str, list[float]] = {
                "compile_s": [],
                "lower_s": [],
                "backend_compile_s": [],
                "first_call_s": [],
            }
            for _ in range(compiles):
                times, self.compiled[name] = _time_compile(make, args)
                for key, value in times.items():
                    reading[key].append(value)
            reading["step_s"] = _time_steps(self.compiled[name], args, (repeats or REPEATS)[name], warmup)
            out[name] = reading
        return out

    def steps_round(
        self, repeats: dict[str, int] | None = None, warmup: int = WARMUP
    ) -> dict[str, dict[str, list[float]]]:
        """Time the steps of the executables of the last :meth:`compile_round` only."""
        return {
            name: {"step_s": _time_steps(self.compiled[name], args, (repeats or REPEATS)[name], warmup)}
            for name, (make, args) in self.setups.items()
        }


def header(plant: str | None = None) -> dict[str, Any]:
    """What was measured where: versions, backend, device, settings."""
    return {
        "versions": probe.installed_versions(),
        "backend": jax.default_backend(),
        "device": str(jax.devices()[0].device_kind),
        "plant": plant,
        "settings": {"compiles": COMPILES, "warmup": WARMUP, "repeats": dict(REPEATS)},
    }


def _emit(payload: dict[str, Any]) -> None:
    sys.stdout.write(f"{PREFIX} {json.dumps(payload)}\n")
    sys.stdout.flush()


def serve(plant: str | None = None) -> int:
    """The ``--serve`` loop (module docstring): warm up, say ready, answer ``round``/``steps`` lines."""
    session = Session()
    session.warm_up()
    if (
        reach is not None
    ):  # every set-up is built and traced: what the timed steps execute has run; nothing is timed yet
        reach.dump()
    _emit({"ready": header(plant)})
    for line in sys.stdin:
        command = line.strip()
        if command == "round":
            _emit({"round": session.compile_round()})
        elif command == "steps" and session.compiled:
            _emit({"round": session.steps_round()})
        elif command in ("quit", ""):
            break
        else:
            _emit({"error": f"unknown command {command!r}"})
    return 0


def measure(rounds: int, plant: str | None = None) -> dict[str, Any]:
    """``rounds`` rounds in this process, after an untimed warm-up round."""
    session = Session()
    session.warm_up()
    return {**header(plant), "rounds": [session.compile_round() for _ in range(rounds)]}


def summary(result: dict[str, Any]) -> str:
    """Medians per set-up, for a person at a terminal."""
    lines = []
    for name in SETUPS:
        step = [s for r in result["rounds"] for s in r[name]["step_s"]]
        comp = [s for r in result["rounds"] for s in r[name]["compile_s"]]
        lines.append(
            f"{name:18s} step {statistics.median(step) * 1e6:9.1f} us   compile {statistics.median(comp) * 1e3:8.1f} ms"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None, plant: str | None = None) -> int:
    """``python -m optax_gate.kit.environment.speed``: time the training steps and print or serve the readings;
    the exit status."""
    p = argparse.ArgumentParser(
        prog="python -m optax_gate.kit.environment.speed", description=__doc__.split("\n\n", 1)[0]
    )
    p.add_argument("--rounds", type=int, default=3, help="timed rounds (default: %(default)s)")
    p.add_argument("--out", default=None, metavar="FILE.json", help="write the readings there (default: stdout)")
    p.add_argument("--serve", action="store_true", help="answer 'round' and 'steps' lines on stdin (used by the gate)")
    args = p.parse_args(argv)
    if args.serve:
        return serve(plant)
    if args.rounds < 1:
        p.error("--rounds must be at least 1")
    result = measure(args.rounds, plant)
    text = json.dumps(result, indent=1) + "\n"
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
        print(summary(result))
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
