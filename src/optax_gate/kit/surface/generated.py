"""Table entries generated from the signature and docstring of every public callable that no hand-written table
knows (needs the environment's optax).

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from typing import Any

from optax_gate.kit.surface import calls as surface_calls
from optax_gate.kit.surface import enumeration as surface_enum
from optax_gate.kit.surface import table as surface_table


def _jnp() -> Any:
    import jax.numpy as jnp

    return jnp


def _key() -> Any:
    import jax

    return jax.random.key(0)


def _log_probs() -> Any:
    return _jnp().log(surface_calls.probs() + 0.1)


#: Parameter name -> a maker of the value a generated call gives it: the
#: inputs of the hand-written calls (``surface_calls.tree`` a small float32
#: PyTree, ``logits`` a batch of 2 over 3 classes, ``probs`` its target
#: distributions) and the schedule arguments of ``composition``.
VALUES: dict[str, Any] = {
    # losses
    **{n: surface_calls.logits for n in ("predictions", "logits", "scores", "embeddings", "anchors")},
    **{n: surface_calls.probs for n in ("targets", "labels", "positives")},
    "negatives": lambda: -surface_calls.logits(),
    **{n: _log_probs for n in ("log_predictions", "log_targets")},
    # trees and the rest
    **{
        n: surface_calls.tree
        for n in (
            "tree",
            "tree_x",
            "tree_y",
            "other_tree",
            "target_tree",
            "input_tree",
            "updates",
            "params",
            "grads",
            "moment",
            "moments",
            "new_tensors",
            "old_tensors",
        )
    },
    "scalar": lambda: 0.5,
    "fill_value": lambda: 2.0,
    "decay": lambda: 0.9,
    "eps": lambda: 1e-8,
    "order": lambda: 2,
    "count": lambda: _jnp().asarray(3),
    "condition": lambda: True,
    "key": _key,
    "rng_key": _key,
    "rng": _key,
    "dtype": lambda: _jnp().float16,
    "x": lambda: _jnp().array([3.0, 4.0]),
    "microbatch_size": lambda: 1,
    "max_norm": lambda: 1.0,
    "l2_norm_clip": lambda: 1.0,
    "step_size": lambda: 0.1,
    "learning_rate": lambda: 0.1,
    "matrix": lambda: _jnp().array([[2.0, 0.5], [0.5, 1.0]]),
    "predictor_outputs": lambda: _jnp().array([0.5, 0.3]),
    **{n: lambda: 0.1 for n in ("min_norm", "min_rms", "alpha")},
    "scale": lambda: 0.5,
    "inputs": surface_calls.tree,
    "gradient_step": lambda: _jnp().asarray(1),
    "max_squared_norm": lambda: 1.0,
    "global_l2_norm_clip": lambda: 1.0,
    "steps": lambda: _jnp().asarray(2),
    "update_period": lambda: 2,
    "lower": lambda: -1.0,
    "upper": lambda: 1.0,
}


def _schedule_values() -> dict[str, Any]:
    from optax_gate.kit.surface import composition

    return {
        **{k: (lambda v=v: v) for k, v in composition.SCHEDULE_ARGUMENTS.items()},
        "interpolate_type": lambda: "linear",
    }


@dataclass
class Generated:
    """What :func:`install` added: canonical path -> kind, alias -> canonical
    path, the callables left out with the reason, and those a hand-written
    module contracts (:data:`HAND_WRITTEN`) with that module."""

    kinds: dict[str, str] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)
    left_out: dict[str, str] = field(default_factory=dict)
    by_hand: dict[str, str] = field(default_factory=dict)


#: Public paths that no table knows (they are absent at the pinned 0.2.6) and
#: that no contract can be generated for (their required parameter is the
#: caller's own function), contracted by a hand-written module instead: path
#: -> that module. ``test_known`` passes for them where they are public.
HAND_WRITTEN: dict[str, str] = {
    "optax.microbatch": "tests/contracts/test_microbatching.py",
    "optax.microbatching.microbatch": "tests/contracts/test_microbatching.py",
    "optax.microbatching.micro_grad": "tests/contracts/test_microbatching.py",
}


def _returns(obj: Any) -> str:
    """The return annotation and the docstring's ``Returns:`` section, as text."""
    doc = inspect.getdoc(obj) or ""
    at = doc.find("Returns:")
    section = doc[at:].split("\n\n", 1)[0] if at >= 0 else ""
    return f"{getattr(obj, '__annotations__', {}).get('return', '')} {section}"


def kind_of(paths: list[str], obj: Any) -> str:
    """The kind (``surface_enum.KINDS``) of one public object known under ``paths``."""
    returns = _returns(obj)
    if (
        re.search(r"GradientTransformation|gradient transformation", returns)
        and "Callable[" not in returns.split(" ")[0]
    ):
        return "transformation"
    kinds = {surface_enum.classify(p, obj) for p in paths} - {"other"}
    return min(kinds) if kinds else "other"


def _required(obj: Any) -> list[inspect.Parameter]:
    return [
        p
        for p in inspect.signature(obj).parameters.values()
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


def _missing(obj: Any, known: Any) -> str:
    """Why ``obj`` cannot be called by name with ``known`` values, or ''."""
    try:
        required = _required(obj)
    except (TypeError, ValueError) as exc:
        return f"no signature to read ({type(exc).__name__})"
    names = [p.name for p in required if p.name not in known]
    if names:
        return (
            f"required parameter{'s' if len(names) > 1 else ''} "
            + ", ".join(f"`{n}`" for n in names)
            + " ha"
            + ("ve" if len(names) > 1 else "s")
            + " no value by name in the generator "
            "(optax_gate.kit.surface.generated.VALUES, surface_build.by_name): a function, model or "
            "array layout of the caller's own"
        )
    return ""


def _described(obj: Any, name: str) -> str:
    """The text of parameter ``name`` in the ``Args:`` section of ``obj``'s
    docstring (Google style, as optax writes them), or ''."""
    doc = inspect.getdoc(obj) or ""
    args = doc.split("Args:", 1)[1] if "Args:" in doc else ""
    found = re.search(rf"^\s*{re.escape(name)}\s*(?:\([^)]*\))?:(.*(?:\n\s{{4,}}.*)*)", args, re.M)
    return " ".join(found[1].split()) if found else ""


def _integer(obj: Any, name: str) -> bool:
    """Whether the docstring describes parameter ``name`` as integer labels or
    indices (``softmax_cross_entropy_with_integer_labels``' ``labels``)."""
    return bool(
        re.search(r"^(integer|the integer|class ind)|\bintegers? (specifying|labels)", _described(obj, name), re.I)
    )


def call_by_name(obj: Any, values: dict[str, Any]) -> Any:
    """``call(fn)`` for ``surface_calls.CALLS``: ``fn`` called with each
    required parameter of ``obj``'s signature made from ``values``, in
    signature order (positionally, keyword-only ones by keyword: the sweep's
    loss checks read a loss's inputs off the positional arguments)."""
    required = _required(obj)
    integer = {p.name for p in required if p.name in ("labels", "targets") and _integer(obj, p.name)}
    values = {**values, **{n: surface_calls.ints for n in integer}}

    def call(fn: Any) -> Any:
        args = [values[p.name]() for p in required if p.kind != p.KEYWORD_ONLY]
        kwargs = {p.name: values[p.name]() for p in required if p.kind == p.KEYWORD_ONLY}
        return fn(*args, **kwargs)

    return call


def _group(public: dict[str, Any]) -> list[list[str]]:
    """Public paths grouped by the object they name, each group sorted with
    its canonical path first (fewest dots, then alphabetical)."""
    groups: dict[int, list[str]] = {}
    for path, obj in public.items():
        groups.setdefault(id(obj), []).append(path)
    return [sorted(g, key=lambda p: (p.count("."), p)) for g in groups.values()]


def generate(public: dict[str, Any], known: dict[str, str]) -> tuple[Generated, dict[str, Any], dict[str, Any]]:
    """Entries for every public object of ``public`` (path -> object) none of
    whose paths is in ``known`` (path -> canonical path of the hand-written
    tables); a new path of a known object is an alias of its canonical path.
    Returns what was generated, the new ``TRANSFORMATIONS`` entries and the
    new ``CALLS`` entries."""
    out, transformations, calls = Generated(), {}, {}
    schedule_values = {**VALUES, **_schedule_values()}
    for paths in _group(public):
        known_paths = [p for p in paths if p in known]
        if known_paths:
            out.aliases.update({p: known[known_paths[0]] for p in paths if p not in known})
            continue
        canonical, aliases, obj = paths[0], tuple(paths[1:]), public[paths[0]]
        kind = kind_of(paths, obj)
        out.kinds[canonical] = kind
        out.aliases.update({a: canonical for a in aliases})
        module = next((HAND_WRITTEN[p] for p in paths if p in HAND_WRITTEN), None)
        if module:
            out.by_hand[canonical] = module
            continue
        if kind == "transformation":
            reason = _missing(obj, surface_build_names())
            if reason:
                out.left_out[canonical] = reason
                continue
            transformations[canonical] = surface_table.Entry(canonical, aliases=aliases, generated=True)
            continue
        values = schedule_values if kind == "schedule" else VALUES
        reason = _missing(obj, values)
        if reason:
            out.left_out[canonical] = reason
            continue
        calls[canonical] = (kind, aliases, call_by_name(obj, values))
    return out, transformations, calls


def surface_build_names() -> dict[str, Any]:
    """The names ``surface_build.fill`` fills a transformation's required parameters by."""
    from optax_gate.kit.surface import build as surface_build

    return surface_build.by_name()


def hand_written() -> dict[str, str]:
    """Path -> canonical path of every name the hand-written tables know."""
    out = {p: p for p, e in surface_table.TRANSFORMATIONS.items() if not e.generated}
    out.update({a: e.path for e in surface_table.TRANSFORMATIONS.values() if not e.generated for a in e.aliases})
    tabled = {p: v for p, v in surface_calls.CALLS.items() if p not in GENERATED.kinds}
    out.update({p: p for p in tabled})
    out.update({a: p for p, (_, aliases, _) in tabled.items() for a in aliases})
    out.update({p: p for p in surface_calls.LEFT_OUT if p not in GENERATED.left_out})
    return out


#: What :func:`install` added in this process (empty until it runs).
GENERATED = Generated()


def install() -> Generated:
    """Add the generated entries of this environment's optax to
    ``surface_table.TRANSFORMATIONS`` and ``surface_calls.CALLS``/``LEFT_OUT``
    (once per process; the contract session calls it before collecting) and
    return them. A public sub-module that does not import leaves nothing
    generated (``test_known`` then fails each known path on its own)."""
    if GENERATED.kinds or GENERATED.aliases:
        return GENERATED
    try:
        public = surface_enum.public_callables()
    except ImportError:
        return GENERATED
    made, transformations, calls = generate(public, hand_written())
    surface_table.TRANSFORMATIONS.update(transformations)
    surface_calls.CALLS.update(calls)
    surface_calls.LEFT_OUT.update(made.left_out)
    GENERATED.kinds.update(made.kinds)
    GENERATED.aliases.update(made.aliases)
    GENERATED.left_out.update(made.left_out)
    GENERATED.by_hand.update(made.by_hand)
    return GENERATED


#: The ``guide`` of a generated entry's contracts (``contract`` marker).
GUIDE = (
    "docs: the signature and docstring of the environment's own optax, generated for a public callable no "
    "hand-written table knows (optax_gate.kit.surface.generated)"
)


def guide(api: str, written: str) -> str:
    """The contract marker's guide for ``api``: :data:`GUIDE` where it is
    generated, else ``written`` (the module's own)."""
    return GUIDE if is_generated(api) else written


def is_generated(path: str) -> bool:
    """Whether ``path`` (canonical) has generated, not hand-written, contracts."""
    return path in GENERATED.kinds and path not in GENERATED.by_hand
