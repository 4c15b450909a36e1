"""The recorder's wrappers of JAX's and ``flax.nnx``'s transformations (inside the environment under test): a step the
team transformed runs a shadow that records the values inside it, then runs untouched and is recorded at its call
site."""

from __future__ import annotations

import functools
import os
import sys
import types
from typing import Any

from optax_gate.recorder import calls, isolate, memory, perturb, process, values


def patch_nnx(nnx: types.ModuleType) -> None:
    """Wrap ``flax.nnx.Optimizer``'s constructor (:func:`_wrap_optimizer_init`) and ``update`` (its recorded result is
    the
    optimizer's state after the update and, when the model is passed to it as
    in flax 0.11 and later, the model's: ``{"optimizer", "model"}``, the
    params where the team keeps them) and ``flax.nnx``'s transformations
    (:data:`NNX_TRANSFORMS`, as :func:`_transform` says)."""
    for name, state in NNX_TRANSFORMS.items():
        if callable(getattr(nnx, name, None)):
            setattr(
                nnx,
                name,
                _transform(getattr(nnx, name), f"flax.nnx.{name}", graph=True, state=state, replay=name in REPLAYED),
            )
    cls = getattr(nnx, "Optimizer", None)
    if cls is not None:
        _wrap_optimizer_init(nnx, cls)
    original = cls.__dict__.get("update") if cls is not None else None
    if cls is None or not isinstance(original, types.FunctionType):
        return

    def observed(self: Any, *args: Any, **kwargs: Any) -> Any:
        original(self, *args, **kwargs)
        models = [n for n in values.graph_nodes(args, kwargs) if n is not self]
        if not models:  # an Optimizer that holds its model (flax before 0.11): its state holds the params
            return nnx.state(self)
        return {"optimizer": nnx.state(self), "model": nnx.state(models[0] if len(models) == 1 else tuple(models))}

    @functools.wraps(original)
    def update(self: Any, *args: Any, **kwargs: Any) -> None:
        # the Optax API that built the optimizer's transformation (``optax.adamw``): what the update computes with
        calls.call(
            "flax.nnx.Optimizer",
            "update",
            functools.partial(observed, self),
            args,
            kwargs,
            sys._getframe(1),
            extra=_via(getattr(self, "tx", None)),
        )

    process.mark(update)
    cls.update = update


def _via(tx: Any) -> dict[str, str]:
    """``{"via": api}``: the Optax API that built ``tx`` (``optax.adamw``), which an optimizer's state and update
    compute with; {} when unknown."""
    api = getattr(getattr(tx, "update", None), "__optax_gate_api__", None)
    return {"via": api} if api else {}


def _wrap_optimizer_init(nnx: types.ModuleType, cls: type) -> None:
    """Wrap ``flax.nnx.Optimizer.__init__``: ``nnx.Optimizer(model, tx, wrt=...)`` called from the team's files is
    recorded as the call ``flax.nnx.Optimizer(...)``, its inputs the model's leaves, its result the optimizer's state
    just built (``nnx.state``: ``step`` and the ``opt_state`` that ``tx.init`` made). Without it the state an Optax
    transformation initialises inside Flax (``MultiSteps``' ``acc_grads``, Adam's moments) is first seen at the
    first ``update``, and a difference born in ``tx.init`` reads as born before the step."""
    original = cls.__dict__.get("__init__")
    if not isinstance(original, types.FunctionType) or process.is_recorded(original):
        return
    # flax constructs a graph node through its metaclass (``pytreelib``): the constructor's caller is the first frame
    # outside flax
    flax_dir = os.path.dirname(os.path.dirname(os.path.abspath(nnx.__file__ or ""))) + os.sep

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        def built(*a: Any, **k: Any) -> Any:
            original(self, *a, **k)
            return nnx.state(self)

        tx = args[1] if len(args) > 1 else kwargs.get("tx")
        calls.call(
            "flax.nnx.Optimizer", "call", built, args, kwargs, _outside(sys._getframe(1), flax_dir), extra=_via(tx)
        )

    process.mark(__init__)
    setattr(cls, "__init__", __init__)  # noqa: B010 (mypy refuses an assignment to __init__)


def _outside(frame: Any, package_dir: str) -> Any:
    """``frame`` or the first frame above it whose file is not under ``package_dir`` (None: none is)."""
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package_dir):
        frame = frame.f_back
    return frame


#: A team function's shadow runs at its first :data:`SHADOW_FIRST` calls, then at each call whose number is a power
#: of two (16, 32, 64, ...): the values inside a step of a long run are sampled, the results the team gets are
#: recorded at every call.
SHADOW_FIRST = 8


def sampled(n: int) -> bool:
    """Whether the ``n``-th (1-based) call of a team function runs its shadow (see :data:`SHADOW_FIRST`)."""
    return n <= SHADOW_FIRST or (n & (n - 1)) == 0


def _eager(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    import jax

    return not values.is_traced(jax.tree_util.tree_leaves((args, kwargs)))


def _run_shadow(
    shadow: Any, args: tuple[Any, ...], kwargs: dict[str, Any], graph: bool, step: str | None = None
) -> None:
    """Run ``shadow`` once in shadow mode (the Optax calls it traces add host
    callbacks) under the shadow's own JAX user context; on a copy of the
    ``nnx`` graph nodes among the arguments when ``graph`` (``nnx.clone``: the
    team's model, optimizer and RNG streams are not stepped by it). Its
    results are dropped; an exception it raises is left to the real call.
    ``step``: the first call of a whole step, whose Optax calls then run alone
    on the baseline's inputs (``optax_gate.recorder.isolate``)."""
    import jax

    process.thread.mode = "shadow"
    isolate.active[0] = step
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
        process.thread.mode = None
        isolate.active[0] = None
    if step is not None:
        isolate.run_pending(_shadow_context[0])


def _run_replay(shadow: Any, args: tuple[Any, ...], kwargs: dict[str, Any], graph: bool, api: str, site: str) -> None:
    """Replay ``shadow`` equation by equation (``optax_gate.recorder.replay``)
    under the shadow's JAX user context, Optax's wrappers passing through, on
    a clone of the ``nnx`` graph nodes; write ``{"replay": api, "site", ...}``."""
    import jax

    from optax_gate.recorder import REPLAY_ENV, replay

    if os.environ.get(REPLAY_ENV) == "0":
        return
    process.thread.depth = process.depth() + 1
    process.replaying[0] = True
    try:
        with _shadow_context[0]("optax-gate-shadow"):
            if graph:
                from flax import nnx

                args, kwargs = nnx.clone((args, kwargs))
            found = replay.replay(shadow, args, kwargs, process.team_file, graph)
        jax.effects_barrier()
    except Exception as exc:  # the team's program is not concerned
        found = {"error": f"{type(exc).__name__}: {exc}"[:300]}
    finally:
        process.replaying[0] = False
        process.thread.depth -= 1
    if process.writer is not None:
        process.writer.emit({"replay": api, "site": site, **found})


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

    def __init__(
        self, real: Any, shadow: Any, name: str, graph: bool = False, state: bool = False, replay: bool = False
    ) -> None:
        self._real, self._shadow, self._name, self._graph, self._state = real, shadow, name, graph, state
        self._replay = replay
        self._calls = 0
        functools.update_wrapper(self, real)

    def __getattr__(self, name: Any) -> Any:
        return getattr(self._real, name)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else functools.partial(self, obj)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        frame = sys._getframe(1)
        site = process.team_file(frame.f_code.co_filename)
        if site is None or process.depth() > 0 or getattr(process.thread, "mode", None) or not _eager(args, kwargs):
            return self._real(*args, **kwargs)
        self._calls += 1
        if self._replay:  # a whole step: in an ensemble member, its state moved 1 ULP at its first call
            args, kwargs = perturb.once(f"{self._name}@{site}:{frame.f_lineno}", args, kwargs)
        if _shadow_context[0] is not None and sampled(self._calls):  # a JAX without user contexts: the call site only
            _run_shadow(
                self._shadow,
                args,
                kwargs,
                self._graph,
                f"{self._name}@{site}:{frame.f_lineno}" if self._calls == 1 and self._replay else None,
            )
            if self._calls == 1 and self._replay:  # a whole step: where a difference is born, equation by equation
                _run_replay(self._shadow, args, kwargs, self._graph, self._name, f"{site}:{frame.f_lineno}")
        if self._calls == 1 and self._replay:  # a whole step: its compiled program's memory
            memory.measure(self._real, args, kwargs, self._graph, self._name, f"{site}:{frame.f_lineno}")
        observed = None
        if self._state:
            nodes = values.graph_nodes(args, kwargs)
            if nodes:
                from flax import nnx

                def observed(out: Any) -> Any:
                    return (out, nnx.state(tuple(nodes)))

        # the real program: traced inside a recorded call (depth 1), so Optax's wrappers add nothing to it
        return calls.call(self._name, "call", self._real, args, kwargs, frame, observed=observed)


_shadow_context: list[Any] = [None]

#: Options of a transformation the shadow drops (it must not donate the team's buffers).
_DONATION = ("donate_argnums", "donate_argnames")


def _transform(real_transform: Any, api: str, graph: bool = False, state: bool = False, replay: bool = False) -> Any:
    """``real_transform`` (``jax.jit``, ``flax.nnx.scan``, ...) such that a
    function transformed from the team's files becomes a :class:`_Recorded`
    named ``api(<function's name>)``; its options pass through, and a
    decorator with options (``@nnx.jit(donate_argnames=...)``) too.
    ``replay``: its first call is also replayed equation by equation (a whole
    step: :data:`REPLAYED`)."""
    if process.is_recorded(real_transform):
        return real_transform

    @functools.wraps(real_transform)
    def transform(fun: Any = None, *args: Any, **kwargs: Any) -> Any:
        if fun is None or not callable(fun):
            if fun is None:
                return functools.partial(transform, *args, **kwargs)
            return real_transform(fun, *args, **kwargs)
        real = real_transform(fun, *args, **kwargs)
        if process.team_file(sys._getframe(1).f_code.co_filename) is None or not callable(real):
            return real
        shadow = real_transform(fun, *args, **{k: v for k, v in kwargs.items() if k not in _DONATION})
        name = getattr(fun, "__name__", None) or getattr(getattr(fun, "func", None), "__name__", "function")
        return _Recorded(real, shadow, f"{api}({name})", graph=graph, state=state, replay=replay)

    process.mark(transform)
    return transform


def _scan(real_scan: Any, api: str) -> Any:
    """``jax.lax.scan`` that, called from the team's eager code, runs a shadow
    first (the calls :func:`sampled` picks, counted per line) and records its
    result (the final carry and the stacked outputs) at the call site as
    ``jax.lax.scan(<body's name>)``."""
    if process.is_recorded(real_scan):
        return real_scan
    counts: dict[tuple[str, int], int] = {}

    @functools.wraps(real_scan)
    def scan(f: Any, *args: Any, **kwargs: Any) -> Any:
        frame = sys._getframe(1)
        site = process.team_file(frame.f_code.co_filename)
        if site is None or process.depth() > 0 or getattr(process.thread, "mode", None) or not _eager(args, kwargs):
            return real_scan(f, *args, **kwargs)
        key = (site, frame.f_lineno)
        counts[key] = counts.get(key, 0) + 1
        args, kwargs = perturb.once(
            f"{api}@{site}:{frame.f_lineno}", args, kwargs
        )  # an ensemble member: its carry and inputs moved 1 ULP
        if _shadow_context[0] is not None and sampled(counts[key]):
            _run_shadow(
                functools.partial(real_scan, f),
                args,
                kwargs,
                False,
                f"{api}@{site}:{frame.f_lineno}" if counts[key] == 1 else None,
            )
            if counts[key] == 1:
                _run_replay(
                    functools.partial(real_scan, f),
                    args,
                    kwargs,
                    False,
                    f"{api}({getattr(f, '__name__', 'function')})",
                    f"{site}:{frame.f_lineno}",
                )
        return calls.call(
            f"{api}({getattr(f, '__name__', 'function')})",
            "call",
            real_scan,
            (f, *args),
            kwargs,
            frame,
            record_args=args,
        )

    process.mark(scan)
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
    if process.is_recorded(jax_module.jit):
        return
    make = getattr(jax_module, "make_user_context", None)
    _shadow_context[0] = make(default_value=None) if make is not None else None
    isolate.context[0] = _shadow_context[0]
    for name in JAX_TRANSFORMS:
        if callable(getattr(jax_module, name, None)):
            setattr(jax_module, name, _transform(getattr(jax_module, name), f"jax.{name}", replay=name in REPLAYED))
    lax = getattr(jax_module, "lax", None)
    if lax is not None and callable(getattr(lax, "scan", None)):
        lax.scan = _scan(lax.scan, "jax.lax.scan")
