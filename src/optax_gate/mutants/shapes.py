"""The mutant shapes that many families repeat, generated from one table each: a family registers one with a line."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from optax_gate.mutants.patches import (
    loss_post,
    perturbed_under_jit,
    post_process,
    schedule_post,
    value_perturbed_under_jit,
)

#: ``<name>-jit-differs``: the factory ``optax.<attr>`` whose updates are scaled by 1.001 only when traced under
#: ``jax.jit`` (:func:`patches.perturbed_under_jit`), caught by the family's jit-against-eager contracts.
#: Mutant name -> (the factory attribute, what the check prints); the module that registers it in the comment.
_UPDATES = "perturbs the updates by 1e-3 only under jax.jit"
_RESULT = "perturbs the result by 1e-3 only under jax.jit"
JIT_DIFFERS: dict[str, tuple[str, str]] = {
    "adafactor-jit-differs": ("adafactor", _UPDATES),  # adafactor.py
    "adam-jit-differs": ("adam", _UPDATES),  # adam.py
    "adamw-jit-differs": ("adamw", _UPDATES),  # adamw.py
    "decay-jit-differs": ("add_decayed_weights", _UPDATES),  # add_decayed_weights_mask.py
    "aif-jit-differs": ("apply_if_finite", _UPDATES),  # apply_if_finite.py
    "chain-jit-differs": ("chain", _UPDATES),  # chain.py
    "elementwise-clip-jit-differs": ("clip", _RESULT),  # clip.py
    "global-norm-jit-differs": ("clip_by_global_norm", _RESULT),  # clip_by_global_norm.py
    "lion-jit-differs": ("lion", _UPDATES),  # lion.py
    "masked-jit-differs": ("masked", _UPDATES),  # masked.py
    "multi-transform-jit-differs": ("multi_transform", _UPDATES),  # multi_transform.py
    "rmsprop-jit-differs": ("rmsprop", _UPDATES),  # rmsprop.py
    "sgd-jit-differs": ("sgd", _UPDATES),  # sgd.py
    "recipe-jit-differs": ("adamw", "adamw perturbs its updates by 1e-3 only under jax.jit"),  # training_recipes.py
}


def jit_differs(mutant: Callable[..., Callable[[Any], Any]], name: str) -> None:
    """Register the mutant ``name`` of :data:`JIT_DIFFERS` with a family's ``mutant`` decorator
    (``registry.family``), at the place of the call, so the family's order of mutants is kept.

    Raises:
      KeyError: ``name`` is not in the table.
    """
    attr, what = JIT_DIFFERS[name]
    mutant(name, what)(lambda optax: post_process(optax, attr, perturbed_under_jit))


#: ``<name>-jit-differs`` of a schedule or a loss: the value of ``optax.<attr>`` (a schedule's value at a step,
#: a loss) scaled by 1.001 only when its step or first argument is traced under ``jax.jit``
#: (:func:`patches.value_perturbed_under_jit`), caught by the family's jit-against-eager contracts.
#: Mutant name -> (``schedule`` or ``loss``, the attribute); the module that registers it in the comment.
VALUE_JIT_DIFFERS: dict[str, tuple[str, str]] = {
    "constant-jit-differs": ("schedule", "constant_schedule"),  # schedules.py
    "linear-jit-differs": ("schedule", "linear_schedule"),  # schedules.py
    "cosine-jit-differs": ("schedule", "cosine_decay_schedule"),  # schedules.py
    "warmup-cosine-jit-differs": ("schedule", "warmup_cosine_decay_schedule"),  # schedules.py
    "exponential-jit-differs": ("schedule", "exponential_decay"),  # schedules.py
    "piecewise-jit-differs": ("schedule", "piecewise_constant_schedule"),  # schedules.py
    "join-jit-differs": ("schedule", "join_schedules"),  # schedules.py
    "sce-jit-differs": ("loss", "softmax_cross_entropy"),  # losses.py
    "sceil-jit-differs": ("loss", "softmax_cross_entropy_with_integer_labels"),  # losses.py
    "sbce-jit-differs": ("loss", "sigmoid_binary_cross_entropy"),  # losses.py
    "l2-jit-differs": ("loss", "l2_loss"),  # losses.py
    "squared-jit-differs": ("loss", "squared_error"),  # losses.py
    "huber-jit-differs": ("loss", "huber_loss"),  # losses.py
}
_VALUE_PATCHES = {"schedule": (schedule_post, "value"), "loss": (loss_post, "loss")}


def jit_differs_value(mutant: Callable[..., Callable[[Any], Any]], name: str) -> None:
    """Register the mutant ``name`` of :data:`VALUE_JIT_DIFFERS` with a family's ``mutant`` decorator, at the
    place of the call (the family's order of mutants is kept).

    Raises:
      KeyError: ``name`` is not in the table.
    """
    kind, attr = VALUE_JIT_DIFFERS[name]
    patch, what = _VALUE_PATCHES[kind]
    mutant(name, f"perturbs the {what} by 1e-3 only under jax.jit")(
        lambda optax: patch(optax, attr, value_perturbed_under_jit)
    )
