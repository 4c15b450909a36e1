"""The small Flax NNX model of the NNX and resume contracts.

Input ``x``: (batch, 3) float32, features on the last axis. Output: (batch, 2)
float32. Layers: Linear(3, 4) -> BatchNorm(4) -> relu -> Dropout(0.5) ->
Linear(4, 2). Streams: ``params`` (initialisation) and ``dropout``.
"""

from __future__ import annotations

from typing import Any

from flax import nnx


class MLP(nnx.Module):  # type: ignore[misc]  # flax is read as Any by the type checker
    """Two ``nnx.Linear`` layers with an ``nnx.BatchNorm`` and an ``nnx.Dropout``."""

    def __init__(self, rngs: nnx.Rngs) -> None:
        self.linear1 = nnx.Linear(3, 4, rngs=rngs)
        self.bn = nnx.BatchNorm(4, rngs=rngs)
        self.dropout = nnx.Dropout(0.5, rngs=rngs)
        self.linear2 = nnx.Linear(4, 2, rngs=rngs)

    def __call__(self, x: Any, rngs: nnx.Rngs | None = None) -> Any:
        """``rngs``: a ``dropout`` stream for this call only (else the module's own)."""
        return self.linear2(self.dropout(nnx.relu(self.bn(self.linear1(x))), rngs=rngs))
