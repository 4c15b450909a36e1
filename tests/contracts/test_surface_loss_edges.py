"""Generated edge-input snapshots of every loss of the sweep
(``optax_gate.kit.surface.calls``: the losses ``test_surface_sweep.py`` calls
directly).

``test_loss_edge[path-edge]``: the loss called eagerly on its sweep inputs
changed at one edge, and the reverse-mode gradient of the summed loss with
respect to its first argument; for each of the two outputs the baseline's
outcome (``ok``, ``non-finite`` or ``raises <type>``), its dtype, shape and
which entries are non-finite (``.`` finite, ``X`` not), as a labelled snapshot
of optax 0.2.6 (one line per output, so a drift reads as one finding cause) (``data_regression``; recorded by ``./noxw
-s update-snapshots``).

Edges (``EDGES``; inputs valid per the 0.2.6 docstrings, where they say):

- ``neg_inf_logits``: the last entry (``[-1, -1]``, ``[-1, -1, -1]`` for CTC)
  of the first argument is ``-inf`` (a masked class: its target is 0, its
  integer label another class), for the losses whose first argument is logits
  or log-probabilities (``LOGITS``; a ``-inf`` log-prediction is a zero
  probability);
- ``zero_targets``: the targets (``TARGET_ARG``: the labels, the positives of
  a triplet) all zero (all labels class 0 for integer labels);
- ``empty_batch``: every argument with the first argument's leading (batch)
  axis sliced to size 0.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from optax_gate.kit.corners.losses import sweep_inputs
from optax_gate.kit.surface import build as surface_build
from optax_gate.kit.surface import generated as surface_generated
from optax_gate.kit.surface.calls import CALLS, EXPECT, LOGITS, TARGET_ARG

GUIDE = "docs: optax 0.2.6 losses' docstrings (optax/losses/*.py): the arguments' meaning and shapes"

#: The losses called directly (as ``test_surface_sweep.LOSSES``).
LOSSES = [p for p, (kind, _, _) in CALLS.items() if kind == "loss" and p not in EXPECT and "make_" not in p]

EDGES = ("neg_inf_logits", "zero_targets", "empty_batch")


def edge_inputs(path: str, edge: str) -> tuple[list[Any], dict[str, Any]]:
    """The sweep's arguments of ``path`` changed at ``edge`` (see the module docstring)."""
    positional, kwargs = sweep_inputs(path)
    args = [jnp.asarray(a) if isinstance(a, (jax.Array, np.ndarray)) else a for a in positional]
    if edge == "neg_inf_logits":
        first = jnp.asarray(args[0], jnp.float32)
        args[0] = first.at[(-1,) * first.ndim].set(-jnp.inf)
    elif edge == "zero_targets":
        i = TARGET_ARG.get(path, 1)
        args[i] = jnp.zeros_like(args[i])
    else:
        batch = jnp.shape(args[0])[0]
        args = [a[:0] if isinstance(a, jax.Array) and a.ndim and a.shape[0] == batch else a for a in args]
    return args, kwargs


def _describe(thunk: Any) -> str:
    """``"ok float32[2] .."``, ``"non-finite float32[2] X."`` (``X`` marks a
    non-finite entry; ``|`` between the leaves of a tuple) or ``"raises <type>"``."""
    try:
        out = thunk()
    except Exception as exc:  # the outcome is the exception's type
        return f"raises {type(exc).__name__}"
    leaves = [np.asarray(x) for x in jax.tree.leaves(out) if jnp.issubdtype(jnp.asarray(x).dtype, jnp.inexact)]
    bad = [~np.isfinite(x) for x in leaves]
    marks = " | ".join(
        f"{x.dtype}{list(x.shape)} " + "".join("X" if v else "." for v in b.ravel())
        for x, b in zip(leaves, bad, strict=True)
    )
    return ("non-finite " if any(b.any() for b in bad) else "ok ") + marks


def outcome(path: str, edge: str) -> dict[str, str]:
    """The loss's value and reverse-mode gradient at ``edge`` (keys
    ``loss_value``, ``loss_grad``; see :func:`_describe`)."""
    fn = surface_build.resolve(path)
    args, kwargs = edge_inputs(path, edge)
    first = jnp.asarray(args[0], jnp.float32)

    def total(x: Any) -> Any:
        out = fn(x, *args[1:], **kwargs)
        return sum(
            jnp.sum(leaf) for leaf in jax.tree.leaves(out) if jnp.issubdtype(jnp.asarray(leaf).dtype, jnp.floating)
        )

    return {
        "loss_value": _describe(lambda: fn(*args, **kwargs)),
        "loss_grad": _describe(lambda: jax.grad(total)(first)),
    }


CASES = [(p, e) for p in LOSSES for e in EDGES if e != "neg_inf_logits" or p in LOGITS]


@pytest.mark.parametrize(
    ("path", "edge"),
    [
        pytest.param(
            p,
            e,
            marks=[pytest.mark.contract(api=p, guide=surface_generated.guide(p, GUIDE)), pytest.mark.snapshot],
            id=f"{p}-{e}",
        )
        for p, e in CASES
    ],
)
def test_loss_edge(path: Any, edge: Any, data_regression: Any) -> None:
    """The value and gradient at an edge input: which come out non-finite or raise (baseline snapshot)."""
    data_regression.check(outcome(path, edge))
