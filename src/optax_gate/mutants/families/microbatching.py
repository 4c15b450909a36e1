"""Mutants of ``optax.microbatching`` (``tests/contracts/test_microbatching.py``),
runnable at the pinned 0.2.6, which has no ``optax.microbatching``: each
mutant puts in its place a stand-in written from the 0.2.8 docstrings
(:func:`stand_in`: column-major microbatches, SUM/MEAN/RUNNING_MEAN/CONCAT,
``num_real_microbatches``, the ValueErrors, 0.2.8's errors over an empty batch and
for a batch passed by keyword, ``micro_grad`` over examples)
carrying one fault, so the contracts run, and must fail, on any optax. At a
baseline that has the module the stand-in replaces it the same way.
"""

from __future__ import annotations

import enum
import types
from typing import Any

from optax_gate.mutants.registry import family

mutant = family("microbatching", "tests/contracts/test_microbatching.py")


class AccumulationType(enum.Enum):
    """The docstring's accumulation types."""

    MEAN = enum.auto()
    SUM = enum.auto()
    RUNNING_MEAN = enum.auto()
    CONCAT = enum.auto()


def stand_in(fault: str = "") -> dict[str, Any]:
    """``{"microbatching": module, "microbatch": fn}`` of a stand-in with ``fault``
    (``""``: none; see the mutants below for each)."""
    import collections

    import jax
    import jax.numpy as jnp

    order = "C" if fault == "row-major" else "F"

    def reshape_batch_axis(tree: Any, microbatch_size: Any, axis: Any = 0) -> Any:
        def leaf(x: Any) -> Any:
            return x.reshape((*x.shape[:axis], -1, microbatch_size, *x.shape[axis + 1 :]), order=order)

        return jax.tree.map(leaf, tree)

    def combine(kind: Any, outs: Any, n_run: Any, n: Any) -> Any:
        if kind == AccumulationType.CONCAT:
            stacked = jnp.stack(outs)  # (n, microbatch, ...): column-major back to the batch's order
            return stacked.reshape((-1, *stacked.shape[2:]), order="C" if fault == "concat-order" else "F")
        total = sum(outs[1:], outs[0])
        if kind == AccumulationType.SUM:
            return total - outs[-1] if fault == "sum-last-dropped" else total
        if kind == AccumulationType.MEAN:
            return total if fault == "mean-is-sum" else total / n
        return total / n_run

    def microbatch(
        fun: Any,
        argnums: Any,
        microbatch_size: Any,
        accumulator: Any = AccumulationType.SUM,
        *,
        argnames: Any = (),
        in_axes: Any = 0,
        num_real_microbatches: Any = None,
    ) -> Any:
        if microbatch_size is None and fault != "none-wraps":
            return fun
        argnums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
        names = (argnames,) if isinstance(argnames, str) else tuple(argnames)

        def run(*args: Any, **kwargs: Any) -> Any:
            if microbatch_size is None:
                return fun(*args, **kwargs)
            if (
                fault == "keyword-batch" and len(args) < len(argnums) and kwargs
            ):  # the batch passed by keyword, microbatched
                return run(*args, *kwargs.values())
            batches = {**{i: args[i] for i in argnums}, **{n: kwargs[n] for n in names}}  # by position and by keyword
            sizes = [jax.tree.leaves(b)[0].shape[0] for b in batches.values()]
            if sizes and sizes[0] == 0:
                if (
                    fault == "empty-batch-whole"
                ):  # the sum over no microbatch, the empty concatenation: fun on the empty batch
                    return fun(*args, **kwargs)
                if any(
                    k != AccumulationType.SUM
                    for k in jax.tree.leaves(accumulator, is_leaf=lambda x: isinstance(x, AccumulationType))
                ):
                    raise ValueError("num_microbatches=0 must be positive.")
            if len(set(sizes)) > 1 and fault != "unequal-sizes":
                raise ValueError(f"Batch Arguments must have equal-size batch axes, found {sizes}.")
            if sizes[0] % microbatch_size and fault != "no-divisibility":
                raise ValueError(f"batch_size={sizes[0]} must be divisible by {microbatch_size=}.")
            n = sizes[0] // microbatch_size
            split = {
                key: reshape_batch_axis(jax.tree.map(lambda x: x[: n * microbatch_size], b), microbatch_size)
                for key, b in batches.items()
            }
            n_run = n if num_real_microbatches is None or fault == "num-real-ignored" else num_real_microbatches
            outs = []
            for k in range(n_run):
                a, kw = list(args), dict(kwargs)
                for key, parts in split.items():
                    if isinstance(key, int):
                        a[key] = jax.tree.map(lambda x, k=k: x[k], parts)
                    else:
                        kw[key] = jax.tree.map(lambda x, k=k: x[k], parts)
                outs.append(fun(*a, **kw))
            return jax.tree.map(
                lambda kind, *o: combine(kind, list(o), n_run, n),
                accumulator,
                *outs,
                is_leaf=lambda x: isinstance(x, AccumulationType),
            )

        return run

    Outputs = collections.namedtuple("IndividualOutputs", ["values", "metrics", "aux"])  # type: ignore[name-match]  # optax's name

    def micro_grad(
        fun: Any,
        has_aux: Any = False,
        argnums: Any = 0,
        *,
        batch_argnums: Any = 1,
        keep_batch_dim: Any = True,
        microbatch_size: Any = None,
        accumulator: Any = AccumulationType.SUM,
        transform_fn: Any = lambda x: x,
        metrics_fn: Any = lambda x: None,
        num_real_microbatches: Any = None,
    ) -> Any:
        batch_argnums = (batch_argnums,) if isinstance(batch_argnums, int) else tuple(batch_argnums)
        value_and_grad = jax.value_and_grad(fun if has_aux else (lambda *a: (fun(*a), None)), argnums, has_aux=True)

        def per_example(*example: Any) -> Any:
            args = [a[None] if i in batch_argnums and keep_batch_dim else a for i, a in enumerate(example)]
            (value, aux), grad = value_and_grad(*args)
            if fault == "grad-scaled":
                grad = jax.tree.map(lambda g: g * 0.5, grad)
            return transform_fn(grad), Outputs(value, metrics_fn(grad), aux)

        def run(*args: Any) -> Any:
            batch = jax.tree.leaves(args[batch_argnums[0]])[0].shape[0]
            rows = [per_example(*[a[b] if i in batch_argnums else a for i, a in enumerate(args)]) for b in range(batch)]
            kind = accumulator
            grads = jax.tree.map(lambda *g: combine(kind, list(g), batch, batch), *[r[0] for r in rows])
            extras = Outputs(
                *(
                    jax.tree.map(lambda *v: jnp.stack(v), *[getattr(r[1], f) for r in rows])
                    if getattr(rows[0][1], f) is not None
                    else None
                    for f in Outputs._fields
                )
            )
            return grads, extras

        return run

    module = types.SimpleNamespace(
        AccumulationType=AccumulationType,
        microbatch=microbatch,
        micro_grad=micro_grad,
        reshape_batch_axis=reshape_batch_axis,
    )
    return {"microbatching": module, "microbatch": microbatch}


#: Each mutant: fault of :func:`stand_in` -> what it breaks (registered as ``microbatching-<fault>``).
FAULTS: dict[str, str] = {
    "row-major": "microbatches are split in row-major order (microbatch i holds rows 2i, 2i+1), not the documented "
    "column-major one",
    "concat-order": "CONCAT joins the microbatch outputs in microbatch order without undoing the column-major "
    "split: rows "
    "come back interleaved",
    "mean-is-sum": "MEAN returns the sum of the microbatch outputs",
    "num-real-ignored": "num_real_microbatches is ignored: every microbatch runs",
    "none-wraps": "microbatch_size=None returns a wrapper of fun, not fun itself",
    "no-divisibility": "a batch not divisible by microbatch_size is cut to a multiple silently (no ValueError); "
    "batches of "
    "unequal sizes still raise",
    "grad-scaled": "micro_grad's per-example gradients come out halved",
    "sum-last-dropped": "SUM leaves out the last microbatch's output",
    "empty-batch-whole": "a batch of 0 rows gives fun's result on it (0 for a sum, an empty concatenation) instead of "
    "raising",
    "keyword-batch": "a batch passed by keyword with argnums is microbatched instead of raising IndexError",
}

for _fault, _what in FAULTS.items():
    mutant(f"microbatching-{_fault}", _what)(lambda optax, fault=_fault: stand_in(fault))  # type: ignore[misc]
