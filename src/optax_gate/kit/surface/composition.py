"""Which public Optax callables each public constructor is built from, found by construction in the environment
under test (needs its optax and JAX).

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import sys
import warnings
from typing import Any

#: Required arguments of the schedule factories, by name (beyond ``surface_build.by_name``).
SCHEDULE_ARGUMENTS = {
    "init_value": 1.0,
    "peak_value": 1.0,
    "end_value": 0.1,
    "warmup_steps": 2,
    "decay_steps": 10,
    "transition_steps": 5,
    "decay_rate": 0.5,
    "alpha": 0.0,
    "exponent": 1.0,
    "power": 1.0,
    "value": 0.1,
    "boundaries_and_scales": {5: 0.5},
    "schedules": [lambda count: 0.1, lambda count: 0.01],
    "boundaries": [5],
    "total_steps": 10,
    "max_learning_rate": 1.0,
    "cosine_kwargs": [{"init_value": 1.0, "decay_steps": 10}],
    "min_value": 0.0,
    "max_value": 1.0,
    "period": 10,
    "num_steps": 10,
    "every_k_schedule": 2,
}


def _public() -> dict[str, Any]:
    """Public path -> object, callables and classes of the enumerated modules."""
    import importlib

    from optax_gate.kit.surface import enumeration as surface_enum

    out: dict[str, Any] = {}
    for name in surface_enum.modules():
        try:
            module = importlib.import_module(name)
        except Exception:  # a sub-module that does not import: its names are not reachable
            continue
        for attr in sorted(a for a in dir(module) if not a.startswith("_")):
            obj = getattr(module, attr)
            if (
                inspect.ismodule(obj)
                or not callable(obj)
                or not (getattr(obj, "__module__", "") or "").startswith("optax")
            ):
                continue
            out[f"{name}.{attr}"] = obj
    return out


def _code(obj: Any) -> Any:
    """The code object entered when ``obj`` is called (a class: its ``__init__`` or ``__new__`` defined in optax)."""
    if inspect.isclass(obj):
        for name in ("__init__", "__new__"):
            fn = obj.__dict__.get(name)
            if fn is not None and hasattr(fn, "__code__"):
                return fn.__code__
        return None
    fn = inspect.unwrap(obj) if inspect.isfunction(obj) else obj
    return getattr(fn, "__code__", None)


def _arguments(path: str, obj: Any) -> tuple[Any, dict[str, Any]] | str:
    """(builder or None, keyword arguments) to call ``obj`` with, or why it cannot be."""
    from optax_gate.kit.surface import build as surface_build
    from optax_gate.kit.surface import table as surface_table

    entry = next((e for e in surface_table.TRANSFORMATIONS.values() if path in (e.path, *e.aliases)), None)
    if entry is not None and entry.builder is not None:
        return entry.builder, {}
    overrides = {**(entry.args if entry is not None else {})}
    try:
        params = inspect.signature(obj).parameters
    except (TypeError, ValueError) as exc:
        return f"no signature: {exc}"
    for p in params.values():
        if (
            p.default is p.empty
            and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
            and p.name in SCHEDULE_ARGUMENTS
        ):
            overrides.setdefault(p.name, SCHEDULE_ARGUMENTS[p.name])
        if p.default is p.empty and p.name == "opt":  # MultiSteps' inner optimizer, as the filler's other inner ones
            overrides.setdefault("opt", surface_build.Fresh(surface_build.inner_sgd))
    # float defaults given explicitly (the same values), so that the probe can follow them into the parts
    defaults = {
        p.name: p.default
        for p in params.values()
        if type(p.default) is float and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }
    try:
        return None, {**defaults, **surface_build.fill(obj, overrides)}
    except KeyError as exc:
        return f"a required argument has no value by name: {exc.args[0]}"


def probe() -> dict[str, Any]:
    """Build each public constructor with the sweep's arguments and record the public callables it reaches
    (``reached``), the float hyperparameters it hands on (``passes``) and those it could not build (``not_built``)."""
    import optax

    public = _public()
    codes: dict[Any, list[str]] = {}
    for path, obj in public.items():
        code = _code(obj)
        if code is not None:
            codes.setdefault(code, []).append(path)
    reached: dict[str, list[str]] = {}
    passes: dict[str, dict[str, list[str]]] = {}
    not_built: dict[str, str] = {}
    for path, obj in public.items():
        own = _code(obj)
        got = _arguments(path, obj)
        if isinstance(got, str):
            not_built[path] = got
            continue
        builder, kwargs = got
        # each float hyperparameter its own object, so that a part receiving it is told apart by identity
        floats = {k: float(repr(v)) for k, v in kwargs.items() if type(v) is float}
        kwargs = {**kwargs, **floats}
        entered: set[str] = set()
        handed: dict[str, set[str]] = {}
        depth = [0]

        def profile(
            frame: Any,
            event: Any,
            arg: Any,
            own: Any = own,
            entered: Any = entered,
            depth: Any = depth,
            floats: Any = floats,
            handed: Any = handed,
        ) -> None:
            if event != "call":
                if event == "return" and frame.f_code is own:
                    depth[0] -= 1
                return
            if frame.f_code is own:
                depth[0] += 1
                return
            if depth[0] > 0 and frame.f_code in codes:
                entered.update(codes[frame.f_code])
                if floats:
                    args = frame.f_code.co_varnames[: frame.f_code.co_argcount + frame.f_code.co_kwonlyargcount]
                    local = frame.f_locals
                    for outer, value in floats.items():
                        for name in args:
                            if local.get(name) is value:
                                handed.setdefault(outer, set()).update(f"{p}:{name}" for p in codes[frame.f_code])

        sys.setprofile(profile)
        try:
            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
                warnings.simplefilter("ignore")
                builder(obj) if builder is not None else obj(**kwargs)
        except Exception as exc:  # recorded, never guessed
            not_built[path] = f"raised {type(exc).__name__}: {str(exc)[:120]}"
        finally:
            sys.setprofile(None)
        aliases = set(codes.get(own, [path]))
        reached[path] = sorted(entered - aliases)
        kept = {outer: sorted(h for h in hs if h.partition(":")[0] not in aliases) for outer, hs in handed.items()}
        if any(kept.values()):
            passes[path] = {outer: hs for outer, hs in sorted(kept.items()) if hs}
    return {
        "optax": optax.__version__,
        "reached": {k: v for k, v in sorted(reached.items()) if v},
        "passes": dict(sorted(passes.items())),
        "built": len(reached),
        "not_built": not_built,
    }


if __name__ == "__main__":
    print(json.dumps(probe(), sort_keys=True))
