"""Mutants of flax.nnx: deliberately broken variants that the contracts
of ``tests/contracts/test_nnx.py`` must catch."""

from __future__ import annotations

from typing import Any

from optax_gate.mutants.registry import family

mutant = family("nnx", "tests/contracts/test_nnx.py")


def _nnx_method(cls_name: str, method: str, make: Any) -> dict[str, Any]:
    """Replace ``flax.nnx.<cls_name>.<method>`` by ``make(original)``."""
    from flax import nnx

    cls = getattr(nnx, cls_name)
    setattr(cls, method, make(getattr(cls, method)))
    return {}


def _forcing(attribute: str, value: Any) -> Any:
    """A ``make`` for :func:`_nnx_method`: the call runs with ``self.<attribute>``
    set to ``value``, then restores it (a mode that no longer has its effect)."""

    def make(orig: Any) -> Any:
        def call(self: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
            saved = getattr(self, attribute)
            setattr(self, attribute, value)
            try:
                return orig(self, x, *args, **kwargs)
            finally:
                setattr(self, attribute, saved)

        return call

    return make


@mutant("nnx-optimizer-no-step", "Optimizer.update does not advance the step counter")
def _(optax: Any) -> Any:
    def make(orig: Any) -> Any:
        def update(self: Any, model: Any, grads: Any, /, **kwargs: Any) -> Any:
            step = self.step[...]
            out = orig(self, model, grads, **kwargs)
            self.step[...] = step
            return out

        return update

    return _nnx_method("Optimizer", "update", make)


@mutant("nnx-optimizer-double-step", "Optimizer.update applies the updates twice")
def _(optax: Any) -> Any:
    def make(orig: Any) -> Any:
        def update(self: Any, model: Any, grads: Any, /, **kwargs: Any) -> Any:
            orig(self, model, grads, **kwargs)
            return orig(self, model, grads, **kwargs)

        return update

    return _nnx_method("Optimizer", "update", make)


@mutant("nnx-optimizer-ignores-wrt", "Optimizer tracks every nnx.Param whatever wrt says, and wrt is optional")
def _(optax: Any) -> Any:
    from flax import nnx

    def make(orig: Any) -> Any:
        def init(self: Any, model: Any, tx: Any, *, wrt: Any = None, graph: Any = None) -> None:
            orig(self, model, tx, wrt=nnx.Param, graph=graph)

        return init

    return _nnx_method("Optimizer", "__init__", make)


@mutant("nnx-optimizer-signature", "Optimizer.update takes the gradients first")
def _(optax: Any) -> Any:
    def make(orig: Any) -> Any:
        def update(self: Any, grads: Any, model: Any, **kwargs: Any) -> Any:
            return orig(self, model, grads, **kwargs)

        return update

    return _nnx_method("Optimizer", "update", make)


@mutant("nnx-dropout-ignores-mode", "Dropout drops in eval mode too")
def _(optax: Any) -> Any:
    return _nnx_method("Dropout", "__call__", _forcing("deterministic", False))


@mutant("nnx-dropout-fixed-key", "Dropout draws the same mask on every call (the stream does not advance)")
def _(optax: Any) -> Any:
    import jax
    import jax.numpy as jnp

    def make(orig: Any) -> Any:
        def call(self: Any, inputs: Any, *args: Any, **kwargs: Any) -> Any:
            if self.deterministic or self.rate == 0:
                return inputs
            keep = jax.random.bernoulli(jax.random.key(0), 1 - self.rate, inputs.shape)
            return jnp.where(keep, inputs / (1 - self.rate), 0).astype(inputs.dtype)

        return call

    return _nnx_method("Dropout", "__call__", make)


@mutant("nnx-batchnorm-updates-in-eval", "BatchNorm uses and updates batch statistics in eval mode too")
def _(optax: Any) -> Any:
    return _nnx_method("BatchNorm", "__call__", _forcing("use_running_average", False))


@mutant("nnx-always-eval", "Dropout and BatchNorm behave as in eval mode whatever the mode")
def _(optax: Any) -> Any:
    _nnx_method("Dropout", "__call__", lambda orig: lambda self, inputs, *args, **kwargs: inputs)
    return _nnx_method("BatchNorm", "__call__", _forcing("use_running_average", True))


@mutant("nnx-rngs-ignore-seeds", "Rngs ignores the seeds it is given")
def _(optax: Any) -> Any:
    def make(orig: Any) -> Any:
        def init(self: Any, default: Any = None, **streams: Any) -> None:
            orig(self, 0, **{name: 0 for name in streams})

        return init

    return _nnx_method("Rngs", "__init__", make)


@mutant("nnx-linear-lenient", "Linear pads or truncates its input features, and computes in bfloat16")
def _(optax: Any) -> Any:
    import jax.numpy as jnp

    def make(orig: Any) -> Any:
        def call(self: Any, x: Any, *args: Any, **kwargs: Any) -> Any:
            n = self.in_features
            x = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, max(0, n - x.shape[-1]))])[..., :n]
            return orig(self, x, *args, **kwargs).astype(jnp.bfloat16)

        return call

    return _nnx_method("Linear", "__call__", make)
