"""Team programs run under the recorder: the corpus folder, planted changes, trace events."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from optax_gate.gate.team_run import command as run_command

TEAMS = Path(__file__).parents[1] / "teams"


PYTHON = Path(os.environ.get("OPTAX_GATE_TEAM_RUN_PYTHON") or sys.executable)


TANH_ONE_ULP = """
import jax, jax.numpy as jnp
_tanh = jnp.tanh
def tanh(x):
    y = _tanh(x)
    s = jax.lax.stop_gradient(y)
    return y + (jnp.nextafter(s, jnp.inf) - s)
jnp.tanh = tanh
"""


def learning_rate_times(alias: str, factor: str) -> str:
    """A plant whose ``optax.<alias>`` scales its learning rate by ``factor`` (Python source)."""
    return f"""
import optax
_{alias} = optax.{alias}
def {alias}(learning_rate, *args, **kwargs):
    return _{alias}(learning_rate * {factor}, *args, **kwargs)
{alias}.__module__ = "optax._src.alias"
optax.{alias} = {alias}
"""


PLANTS = {
    "huber-keyword-only": """
import optax
_huber = optax.huber_loss
def huber_loss(predictions, targets=None, *, delta=1.0):
    return _huber(predictions, targets, delta=delta)
huber_loss.__module__ = "optax.losses"
optax.huber_loss = optax.losses.huber_loss = huber_loss
""",
    "sgd-further": learning_rate_times("sgd", "1.5"),
    "sgd-one-ulp": learning_rate_times("sgd", "(1 + 2 ** -23)"),
    # a JAX that rounds one operation otherwise: tanh one ULP up (its gradient as it was), Optax the same
    "tanh-one-ulp": TANH_ONE_ULP,
    # the same rounding, and an Optax whose adam steps 1.5 times further: a change behind the rounding
    "tanh-one-ulp-adam-further": TANH_ONE_ULP + learning_rate_times("adam", "1.5"),
    # sgd's update holding a 1 MiB temporary, its values the same (a loop no longer unrolled, a copy kept)
    "sgd-holds-a-mib": """
import jax, jax.numpy as jnp, optax
_sgd = optax.sgd
def sgd(*args, **kwargs):
    tx = _sgd(*args, **kwargs)
    def update(updates, state, params=None, **extra):
        u, s = tx.update(updates, state, params, **extra)
        big = jnp.sort(jnp.arange(2**18, dtype=jnp.float32) * sum(jnp.sum(x) for x in jax.tree.leaves(u)))
        return jax.tree.map(lambda x: x + 0 * big[-1], u), s
    update.__qualname__ = tx.update.__qualname__  # the same transformation, as the recorder names it
    return tx._replace(update=update)
sgd.__module__ = "optax._src.alias"
optax.sgd = sgd
""",
    # adamw's scheduled weight decay read one count later (as optax 0.2.8's fix moves it)
    "adamw-decay-count": """
import optax
_adamw = optax.adamw
def adamw(*args, **kwargs):
    decay = kwargs.get("weight_decay")
    if callable(decay):
        kwargs["weight_decay"] = lambda count: decay(count + 1)
    return _adamw(*args, **kwargs)
adamw.__module__ = "optax._src.alias"
optax.adamw = adamw
""",
}


CHAIN = """
import os, sys, importlib.util
here = os.path.dirname(os.path.abspath(__file__))
entries = [os.path.abspath(e) if e else "" for e in sys.path]
for entry in entries[entries.index(here) + 1:]:
    path = os.path.join(entry, "sitecustomize.py")
    if entry and os.path.isfile(path):
        spec = importlib.util.spec_from_file_location("_next_sitecustomize", path)
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
        break
"""


def team(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / f"team-{name}"
    shutil.copytree(TEAMS / name, folder)
    return folder


def candidate(tmp_path: Path, plant: str) -> Path:
    """A candidate interpreter: this one, with ``plant`` changed in optax at start-up."""
    site = tmp_path / f"plant-{plant}"
    site.mkdir()
    (site / "sitecustomize.py").write_text(PLANTS[plant] + CHAIN)
    python = tmp_path / f"cand-{plant}" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/bash\nexport PYTHONPATH="{site}:$PYTHONPATH"\nexec {PYTHON} "$@"\n')
    python.chmod(0o755)
    return python


def line_of(folder: Path, text: str, file: str = "train.py") -> str:
    lines = (folder / file).read_text().splitlines()
    return f"{file}:{next(i for i, line in enumerate(lines, 1) if text in line)}"


def record(folder: Path, command: str, trace: Path | None) -> subprocess.CompletedProcess[str]:
    """Run ``command`` in ``folder`` like the gate does, recording into ``trace`` (None: recorder off)."""
    env = run_command.environment(PYTHON, folder, trace or folder / "unused")
    if trace is None:
        env.pop("OPTAX_GATE_TRACE")
    return subprocess.run(["bash", "-c", command], cwd=folder, env=env, capture_output=True, text=True, timeout=300)


def npz_arrays(path: Path) -> dict[str, Any]:
    import numpy as np

    with np.load(path) as data:
        return {k: data[k].tobytes() for k in data}


def leaf_record(values: Any, dtype: Any = "float32") -> Any:
    import base64
    import struct

    fmt = {"float32": "f", "int32": "i"}[dtype]
    raw = struct.pack(f"<{len(values)}{fmt}", *values)
    return {
        "dtype": dtype,
        "shape": [len(values)],
        "n": len(values),
        "stride": 1,
        "data": base64.b64encode(raw).decode(),
        "sha256": str(hash(raw)),
    }


def write_trace(folder: Path, events: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True)
    lines = [json.dumps({"trace": 1, "pid": 1, "start": 0.0, "argv": []})]
    for seq, event in enumerate(events, 1):
        lines.append(json.dumps({**event, "seq": seq}))
    (folder / "trace-1.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def call_event(site: Any, api: Any, call: Any, out: Any, inputs: Any = (), **extra: Any) -> Any:
    return {
        "site": site,
        "api": api,
        "call": call,
        "args": {"positional": [], "keyword": {}},
        "warnings": [],
        "in": list(inputs),
        "out": {"tree": "PyTreeDef(*)", "paths": [""], "leaves": [out]},
        **extra,
    }
