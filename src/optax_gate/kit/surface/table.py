"""The table of the public surface: how to build each public transformation, and what the baseline (optax 0.2.6)
does under each protocol property.

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: The optax release of the pinned baseline (``requirements-lock.txt``; a
#: self-test checks they agree): there, a public name the tables do not know
#: is a failure; elsewhere it is ``new, not contracted``.
BASELINE_OPTAX = "0.2.6"


def known_defect(ident: str) -> str:
    """A ledger id, written as a call so the ledger check (tests/meta/kit/test_known_defects.py) finds it."""
    return ident


@dataclass(frozen=True)
class Entry:
    """How to build and what to expect of one public transformation."""

    path: str
    args: dict[str, Any] = field(default_factory=dict)
    builder: Any = None
    needs: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    expect: dict[str, str] = field(default_factory=dict)
    defects: dict[str, str] = field(default_factory=dict)
    left_out: str = ""
    skip_leaves: tuple[str, ...] = ()
    slow: bool = False
    #: Generated from the factory's signature and docstring
    #: (``surface_generated``), not written here.
    generated: bool = False


def _inject(factory: Any) -> Any:
    import optax

    return factory(optax.sgd)(learning_rate=0.1)


def _chain(factory: Any) -> Any:
    import optax

    return factory(optax.scale_by_adam(), optax.scale(-0.1))


def _named_chain(factory: Any) -> Any:
    import optax

    return factory(("adam", optax.scale_by_adam()), ("lr", optax.scale(-0.1)))


#: What a plain ``GradientTransformation`` (not ``...ExtraArgs``) does with
#: an extra keyword argument to ``update``: its ``update(updates, state,
#: params=None)`` has no ``**extra_args``.
_PLAIN = {"unknown_kwarg": "TypeError", "value_float": "TypeError", "value_array": "TypeError"}


def _t(path: str, **kw: Any) -> Entry:
    return Entry(path, **kw)


_T = "optax.transforms."
_ALL_NONFINITE = "nonfinite: ['r0'] ['r1'] ['r2'] ['r3'] ['r4'] ['r5']"
#: A jitted second step compiles again: a scalar of the state is weakly typed
#: after ``init`` and strongly typed after the first ``update`` (checked on
#: reduce_on_plateau and simplified_ademamix with ``jax.typeof(x).weak_type``).
_RECOMPILES = "recompiled 1 time(s)"
#: ``contrib.scale_by_muon()`` with its default ``weight_dimension_numbers=None``
#: on a dict PyTree: ``jax.tree.map`` structure error in ``update``.
_MUON = {p: "ValueError" for p in ("init_update", "scan_carry", "no_recompile", "none_leaf", "zero_grads_finite")} | {
    "jit_eager": "eager step: ValueError",
    "trajectory_finite": "scan: ValueError",
}
_MUON_DEFECT = known_defect("scale-by-muon-default-dimension-numbers")
_ENTRIES = [
    _t("optax.adabelief"),
    _t("optax.adadelta"),
    _t("optax.adafactor"),
    _t("optax.adagrad"),
    _t("optax.adam"),
    _t("optax.adamax"),
    _t("optax.adamaxw"),
    _t("optax.adamw"),
    _t("optax.adan"),
    _t(
        "optax.adaptive_grad_clip",
        expect={**_PLAIN, "init_update": "ValueError"},
        aliases=(_T + "adaptive_grad_clip",),
        skip_leaves=("r5",),
    ),
    _t("optax.add_decayed_weights", expect=_PLAIN, aliases=(_T + "add_decayed_weights",)),
    _t("optax.add_noise", expect=_PLAIN, aliases=(_T + "add_noise",), args={"key": 0}),
    _t("optax.amsgrad"),
    _t("optax.apply_every", expect=_PLAIN),
    _t("optax.apply_if_finite", aliases=(_T + "apply_if_finite",)),
    _t("optax.centralize", expect=_PLAIN),
    _t("optax.chain", aliases=(_T + "chain",), builder=_chain),
    _t("optax.clip", expect=_PLAIN, aliases=(_T + "clip",)),
    _t("optax.clip_by_block_rms", expect=_PLAIN, aliases=(_T + "clip_by_block_rms",)),
    _t("optax.clip_by_global_norm", expect=_PLAIN, aliases=(_T + "clip_by_global_norm",)),
    _t("optax.conditionally_mask", aliases=(_T + "conditionally_mask",)),
    _t("optax.conditionally_transform", aliases=(_T + "conditionally_transform",)),
    _t("optax.contrib.acprop"),
    _t("optax.contrib.ademamix"),
    _t("optax.contrib.adopt"),
    _t("optax.contrib.cocob"),
    _t("optax.contrib.dadapt_adamw"),
    _t("optax.contrib.dog"),
    _t("optax.contrib.dowg"),
    _t("optax.scale_by_factored_rms", expect=_PLAIN),
    _t(
        "optax.contrib.differentially_private_aggregate",
        left_out="needs per-example gradients (a leading batch axis on every leaf), not the representative PyTree",
    ),
    _t(
        "optax.contrib.dpsgd",
        left_out="needs per-example gradients (a leading batch axis on every leaf), not the representative PyTree",
    ),
    _t("optax.contrib.mechanize"),
    _t(
        "optax.contrib.momo",
        expect={"value_float": "AttributeError"},
        needs=("value",),
        defects={"value_float": known_defect("momo-value-python-float")},
    ),
    _t(
        "optax.contrib.momo_adam",
        expect={"value_float": "AttributeError"},
        needs=("value",),
        defects={"value_float": known_defect("momo-value-python-float")},
    ),
    _t("optax.contrib.muon"),
    _t(
        "optax.contrib.normalize",
        expect={**_PLAIN, "zero_grads_finite": _ALL_NONFINITE},
        defects={"zero_grads_finite": known_defect("contrib-normalize-zero-gradient-nan")},
    ),
    _t(
        "optax.contrib.prodigy",
        expect={"zero_grads_finite": _ALL_NONFINITE},
        defects={"zero_grads_finite": known_defect("prodigy-zero-gradient-nan")},
    ),
    _t("optax.contrib.reduce_on_plateau", expect={"no_recompile": _RECOMPILES}, needs=("value",)),
    _t("optax.contrib.sam", expect=_PLAIN),
    _t("optax.contrib.scale_by_acprop", expect=_PLAIN),
    _t("optax.contrib.scale_by_ademamix", expect=_PLAIN),
    _t("optax.contrib.scale_by_adopt", expect=_PLAIN),
    _t("optax.contrib.scale_by_cocob", expect=_PLAIN),
    _t("optax.contrib.scale_by_muon", expect={**_PLAIN, **_MUON}, defects={k: _MUON_DEFECT for k in _MUON}),
    _t("optax.contrib.scale_by_simplified_ademamix", expect={**_PLAIN, "no_recompile": _RECOMPILES}),
    _t("optax.contrib.schedule_free"),
    _t("optax.contrib.schedule_free_adamw"),
    _t("optax.contrib.schedule_free_sgd"),
    _t("optax.contrib.simplified_ademamix", expect={"no_recompile": _RECOMPILES}),
    _t("optax.contrib.sophia", needs=("obj_fn",), slow=True),
    _t("optax.contrib.split_real_and_imaginary", expect=_PLAIN),
    _t("optax.ema", expect=_PLAIN, aliases=(_T + "ema",)),
    _t("optax.flatten", aliases=(_T + "flatten",)),
    _t("optax.freeze", aliases=(_T + "freeze",)),
    _t("optax.fromage"),
    _t("optax.identity", expect=_PLAIN),
    _t("optax.keep_params_nonnegative", expect=_PLAIN, aliases=(_T + "keep_params_nonnegative",)),
    _t("optax.lamb"),
    _t("optax.lars"),
    _t("optax.lbfgs", expect={"no_recompile": _RECOMPILES}, needs=("value", "grad", "value_fn"), slow=True),
    _t("optax.lion"),
    _t("optax.lookahead", left_out="params must be a LookaheadParams pair (fast, slow), not the representative PyTree"),
    _t("optax.masked", aliases=(_T + "masked",)),
    _t("optax.multi_transform", aliases=("optax.partition", _T + "partition")),
    _t("optax.nadam"),
    _t("optax.nadamw"),
    _t("optax.named_chain", aliases=(_T + "named_chain",), builder=_named_chain),
    _t("optax.noisy_sgd"),
    _t("optax.normalize_by_update_norm", expect=_PLAIN),
    _t("optax.novograd"),
    _t("optax.optimistic_adam"),
    _t("optax.optimistic_adam_v2"),
    _t("optax.optimistic_gradient_descent"),
    _t("optax.polyak_sgd", needs=("value",)),
    _t("optax.radam"),
    _t("optax.rmsprop"),
    _t("optax.rprop"),
    _t("optax.scale", expect=_PLAIN),
    _t("optax.scale_by_adadelta", expect=_PLAIN),
    _t("optax.scale_by_adam", expect=_PLAIN),
    _t("optax.scale_by_adamax", expect=_PLAIN),
    _t("optax.scale_by_adan", expect=_PLAIN),
    _t("optax.scale_by_amsgrad", expect=_PLAIN),
    _t(
        "optax.scale_by_backtracking_linesearch",
        expect={"no_recompile": _RECOMPILES},
        needs=("value", "grad", "value_fn"),
        slow=True,
    ),
    _t("optax.scale_by_belief", expect=_PLAIN),
    _t(
        "optax.scale_by_distance_over_gradients",
        expect={
            **_PLAIN,
            "init_update": "leaf r0: float32[1] for float32[]",
            "trajectory_finite": "nonfinite: r1 r2 r3 r4 r5",
        },
        skip_leaves=("r0",),
        defects={
            "init_update": known_defect("distance-over-gradients-scalar-leaf-shape"),
            "trajectory_finite": known_defect("distance-over-gradients-swapped-arguments"),
        },
    ),
    _t("optax.scale_by_lbfgs", expect=_PLAIN),
    _t("optax.scale_by_learning_rate", expect=_PLAIN),
    _t("optax.scale_by_lion", expect=_PLAIN),
    _t("optax.scale_by_novograd", expect=_PLAIN),
    _t("optax.scale_by_optimistic_gradient", expect=_PLAIN),
    _t("optax.scale_by_param_block_norm", expect=_PLAIN),
    _t("optax.scale_by_param_block_rms", expect=_PLAIN),
    _t("optax.scale_by_polyak", needs=("value",)),
    _t("optax.scale_by_radam", expect=_PLAIN),
    _t("optax.scale_by_rms", expect=_PLAIN),
    _t("optax.scale_by_rprop", expect=_PLAIN),
    _t("optax.scale_by_rss", expect=_PLAIN),
    _t("optax.scale_by_schedule", expect=_PLAIN),
    _t("optax.scale_by_sign", expect=_PLAIN),
    _t(
        "optax.scale_by_sm3",
        expect={**_PLAIN, "init_update": "IndexError"},
        skip_leaves=("r0",),
        defects={"init_update": known_defect("sm3-scalar-leaf-index-error")},
    ),
    _t("optax.scale_by_stddev", expect=_PLAIN),
    _t("optax.scale_by_trust_ratio", expect=_PLAIN),
    _t("optax.scale_by_yogi", expect=_PLAIN),
    _t(
        "optax.scale_by_zoom_linesearch",
        expect={"no_recompile": _RECOMPILES},
        needs=("value", "grad", "value_fn"),
        slow=True,
    ),
    _t("optax.selective_transform", aliases=(_T + "selective_transform",)),
    _t("optax.set_to_zero", expect=_PLAIN),
    _t("optax.sgd"),
    _t("optax.sign_sgd"),
    _t(
        "optax.sm3",
        expect={"init_update": "IndexError"},
        skip_leaves=("r0",),
        defects={"init_update": known_defect("sm3-scalar-leaf-index-error")},
    ),
    _t("optax.snapshot", expect=_PLAIN, aliases=(_T + "snapshot",)),
    _t("optax.stateless", expect=_PLAIN),
    _t("optax.stateless_with_tree_map", expect=_PLAIN),
    _t("optax.trace", expect=_PLAIN, aliases=(_T + "trace",)),
    _t("optax.with_extra_args_support"),
    _t("optax.yogi"),
    _t("optax.zero_nans", expect=_PLAIN, aliases=(_T + "zero_nans",)),
    _t("optax.inject_hyperparams", aliases=("optax.schedules.inject_hyperparams",), builder=_inject),
    _t("optax.inject_stateful_hyperparams", aliases=("optax.schedules.inject_stateful_hyperparams",), builder=_inject),
]

#: Canonical path -> entry, for every public transformation factory.
TRANSFORMATIONS: dict[str, Entry] = {e.path: e for e in _ENTRIES}
