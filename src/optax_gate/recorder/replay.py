"""Equation-by-equation replay of a function the team transformed (inside the environment under test), to find
where a difference is born.

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import hashlib
import os
from typing import Any

#: Most equations replayed for one function (a larger program is not replayed: ``too_large``).
MAX_EQUATIONS = 20_000
#: Elements sampled of each of an equation's first :data:`MAX_SAMPLED` outputs (evenly strided).
SAMPLE = 64
MAX_SAMPLED = 4
#: Primitives whose inner program is replayed equation by equation, and the parameter that holds it.
_INNER = {
    "pjit": "jaxpr",
    "jit": "jaxpr",
    "closed_call": "call_jaxpr",
    "core_call": "call_jaxpr",
    "custom_jvp_call": "call_jaxpr",
    "custom_vjp_call": "call_jaxpr",
    "custom_vjp_call_jaxpr": "fun_jaxpr",
    "remat": "jaxpr",
    "checkpoint": "jaxpr",
}
#: Primitives never run in a replay (a host callback: the shadow's; a debug print would print twice).
_SKIPPED = ("debug_callback", "debug_print", "io_callback", "pure_callback")


def _digest(x: Any) -> str:
    import numpy as np

    if "key<" in str(getattr(x, "dtype", "")):
        import jax

        x = jax.random.key_data(x)
    arr = np.asarray(x)
    return hashlib.sha256(str(arr.dtype).encode() + str(arr.shape).encode() + arr.tobytes()).hexdigest()[:24]


def _sample(x: Any) -> dict[str, Any] | None:
    from optax_gate.recorder import values

    try:
        return values.leaf_value(x, cap=SAMPLE, spend=False)
    except Exception:
        return None


def frames_of(eqn: Any, team_file: Any) -> tuple[str, str]:
    """(innermost frame outside JAX, innermost frame of the team's) of an equation, as ``file:line``."""
    try:
        from jax._src import source_info_util

        frames = list(source_info_util.user_frames(eqn.source_info.traceback))
    except Exception:
        return "", ""
    at, team = "", ""
    recorder = os.path.dirname(os.path.abspath(__file__)) + os.sep
    for frame in frames:
        if os.path.abspath(frame.file_name).startswith(recorder):
            continue  # the recorder's own wrapper (an nnx.scan it records): never where an operation is traced
        mine = team_file(frame.file_name)
        if mine is not None and not team:
            team = f"{mine}:{frame.start_line}"
        if not at:
            if mine is not None:
                at = f"{mine}:{frame.start_line}"
            else:
                parts = frame.file_name.replace(os.sep, "/").split("/site-packages/")
                at = f"{parts[-1]}:{frame.start_line}"
        if at and team:
            break
    return at, team


def replay(
    fun: Any, args: tuple[Any, ...], kwargs: dict[str, Any], team_file: Any, graph: bool = False
) -> dict[str, Any]:
    """Trace ``fun(*args, **kwargs)`` to a jaxpr and replay it equation by
    equation (see the module docstring); ``graph``: the arguments hold
    ``nnx`` graph nodes (split into a GraphDef and a state, the state the
    jaxpr's inputs). Returns ``{"eqns": [{"p", "at",
    "team", "in", "out", "val"}, ...], "inputs": [digests of the call's
    array inputs], "input_paths": [their paths in the graph's state, "" for a constant] (graph only)}``, or ``{"error":
    text}`` / ``{"too_large": n}``; never raises."""
    import jax

    leaves: list[Any] = []
    paths: list[str] = []
    try:
        if graph:  # nnx objects cannot be mutated from another trace level: their state goes in as the jaxpr's inputs
            from flax import nnx

            graphdef, state = nnx.split((args, kwargs))

            def pure(state: Any) -> Any:
                a, k = nnx.merge(graphdef, state)
                return fun(*a, **k)

            closed = jax.make_jaxpr(pure)(state)
            pairs = jax.tree_util.tree_flatten_with_path(state)[0]
            leaves = [x for _, x in pairs]
            paths = [
                jax.tree_util.keystr(p) for p, _ in pairs
            ]  # where each input lives: the first that differs is named
        else:
            closed = jax.make_jaxpr(lambda: fun(*args, **kwargs))()
    except Exception as exc:
        return {"error": f"could not be traced again: {type(exc).__name__}: {exc}"[:300]}
    count = _count(closed.jaxpr)
    if count > MAX_EQUATIONS:
        return {"too_large": count}
    rows: list[dict[str, Any]] = []

    def run(jaxpr: Any, consts: Any, inputs: Any, depth: int) -> list[Any]:
        env: dict[Any, Any] = {}

        def read(v: Any) -> Any:
            return v.val if type(v).__name__ == "Literal" else env[v]  # a constant written into the jaxpr

        for v, x in zip(list(jaxpr.constvars) + list(jaxpr.invars), list(consts) + list(inputs), strict=False):
            env[v] = x
        for eqn in jaxpr.eqns:
            ins = [read(v) for v in eqn.invars]
            name = eqn.primitive.name
            inner = eqn.params.get(_INNER.get(name, ""), None)
            branches = eqn.params.get("branches") if name == "cond" else None
            if name in _SKIPPED:
                outs = [None] * len(eqn.outvars)
            elif branches is not None and depth < 16 and hasattr(ins[0], "shape"):  # the branch the index picks
                import numpy as np

                chosen = branches[int(np.clip(int(np.asarray(ins[0])), 0, len(branches) - 1))]
                outs = run(chosen.jaxpr, chosen.consts, ins[1:], depth + 1)
            elif inner is not None and depth < 16:
                sub = getattr(inner, "jaxpr", inner)
                outs = run(sub, getattr(inner, "consts", ()), ins, depth + 1)
            else:
                params = eqn.primitive.get_bind_params(eqn.params)
                if isinstance(params, tuple):  # an older JAX: (subfuns, params)
                    subfuns, params = params
                    ans = eqn.primitive.bind(*subfuns, *ins, **params)
                else:
                    ans = eqn.primitive.bind(*ins, **params)
                outs = list(ans) if eqn.primitive.multiple_results else [ans]
                at, team = frames_of(eqn, team_file)
                arrays = [o for o in outs if hasattr(o, "shape")]
                rows.append(
                    {
                        "p": name,
                        "at": at,
                        "team": team,
                        "in": [_digest(x) if hasattr(x, "shape") else repr(x)[:40] for x in ins],
                        "out": [_digest(o) for o in arrays],
                        "vals": [_sample(o) for o in arrays[:MAX_SAMPLED]],
                    }
                )
            for v, x in zip(eqn.outvars, outs, strict=False):
                env[v] = x
        return [read(v) for v in jaxpr.outvars]

    try:
        run(closed.jaxpr, closed.consts, leaves, 0)
    except Exception as exc:
        return {
            "error": f"could not be replayed at equation {len(rows)}: {type(exc).__name__}: {exc}"[:300],
            "eqns": rows,
        }
    consts = [c for c in closed.consts if hasattr(c, "shape")]
    out = {"eqns": rows, "inputs": [_digest(c) for c in [*consts, *leaves] if hasattr(c, "shape")]}
    if paths and all(hasattr(x, "shape") for x in leaves):  # the graph's state: its inputs follow the constants, named
        out["input_paths"] = [""] * len(consts) + paths
    return out


def _count(jaxpr: Any, depth: int = 0) -> int:
    n = 0
    for eqn in jaxpr.eqns:
        inner = eqn.params.get(_INNER.get(eqn.primitive.name, ""), None)
        n += _count(getattr(inner, "jaxpr", inner), depth + 1) if inner is not None and depth < 16 else 1
    return n
