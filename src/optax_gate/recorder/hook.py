"""The recorder's import hook and wrappers (inside the environment under test): the team's Optax calls recorded where they happen (``docs/module-notes.md``)."""

from __future__ import annotations

import functools
import importlib.abc
import inspect
import json
import os
import sys
import threading
import time
import types
import warnings
import weakref
from typing import Any

from optax_gate.recorder import ROOT_ENV, TRACE_ENV, VERSION

#: Classes with init/update: methods wrapped on the class itself.
_METHODS = ("__init__", "init", "update", "gradient_transformation")

_state = threading.local()
#: The recorder's own wrappers. Not an attribute: ``functools.wraps`` copies a function's ``__dict__``, so Optax's
#: ``inject_hyperparams(optax.adam)`` (which wraps the recorded ``adam``) would read as recorded and its
#: transformation go unwrapped (seen: its ``init`` and ``update`` were never recorded).
_RECORDED: "weakref.WeakSet[Any]" = weakref.WeakSet()


def _mark(fn) -> None:
    _RECORDED.add(fn)


def _is_recorded(fn) -> bool:
    try:
        return fn in _RECORDED
    except TypeError:  # not weakly referenceable: never one of ours
        return False
_real_warn = warnings.warn
_installed = [False]


class _Writer:
    def __init__(self, folder: str) -> None:
        self.folder, self.file, self.seq, self.lock = folder, None, 0, threading.Lock()

    def emit(self, event: dict[str, Any]) -> int:
        with self.lock:
            if self.file is None:
                os.makedirs(self.folder, exist_ok=True)
                self.file = open(os.path.join(self.folder, f"trace-{os.getpid()}.jsonl"), "a", encoding="utf-8")
                self.file.write(json.dumps({"trace": VERSION, "pid": os.getpid(), "start": time.time(),
                                            "argv": sys.argv[:20]}) + "\n")
            self.seq += 1
            event["seq"] = self.seq
            self.file.write(json.dumps(event, default=repr) + "\n")
            self.file.flush()
            return self.seq


_writer: _Writer | None = None
_root = ""


@functools.lru_cache(maxsize=4096)
def _team_file(filename: str) -> str | None:
    """``filename`` relative to the team's folder, or None when it is not the team's."""
    if not filename or filename.startswith("<"):
        return None
    path = os.path.realpath(filename)
    if not path.startswith(_root + os.sep):
        return None
    prefix = os.path.realpath(sys.prefix) + os.sep
    if "site-packages" in path.split(os.sep) or path.startswith(prefix):
        return None
    return os.path.relpath(path, _root).replace(os.sep, "/")


def _depth() -> int:
    return getattr(_state, "depth", 0)


def _warn(message, category=None, stacklevel=1, source=None, *, skip_file_prefixes=()):
    """``warnings.warn`` that also notes the warning on the recorded call under way (same frame attribution)."""
    stack = getattr(_state, "warnings", None)
    if stack:
        name = type(message).__name__ if isinstance(message, Warning) else (category or UserWarning).__name__
        stack[-1].append({"category": name, "message": str(message)[:500]})
        _state.noted = (name, str(message)[:500])  # shown next by _show, which must not note it twice
    return _real_warn(message, category, stacklevel + 1, source, skip_file_prefixes=skip_file_prefixes)


_real_show = warnings.showwarning


def _show(message, category, filename, lineno, file=None, line=None):
    """``warnings.showwarning`` that also notes, on the recorded call under
    way, a warning raised from C (NumPy's ``RuntimeWarning: divide by zero``
    never passes through ``warnings.warn``: the trial saw a schedule's
    warning go unrecorded); one :func:`_warn` noted already is not noted again.
    Only warnings the filters show are seen: the same on both sides."""
    stack = getattr(_state, "warnings", None)
    entry = (getattr(category, "__name__", str(category)), str(message)[:500])
    if stack and getattr(_state, "noted", None) != entry:
        stack[-1].append({"category": entry[0], "message": entry[1]})
    _state.noted = None
    return _real_show(message, category, filename, lineno, file, line)


def _signature(args: tuple, kwargs: dict) -> dict[str, Any]:
    from optax_gate.recorder import values
    return {"positional": [values.signature(a) for a in args], "keyword": {k: values.signature(v) for k, v in kwargs.items()}}


#: True while a replay runs: the shadow's host callbacks inside the operations it runs whole (a ``lax.scan`` body)
#: record nothing then (they run on XLA's threads: a module flag, not a thread-local one).
_replaying = [False]


def _values_callback(seq: int, n_in: int, *leaves: Any, device: Any = None) -> None:
    from optax_gate.recorder import values
    if _writer is not None and not _replaying[0]:
        stored = [values.leaf_value(x) for x in leaves]
        _writer.emit({"of": seq, "in": stored[:n_in], "out": stored[n_in:],
                      **({"device": int(device)} if device is not None else {})})


def _device_index():
    """Inside ``shard_map`` or ``pmap`` (named axes in JAX's axis environment):
    the traced index of the device running this copy of the program, so that
    each device's host callback can be told apart (they arrive in any order);
    None elsewhere. Private JAX names, looked up with a fallback."""
    try:
        from jax._src import core as jax_core
        names = tuple(jax_core.get_axis_env().axis_names())
        if not names:
            return None
        import jax
        return jax.lax.axis_index(names if len(names) > 1 else names[0])
    except Exception:
        return None


def _record(event: dict[str, Any], in_leaves: list[Any], out: Any, failed: bool) -> None:
    """Write ``event`` with the values of the call's array inputs (``in``:
    their leaves in the order of ``(args, kwargs)``, taken before the call: an
    ``nnx`` module's variables change in place) and of its result
    (``out``: PyTree structure, leaf paths, leaves). Traced (tracers among
    them): abstract leaves now; in a shadow run (:class:`_Recorded`) the
    values through a host callback each time the program runs, elsewhere
    (a transformation the recorder does not wrap) none (``values``: why)."""
    from optax_gate.recorder import values
    out_leaves, tree, paths = ([], "", []) if failed else values.flatten(out)
    if values.is_traced(in_leaves) or values.is_traced(out_leaves):
        import jax
        arrays = [x for x in out_leaves if values.is_array(x)]
        event["traced"] = True
        if not failed:
            event["out"] = {"tree": tree, "paths": paths, "leaves": [values.abstract_leaf(x) for x in out_leaves]}
        shadow = getattr(_state, "mode", None) == "shadow"
        if not shadow:
            event["values"] = "not recorded: traced inside a transformation the recorder does not wrap (jax.checkpoint in eager code)"
        seq = _writer.emit(event)
        if shadow and not failed and (in_leaves or arrays):
            device = _device_index()
            if device is None:
                jax.debug.callback(functools.partial(_values_callback, seq, len(in_leaves)), *in_leaves, *arrays)
            else:  # one callback per device: each says which it is
                jax.debug.callback(lambda d, *leaves: _values_callback(seq, len(in_leaves), *leaves, device=d), device,
                                   *in_leaves, *arrays)
        return
    event["in"] = [values.leaf_value(x) for x in in_leaves]
    if not failed:
        event["out"] = {"tree": tree, "paths": paths, "leaves": [values.leaf_value(x) for x in out_leaves]}
    _writer.emit(event)


def _call(api: str, kind: str, fn, args: tuple, kwargs: dict, frame, record_args: tuple | None = None, observed=None,
          extra: dict[str, Any] | None = None):
    """Call ``fn``; record it when ``frame`` (the caller) is the team's
    (``observed(result)`` in place of its result, when given; ``extra``
    fields added to its event)."""
    site = _team_file(frame.f_code.co_filename) if frame is not None and _writer is not None else None
    if site is None or _depth() > 0:
        return _wrap_result(api, fn(*args, **kwargs))
    shown = args if record_args is None else record_args
    event: dict[str, Any] = {"api": api, "call": kind, "site": f"{site}:{frame.f_lineno}", "args": _signature(shown, kwargs),
                             **(extra or {})}
    _state.depth = _depth() + 1
    stack = getattr(_state, "warnings", None)
    if stack is None:
        stack = _state.warnings = []
    stack.append([])
    out, failed = None, False
    from optax_gate.recorder import values
    in_leaves = [x for x in values.flatten((shown, kwargs))[0] if values.is_array(x)]
    try:
        out = fn(*args, **kwargs)
    except BaseException as exc:
        failed = True
        event["exception"] = {"type": type(exc).__name__, "message": str(exc)[:1000]}
        raise
    finally:
        _state.depth -= 1
        event["warnings"] = stack.pop()
        try:
            _record(event, in_leaves, out if observed is None or failed else observed(out), failed)
        except Exception as exc:  # the recording itself failed: say so in the trace, never change the team's result
            event["record_error"] = f"{type(exc).__name__}: {exc}"[:500]
            event.pop("out", None)
            event.pop("in", None)
            _writer.emit(event)
    return _wrap_result(api, out)


def _wrap_function(fn, api: str, kind: str = "call"):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return _call(api, kind, fn, args, kwargs, sys._getframe(1))
    _mark(wrapper)
    wrapper.__optax_gate_api__ = api
    return wrapper


def _wrap_result(api: str, out: Any) -> Any:
    """Wrap the init/update of a GradientTransformation, or a returned plain function."""
    if isinstance(out, tuple) and hasattr(out, "_fields") and {"init", "update"} <= set(out._fields):
        if _is_recorded(out.update):
            return out
        return out._replace(init=_wrap_function(out.init, api, "init"), update=_wrap_function(out.update, api, "update"))
    if isinstance(out, types.FunctionType) and not _is_recorded(out):
        return _wrap_function(out, api, "()")
    return out


def _wrap_method(cls: type, name: str, api: str) -> None:
    original = cls.__dict__.get(name)
    if not isinstance(original, types.FunctionType) or _is_recorded(original):
        return
    kind = "call" if name == "__init__" else name

    @functools.wraps(original)
    def method(self, *args, **kwargs):
        return _call(api, kind, original, (self, *args), kwargs, sys._getframe(1), record_args=args)
    _mark(method)
    setattr(cls, name, method)


def _public_modules(package: types.ModuleType) -> list[types.ModuleType]:
    """``package`` and its public submodules already imported, ``package`` first."""
    name = package.__name__
    subs = sorted((m for n, m in list(sys.modules.items())
                   if m is not None and n.startswith(name + ".") and not any(p.startswith("_") for p in n.split("."))),
                  key=lambda m: m.__name__)
    return [package, *subs]


def patch_optax(optax: types.ModuleType) -> int:
    """Wrap the public callables of ``optax`` and its public submodules; return how many."""
    wrappers: dict[int, Any] = {}
    for module in _public_modules(optax):
        for name, obj in list(vars(module).items()):
            if name.startswith("_") or isinstance(obj, types.ModuleType):
                continue
            if getattr(obj, "__module__", "") is None or not str(getattr(obj, "__module__", "")).startswith("optax"):
                continue
            if inspect.isclass(obj):
                if not issubclass(obj, tuple) and callable(getattr(obj, "init", None)) and callable(getattr(obj, "update", None)):
                    for meth in _METHODS:
                        _wrap_method(obj, meth, f"{module.__name__}.{name}")
                continue
            if not callable(obj) or _is_recorded(obj):
                continue
            if id(obj) not in wrappers:
                wrappers[id(obj)] = _wrap_function(obj, f"{module.__name__}.{name}")
            setattr(module, name, wrappers[id(obj)])
    return len(wrappers)


def patch_nnx(nnx: types.ModuleType) -> None:
    """Wrap ``flax.nnx.Optimizer.update`` (its recorded result is the
    optimizer's state after the update and, when the model is passed to it as
    in flax 0.11 and later, the model's: ``{"optimizer", "model"}``, the
    params where the team keeps them) and ``flax.nnx``'s transformations
    (:data:`NNX_TRANSFORMS`, as :func:`_transform` says)."""
    for name, state in NNX_TRANSFORMS.items():
        if callable(getattr(nnx, name, None)):
            setattr(nnx, name, _transform(getattr(nnx, name), f"flax.nnx.{name}", graph=True, state=state,
                                          replay=name in REPLAYED))
    cls = getattr(nnx, "Optimizer", None)
    original = cls.__dict__.get("update") if cls is not None else None
    if not isinstance(original, types.FunctionType):
        return

    def observed(self, *args, **kwargs):
        original(self, *args, **kwargs)
        models = [n for n in _graph_nodes(args, kwargs) if n is not self]
        if not models:  # an Optimizer that holds its model (flax before 0.11): its state holds the params
            return nnx.state(self)
        return {"optimizer": nnx.state(self), "model": nnx.state(models[0] if len(models) == 1 else tuple(models))}

    @functools.wraps(original)
    def update(self, *args, **kwargs):
        # the Optax API that built the optimizer's transformation (``optax.adamw``): what the update computes with
        via = getattr(getattr(getattr(self, "tx", None), "update", None), "__optax_gate_api__", None)
        _call("flax.nnx.Optimizer", "update", functools.partial(observed, self), args, kwargs, sys._getframe(1),
              extra={"via": via} if via else None)
    _mark(update)
    cls.update = update


#: A team function's shadow runs at its first :data:`SHADOW_FIRST` calls, then at each call whose number is a power
#: of two (16, 32, 64, ...): the values inside a step of a long run are sampled, the results the team gets are
#: recorded at every call.
SHADOW_FIRST = 8


def sampled(n: int) -> bool:
    """Whether the ``n``-th (1-based) call of a team function runs its shadow (see :data:`SHADOW_FIRST`)."""
    return n <= SHADOW_FIRST or (n & (n - 1)) == 0


def _eager(args: tuple, kwargs: dict) -> bool:
    import jax
    from optax_gate.recorder import values
    return not values.is_traced(jax.tree_util.tree_leaves((args, kwargs)))


def _graph_nodes(args: tuple, kwargs: dict) -> list[Any]:
    """The ``flax.nnx`` graph nodes (modules, optimizers) among a call's arguments, each once."""
    nnx = sys.modules.get("flax.nnx")
    kind = getattr(nnx, "Pytree", None) or getattr(nnx, "Object", None)
    if kind is None:
        return []
    nodes: dict[int, Any] = {}
    for x in (*args, *kwargs.values()):
        items = x if isinstance(x, (tuple, list)) else x.values() if isinstance(x, dict) else (x,)
        for node in items:
            if isinstance(node, kind):
                nodes.setdefault(id(node), node)
    return list(nodes.values())


def _run_shadow(shadow, args: tuple, kwargs: dict, graph: bool) -> None:
    """Run ``shadow`` once in shadow mode (the Optax calls it traces add host
    callbacks) under the shadow's own JAX user context; on a copy of the
    ``nnx`` graph nodes among the arguments when ``graph`` (``nnx.clone``: the
    team's model, optimizer and RNG streams are not stepped by it). Its
    results are dropped; an exception it raises is left to the real call."""
    import jax
    _state.mode = "shadow"
    try:
        with _shadow_context[0]("optax-gate-shadow"):
            if graph:
                from flax import nnx
                args, kwargs = nnx.clone((args, kwargs))
            jax.block_until_ready(jax.tree_util.tree_leaves(shadow(*args, **kwargs)))
        jax.effects_barrier()
    except Exception:  # the real call raises it for the team
        pass
    finally:
        _state.mode = None


def _run_replay(shadow, args: tuple, kwargs: dict, graph: bool, api: str, site: str) -> None:
    """Replay ``shadow`` equation by equation (``optax_gate.recorder.replay``)
    under the shadow's JAX user context, Optax's wrappers passing through, on
    a clone of the ``nnx`` graph nodes; write ``{"replay": api, "site", ...}``."""
    import jax
    from optax_gate.recorder import REPLAY_ENV, replay
    if os.environ.get(REPLAY_ENV) == "0":
        return
    _state.depth = _depth() + 1
    _replaying[0] = True
    try:
        with _shadow_context[0]("optax-gate-shadow"):
            if graph:
                from flax import nnx
                args, kwargs = nnx.clone((args, kwargs))
            found = replay.replay(shadow, args, kwargs, _team_file, graph)
        jax.effects_barrier()
    except Exception as exc:  # the team's program is not concerned
        found = {"error": f"{type(exc).__name__}: {exc}"[:300]}
    finally:
        _replaying[0] = False
        _state.depth -= 1
    if _writer is not None:
        _writer.emit({"replay": api, "site": site, **found})


class _Recorded:
    """A function the team transformed (``jax.jit``, ``flax.nnx.jit``,
    ``jax.grad``, ``flax.nnx.value_and_grad``, ``jax.vmap``, ``flax.nnx.scan``,
    ``jax.pmap``, ``jax.shard_map``, ... called from its files). A call from
    eager code runs a *shadow* first (at the calls :func:`sampled` picks):
    the same function transformed again, without buffer donation, whose
    Optax calls insert host callbacks (``jax.debug.callback``) that record
    their values (:func:`_run_shadow`); its results are dropped. Then the
    real function runs, compiled exactly as without the recorder (the
    wrappers of Optax pass through while it is traced), and its results are
    recorded at the call site (``api`` ``jax.jit(<name>)``,
    ``flax.nnx.jit(<name>)``, ...) and returned untouched; for an ``nnx``
    transformation that steps the team's state (``graph``), the recorded
    result is ``(result, nnx.state(graph nodes among the arguments))``: the
    params and optimizer state after the step, where the team keeps them.

    Host callbacks change how XLA fuses a program, and with it the last bits
    of some results (seen: a float32 loss 1 ULP apart), so they never enter
    the team's own program: the shadow is traced and compiled under a JAX
    user context of its own (``jax.make_user_context``: JAX's tracing and
    compilation caches key on it), so no traced jaxpr of the shadow (its own,
    a ``lax.scan`` body's, an inner jit's) is reused by the real program
    (seen: without it the real program reused the shadow's jaxpr). A call with tracers (inside another
    transformation) runs the real function only."""

    def __init__(self, real, shadow, name: str, graph: bool = False, state: bool = False, replay: bool = False) -> None:
        self._real, self._shadow, self._name, self._graph, self._state = real, shadow, name, graph, state
        self._replay = replay
        self._calls = 0
        functools.update_wrapper(self, real)

    def __getattr__(self, name):
        return getattr(self._real, name)

    def __get__(self, obj, objtype=None):
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args, **kwargs):
        frame = sys._getframe(1)
        site = _team_file(frame.f_code.co_filename)
        if site is None or _depth() > 0 or getattr(_state, "mode", None) or not _eager(args, kwargs):
            return self._real(*args, **kwargs)
        self._calls += 1
        if _shadow_context[0] is not None and sampled(self._calls):  # a JAX without user contexts: the call site only
            _run_shadow(self._shadow, args, kwargs, self._graph)
            if self._calls == 1 and self._replay:  # a whole step: where a difference is born, equation by equation
                _run_replay(self._shadow, args, kwargs, self._graph, self._name, f"{site}:{frame.f_lineno}")
        observed = None
        if self._state:
            nodes = _graph_nodes(args, kwargs)
            if nodes:
                from flax import nnx

                def observed(out):
                    return (out, nnx.state(tuple(nodes)))
        # the real program: traced inside a recorded call (depth 1), so Optax's wrappers add nothing to it
        return _call(self._name, "call", self._real, args, kwargs, frame, observed=observed)


_shadow_context: list[Any] = [None]

#: Options of a transformation the shadow drops (it must not donate the team's buffers).
_DONATION = ("donate_argnums", "donate_argnames")


def _transform(real_transform, api: str, graph: bool = False, state: bool = False, replay: bool = False):
    """``real_transform`` (``jax.jit``, ``flax.nnx.scan``, ...) such that a
    function transformed from the team's files becomes a :class:`_Recorded`
    named ``api(<function's name>)``; its options pass through, and a
    decorator with options (``@nnx.jit(donate_argnames=...)``) too.
    ``replay``: its first call is also replayed equation by equation (a whole
    step: :data:`REPLAYED`)."""
    if _is_recorded(real_transform):
        return real_transform

    @functools.wraps(real_transform)
    def transform(fun=None, *args, **kwargs):
        if fun is None or not callable(fun):
            if fun is None:
                return functools.partial(transform, *args, **kwargs)
            return real_transform(fun, *args, **kwargs)
        real = real_transform(fun, *args, **kwargs)
        if _team_file(sys._getframe(1).f_code.co_filename) is None or not callable(real):
            return real
        shadow = real_transform(fun, *args, **{k: v for k, v in kwargs.items() if k not in _DONATION})
        name = getattr(fun, "__name__", None) or getattr(getattr(fun, "func", None), "__name__", "function")
        return _Recorded(real, shadow, f"{api}({name})", graph=graph, state=state, replay=replay)
    _mark(transform)
    return transform


def _scan(real_scan, api: str):
    """``jax.lax.scan`` that, called from the team's eager code, runs a shadow
    first (the calls :func:`sampled` picks, counted per line) and records its
    result (the final carry and the stacked outputs) at the call site as
    ``jax.lax.scan(<body's name>)``."""
    if _is_recorded(real_scan):
        return real_scan
    counts: dict[tuple[str, int], int] = {}

    @functools.wraps(real_scan)
    def scan(f, *args, **kwargs):
        frame = sys._getframe(1)
        site = _team_file(frame.f_code.co_filename)
        if site is None or _depth() > 0 or getattr(_state, "mode", None) or not _eager(args, kwargs):
            return real_scan(f, *args, **kwargs)
        key = (site, frame.f_lineno)
        counts[key] = counts.get(key, 0) + 1
        if _shadow_context[0] is not None and sampled(counts[key]):
            _run_shadow(functools.partial(real_scan, f), args, kwargs, False)
            if counts[key] == 1:
                _run_replay(functools.partial(real_scan, f), args, kwargs, False, f"{api}({getattr(f, '__name__', 'function')})",
                            f"{site}:{frame.f_lineno}")
        return _call(f"{api}({getattr(f, '__name__', 'function')})", "call", real_scan, (f, *args), kwargs, frame,
                     record_args=args)
    _mark(scan)
    return scan


#: Transformations of a whole step, whose first call is replayed equation by equation (``recorder/replay.py``).
REPLAYED = ("jit", "pmap", "shard_map", "scan")
#: The JAX transformations whose functions the team's step lives in: wrapped as :func:`_transform` says.
JAX_TRANSFORMS = ("jit", "grad", "value_and_grad", "vmap", "pmap")
#: ``flax.nnx``'s, with the team's graph nodes copied for the shadow; ``True``: the state after the call is recorded.
NNX_TRANSFORMS = {"jit": True, "scan": True, "pmap": True, "grad": False, "value_and_grad": False, "vmap": False}
#: ``shard_map`` is not wrapped: a team jits it (``jax.jit(jax.shard_map(step, ...))``), and the jit's shadow sees the
#: Optax calls inside it; wrapped, the jit ran the shard_map op by op (measured: 12 s against 1.5 s plain for an
#: 8-device step, one compilation per operation).


def patch_jax(jax_module: types.ModuleType) -> None:
    """Wrap ``jax.jit``, ``jax.grad``, ``jax.value_and_grad``, ``jax.vmap``,
    ``jax.pmap`` (a function transformed from the team's
    files becomes a :class:`_Recorded`) and ``jax.lax.scan`` (:func:`_scan`)."""
    if _is_recorded(jax_module.jit):
        return
    make = getattr(jax_module, "make_user_context", None)
    _shadow_context[0] = make(default_value=None) if make is not None else None
    for name in JAX_TRANSFORMS:
        if callable(getattr(jax_module, name, None)):
            setattr(jax_module, name, _transform(getattr(jax_module, name), f"jax.{name}", replay=name in REPLAYED))
    lax = getattr(jax_module, "lax", None)
    if lax is not None and callable(getattr(lax, "scan", None)):
        lax.scan = _scan(lax.scan, "jax.lax.scan")


_PATCHES = {"optax": patch_optax, "flax.nnx": patch_nnx, "jax": patch_jax}


class _Finder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: lets the other finders find a target module and
    wraps its loader's ``exec_module`` so that the module is patched once executed."""

    def __init__(self) -> None:
        self.busy: set[str] = set()

    def find_spec(self, name, path, target=None):
        if name not in _PATCHES or name in self.busy:
            return None
        self.busy.add(name)
        try:
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    break
            else:
                return None
        finally:
            self.busy.discard(name)
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        original = loader.exec_module

        def exec_module(module):
            original(module)
            _PATCHES[name](module)
        loader.exec_module = exec_module
        return spec


def install(folder: str | None = None, root: str | None = None) -> None:
    """Switch the recorder on for this process (once): traces go to
    ``folder`` (default ``$OPTAX_GATE_TRACE``), calls from files under ``root``
    (default ``$OPTAX_GATE_TEAM_ROOT``, else the working folder) are recorded.
    A target module already imported is patched at once."""
    global _writer, _root
    if _installed[0]:
        return
    _installed[0] = True
    _writer = _Writer(folder or os.environ[TRACE_ENV])
    _root = os.path.realpath(root or os.environ.get(ROOT_ENV) or os.getcwd())
    warnings.warn = _warn
    warnings.showwarning = _show
    sys.meta_path.insert(0, _Finder())
    for name, patch in _PATCHES.items():
        if name in sys.modules:
            patch(sys.modules[name])
