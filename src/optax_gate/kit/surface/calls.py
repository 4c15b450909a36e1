"""The table of the public callables that are not transformation factories:
schedules, losses, tree utilities and the rest of ``optax.*``, with one call
each at default or minimal arguments (the sweep of
``tests/contracts/test_surface_sweep.py``).

Each entry: ``(kind, aliases, call)`` where ``call(fn)`` calls the resolved
function once with small inputs (:func:`tree`, :func:`logits`...) and returns
its result; a schedule's ``call`` builds the schedule (the sweep then
evaluates it at :data:`SCHEDULE_STEPS`). ``LEFT_OUT`` names the callables not
called, with the reason. Importing this module imports no library under test.
"""

from __future__ import annotations

from typing import Any

from optax_gate.kit.surface.table import known_defect

#: Steps every schedule is evaluated at: 0, each boundary of the arguments
#: below (5, 10, 20), points between, and past the end.
SCHEDULE_STEPS = (0, 1, 4, 5, 6, 10, 15, 20, 21, 100)


def _np() -> Any:
    import jax.numpy as jnp

    return jnp


def tree() -> dict[str, Any]:
    """A small float32 PyTree with a negative entry: ``{"a": [1, -2], "b": [[0.5, 3]]}``."""
    jnp = _np()
    return {"a": jnp.array([1.0, -2.0]), "b": jnp.array([[0.5, 3.0]])}


def logits() -> Any:
    """Logits of a batch of 2 over 3 classes."""
    return _np().array([[1.0, 2.0, 3.0], [1.0, -1.0, 0.0]])


def probs() -> Any:
    """Target distributions of the same batch (rows sum to 1)."""
    return _np().array([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0]])


def ints() -> Any:
    """Integer labels of the same batch."""
    return _np().array([2, 0])


def signs() -> Any:
    """Binary targets in {-1, 1}."""
    return _np().array([1.0, -1.0])


def _key() -> Any:
    import jax

    return jax.random.key(0)


def _sched(**kw: Any) -> Any:
    return lambda fn: fn(**kw)


def _tree_two(fn: Any) -> Any:
    return fn(tree(), tree())


def _quad_loss(params: Any, inputs: Any, targets: Any) -> Any:
    jnp = _np()
    return jnp.sum((inputs @ params["w"] - targets) ** 2)


def _second_order(fn: Any) -> Any:
    jnp = _np()
    p, x, y = {"w": jnp.array([1.0, -1.0])}, jnp.array([[1.0, 2.0], [0.5, 1.0]]), jnp.array([0.5, 1.0])
    if fn.__name__ == "hvp":
        return fn(_quad_loss, jnp.array([1.0, 0.0]), p, x, y)
    return fn(_quad_loss, p, x, y)


def _mc(fn: Any) -> Any:
    import optax

    jnp = _np()
    return fn(lambda x: jnp.sum(x**2), [jnp.array([0.5]), jnp.array([0.0])], optax.multi_normal, _key(), 4)


_S = "optax.schedules."
_L = "optax.losses."
_TU = "optax.tree_utils.tree_"

#: path -> (kind, aliases, call); see the module docstring.
CALLS: dict[str, tuple[str, tuple[str, ...], Any]] = {
    # schedules: boundaries at 5, 10 and 20 steps
    "optax.constant_schedule": ("schedule", (_S + "constant_schedule",), _sched(value=0.5)),
    "optax.cosine_decay_schedule": (
        "schedule",
        (_S + "cosine_decay_schedule",),
        _sched(init_value=1.0, decay_steps=20),
    ),
    "optax.cosine_onecycle_schedule": (
        "schedule",
        (_S + "cosine_onecycle_schedule",),
        _sched(transition_steps=20, peak_value=1.0),
    ),
    "optax.exponential_decay": (
        "schedule",
        (_S + "exponential_decay",),
        _sched(init_value=1.0, transition_steps=5, decay_rate=0.5, transition_begin=5, end_value=0.2),
    ),
    "optax.join_schedules": (
        "schedule",
        (_S + "join_schedules",),
        lambda fn: fn([lambda c: 1.0 + 0.0 * c, lambda c: 0.1 + 0.0 * c], [10]),
    ),
    "optax.linear_onecycle_schedule": (
        "schedule",
        (_S + "linear_onecycle_schedule",),
        _sched(transition_steps=20, peak_value=1.0),
    ),
    "optax.linear_schedule": (
        "schedule",
        (_S + "linear_schedule",),
        _sched(init_value=1.0, end_value=0.1, transition_steps=10, transition_begin=5),
    ),
    "optax.piecewise_constant_schedule": (
        "schedule",
        (_S + "piecewise_constant_schedule",),
        _sched(init_value=1.0, boundaries_and_scales={5: 0.5, 10: 0.1}),
    ),
    "optax.piecewise_interpolate_schedule": (
        "schedule",
        (_S + "piecewise_interpolate_schedule",),
        _sched(interpolate_type="cosine", init_value=1.0, boundaries_and_scales={5: 0.5, 20: 0.1}),
    ),
    "optax.polynomial_schedule": (
        "schedule",
        (_S + "polynomial_schedule",),
        _sched(init_value=1.0, end_value=0.1, power=2, transition_steps=10, transition_begin=5),
    ),
    "optax.sgdr_schedule": (
        "schedule",
        (_S + "sgdr_schedule",),
        lambda fn: fn([dict(init_value=0.0, peak_value=1.0, warmup_steps=5, decay_steps=10)] * 2),
    ),
    "optax.warmup_constant_schedule": (
        "schedule",
        (_S + "warmup_constant_schedule",),
        _sched(init_value=0.0, peak_value=1.0, warmup_steps=5),
    ),
    "optax.warmup_cosine_decay_schedule": (
        "schedule",
        (_S + "warmup_cosine_decay_schedule",),
        _sched(init_value=0.0, peak_value=1.0, warmup_steps=5, decay_steps=20),
    ),
    "optax.warmup_exponential_decay_schedule": (
        "schedule",
        (_S + "warmup_exponential_decay_schedule",),
        _sched(init_value=0.0, peak_value=1.0, warmup_steps=5, transition_steps=5, decay_rate=0.5, end_value=0.1),
    ),
    # losses (reduced over nothing: per-example values)
    "optax.convex_kl_divergence": (
        "loss",
        (_L + "convex_kl_divergence",),
        lambda fn: fn(_np().log(probs() + 0.1), probs()),
    ),
    "optax.cosine_distance": ("loss", (_L + "cosine_distance",), lambda fn: fn(logits(), probs())),
    "optax.cosine_similarity": ("loss", (_L + "cosine_similarity",), lambda fn: fn(logits(), probs())),
    "optax.ctc_loss": (
        "loss",
        (_L + "ctc_loss",),
        lambda fn: fn(logits()[None], _np().zeros((1, 2)), _np().array([[1, 2]]), _np().zeros((1, 2))),
    ),
    "optax.ctc_loss_with_forward_probs": (
        "loss",
        (_L + "ctc_loss_with_forward_probs",),
        lambda fn: fn(logits()[None], _np().zeros((1, 2)), _np().array([[1, 2]]), _np().zeros((1, 2))),
    ),
    "optax.hinge_loss": ("loss", (_L + "hinge_loss",), lambda fn: fn(_np().array([0.5, 0.3]), signs())),
    "optax.huber_loss": ("loss", (_L + "huber_loss",), lambda fn: fn(logits(), probs())),
    "optax.kl_divergence": ("loss", (_L + "kl_divergence",), lambda fn: fn(_np().log(probs() + 0.1), probs())),
    "optax.l2_loss": ("loss", (_L + "l2_loss",), lambda fn: fn(logits(), probs())),
    "optax.log_cosh": ("loss", (_L + "log_cosh",), lambda fn: fn(logits(), probs())),
    "optax.ntxent": ("loss", (_L + "ntxent",), lambda fn: fn(logits(), _np().array([0, 0]))),
    "optax.safe_softmax_cross_entropy": (
        "loss",
        (_L + "safe_softmax_cross_entropy",),
        lambda fn: fn(logits(), probs()),
    ),
    "optax.sigmoid_binary_cross_entropy": (
        "loss",
        (_L + "sigmoid_binary_cross_entropy",),
        lambda fn: fn(logits(), probs()),
    ),
    "optax.sigmoid_focal_loss": ("loss", (_L + "sigmoid_focal_loss",), lambda fn: fn(logits(), probs())),
    "optax.smooth_labels": ("loss", (_L + "smooth_labels",), lambda fn: fn(probs(), 0.1)),
    "optax.softmax_cross_entropy": ("loss", (_L + "softmax_cross_entropy",), lambda fn: fn(logits(), probs())),
    "optax.softmax_cross_entropy_with_integer_labels": (
        "loss",
        (_L + "softmax_cross_entropy_with_integer_labels",),
        lambda fn: fn(logits(), ints()),
    ),
    "optax.squared_error": ("loss", (_L + "squared_error",), lambda fn: fn(logits(), probs())),
    _L + "binary_dice_loss": ("loss", (), lambda fn: fn(logits(), probs())),
    _L + "dice_loss": ("loss", (), lambda fn: fn(logits(), probs())),
    _L + "kl_divergence_with_log_targets": (
        "loss",
        (),
        lambda fn: fn(_np().log(probs() + 0.1), _np().log(probs() + 0.1)),
    ),
    _L + "make_fenchel_young_loss": ("loss", (), lambda fn: fn(lambda x: _np().max(x))(logits()[0], probs()[0])),
    _L + "multiclass_generalized_dice_loss": ("loss", (), lambda fn: fn(logits(), probs())),
    _L + "multiclass_hinge_loss": ("loss", (), lambda fn: fn(logits(), ints())),
    _L + "multiclass_perceptron_loss": ("loss", (), lambda fn: fn(logits(), ints())),
    _L + "multiclass_sparsemax_loss": ("loss", (), lambda fn: fn(logits(), ints())),
    _L + "perceptron_loss": ("loss", (), lambda fn: fn(_np().array([0.5, 0.3]), signs())),
    _L + "poly_loss_cross_entropy": ("loss", (), lambda fn: fn(logits(), probs())),
    _L + "ranking_softmax_loss": ("loss", (), lambda fn: fn(logits(), probs())),
    _L + "sparsemax_loss": ("loss", (), lambda fn: fn(logits(), probs())),
    _L + "triplet_margin_loss": ("loss", (), lambda fn: fn(logits(), probs(), -logits())),
    # tree utilities
    "optax.tree.add": ("tree", (_TU + "add",), _tree_two),
    "optax.tree.add_scale": ("tree", (_TU + "add_scale",), lambda fn: fn(tree(), 0.5, tree())),
    "optax.tree.allclose": ("tree", (_TU + "allclose",), _tree_two),
    "optax.tree.batch_shape": ("tree", (_TU + "batch_shape",), lambda fn: fn(tree())),
    "optax.tree.cast": ("tree", (_TU + "cast",), lambda fn: fn(tree(), _np().float16)),
    "optax.tree.cast_like": ("tree", (_TU + "cast_like",), _tree_two),
    "optax.tree.clip": ("tree", (_TU + "clip",), lambda fn: fn(tree(), -1.0, 1.0)),
    "optax.tree.conj": ("tree", (_TU + "conj",), lambda fn: fn(tree())),
    "optax.tree.div": ("tree", (_TU + "div",), _tree_two),
    "optax.tree.dtype": ("tree", (_TU + "dtype",), lambda fn: fn(tree())),
    "optax.tree.full_like": ("tree", (_TU + "full_like",), lambda fn: fn(tree(), 2.0)),
    "optax.tree.get": ("tree", (_TU + "get",), lambda fn: fn({"x": tree()}, "a")),
    "optax.tree.get_all_with_path": ("tree", (_TU + "get_all_with_path",), lambda fn: fn({"x": tree()}, "a")),
    "optax.tree.max": ("tree", (_TU + "max",), lambda fn: fn(tree())),
    "optax.tree.min": ("tree", (_TU + "min",), lambda fn: fn(tree())),
    "optax.tree.mul": ("tree", (_TU + "mul",), _tree_two),
    "optax.tree.norm": ("tree", (_TU + "norm",), lambda fn: fn(tree())),
    "optax.tree.ones_like": ("tree", (_TU + "ones_like",), lambda fn: fn(tree())),
    "optax.tree.random_like": ("tree", (_TU + "random_like",), lambda fn: fn(_key(), tree())),
    "optax.tree.real": ("tree", (_TU + "real",), lambda fn: fn(tree())),
    "optax.tree.scale": ("tree", (_TU + "scale",), lambda fn: fn(0.5, tree())),
    "optax.tree.set": ("tree", (_TU + "set",), lambda fn: fn({"x": tree()}, a=_np().zeros(2))),
    "optax.tree.size": ("tree", (_TU + "size",), lambda fn: fn(tree())),
    "optax.tree.split_key_like": ("tree", (_TU + "split_key_like",), lambda fn: fn(_key(), tree())),
    "optax.tree.sub": ("tree", (_TU + "sub",), _tree_two),
    "optax.tree.sum": ("tree", (_TU + "sum",), lambda fn: fn(tree())),
    "optax.tree.unwrap_random_key_data": ("tree", (_TU + "unwrap_random_key_data",), lambda fn: fn({"k": _key()})),
    "optax.tree.vdot": ("tree", (_TU + "vdot",), _tree_two),
    "optax.tree.where": ("tree", (_TU + "where",), lambda fn: fn(True, tree(), tree())),
    "optax.tree.zeros_like": ("tree", (_TU + "zeros_like",), lambda fn: fn(tree())),
    "optax.bias_correction": (
        "tree",
        ("optax.tree.bias_correction", _TU + "bias_correction"),
        lambda fn: fn(tree(), 0.9, 3),
    ),
    "optax.update_infinity_moment": (
        "tree",
        ("optax.tree.update_infinity_moment", _TU + "update_infinity_moment"),
        lambda fn: fn(tree(), tree(), 0.9, 1e-8),
    ),
    "optax.update_moment": (
        "tree",
        ("optax.tree.update_moment", _TU + "update_moment"),
        lambda fn: fn(tree(), tree(), 0.9, 2),
    ),
    "optax.update_moment_per_elem_norm": (
        "tree",
        ("optax.tree.update_moment_per_elem_norm", _TU + "update_moment_per_elem_norm"),
        lambda fn: fn(tree(), tree(), 0.9, 2),
    ),
    "optax.tree_map_params": (
        "tree",
        ("optax.tree.map_params", _TU + "map_params"),
        lambda fn: fn(_adam(), lambda p: p * 2, _adam().init(tree())),
    ),
    # the rest of optax.*
    "optax.apply_updates": ("other", (), _tree_two),
    "optax.assignment.base_hungarian_algorithm": ("other", (), lambda fn: fn(logits())),
    "optax.assignment.hungarian_algorithm": ("other", (), lambda fn: fn(logits())),
    "optax.contrib.hutchinson_estimator_diag_hessian": ("other", (), lambda fn: fn()),
    "optax.contrib.schedule_free_eval_params": ("other", (), lambda fn: fn(_sf().init(tree()), tree())),
    "optax.global_norm": ("other", (), lambda fn: fn(tree())),
    "optax.incremental_update": ("other", (), lambda fn: fn(tree(), tree(), 0.5)),
    "optax.init_empty_state": ("other", (), lambda fn: fn(tree())),
    "optax.matrix_inverse_pth_root": ("other", (), lambda fn: fn(_np().array([[2.0, 0.5], [0.5, 1.0]]), 2)),
    "optax.monte_carlo.control_delta_method": ("other", (), lambda fn: fn(lambda x: _np().sum(x**2))),
    "optax.monte_carlo.measure_valued_jacobians": ("other", (), _mc),
    "optax.monte_carlo.moving_avg_baseline": ("other", (), lambda fn: fn(lambda x: _np().sum(x**2))),
    "optax.monte_carlo.pathwise_jacobians": ("other", (), _mc),
    "optax.monte_carlo.score_function_jacobians": ("other", (), _mc),
    "optax.multi_normal": ("other", (), lambda fn: fn(_np().zeros(2), _np().zeros(2)).sample((2,), _key())),
    "optax.nnls": ("other", (), lambda fn: fn(_np().array([[1.0, 0.0], [0.0, 2.0]]), _np().array([1.0, -1.0]), 10)),
    "optax.per_example_global_norm_clip": (
        "other",
        ("optax.transforms.per_example_global_norm_clip",),
        lambda fn: fn([_np().ones((2, 3))], 1.0),
    ),
    "optax.per_example_layer_norm_clip": (
        "other",
        ("optax.transforms.per_example_layer_norm_clip",),
        lambda fn: fn([_np().ones((2, 3))], 1.0),
    ),
    "optax.periodic_update": ("other", (), lambda fn: fn(tree(), tree(), _np().asarray(2), 2)),
    "optax.perturbations.make_perturbed_fun": (
        "other",
        (),
        lambda fn: fn(lambda x: _np().sum(x), num_samples=2)(_key(), _np().ones(2)),
    ),
    "optax.power_iteration": ("other", (), lambda fn: fn(_np().array([[2.0, 0.5], [0.5, 1.0]]), key=_key())),
    "optax.projections.projection_box": ("other", (), lambda fn: fn(tree(), -1.0, 1.0)),
    "optax.projections.projection_halfspace": (
        "other",
        (),
        lambda fn: fn(_np().array([1.0, 2.0]), _np().array([1.0, 0.0]), 0.5),
    ),
    "optax.projections.projection_hypercube": ("other", (), lambda fn: fn(tree())),
    "optax.projections.projection_hyperplane": (
        "other",
        (),
        lambda fn: fn(_np().array([1.0, 2.0]), _np().array([1.0, 0.0]), 0.5),
    ),
    "optax.projections.projection_l1_ball": ("other", (), lambda fn: fn(tree())),
    "optax.projections.projection_l1_sphere": ("other", (), lambda fn: fn(tree())),
    "optax.projections.projection_l2_ball": ("other", (), lambda fn: fn(tree())),
    "optax.projections.projection_l2_sphere": ("other", (), lambda fn: fn(tree())),
    "optax.projections.projection_linf_ball": ("other", (), lambda fn: fn(tree())),
    "optax.projections.projection_non_negative": ("other", (), lambda fn: fn(tree())),
    "optax.projections.projection_simplex": ("other", (), lambda fn: fn(tree())),
    "optax.projections.projection_vector": (
        "other",
        (),
        lambda fn: fn(_np().array([1.0, 2.0]), _np().array([1.0, 0.0])),
    ),
    "optax.safe_increment": ("other", ("optax.safe_int32_increment",), lambda fn: fn(_np().asarray(3))),
    "optax.safe_norm": ("other", (), lambda fn: fn(_np().array([3.0, 4.0]), 0.1)),
    "optax.safe_root_mean_squares": ("other", (), lambda fn: fn(_np().array([3.0, 4.0]), 0.1)),
    "optax.scale_gradient": ("other", (), lambda fn: fn(tree(), 0.5)),
    "optax.second_order.fisher_diag": ("other", (), _second_order),
    "optax.second_order.hessian_diag": ("other", (), _second_order),
    "optax.second_order.hvp": ("other", (), _second_order),
    "optax.skip_large_updates": (
        "other",
        ("optax.transforms.skip_large_updates",),
        lambda fn: fn(tree(), _np().asarray(1), tree(), 1.0),
    ),
    "optax.skip_not_finite": (
        "other",
        ("optax.transforms.skip_not_finite",),
        lambda fn: fn(tree(), _np().asarray(1), tree()),
    ),
    "optax.transforms.unitwise_clip": (
        "other",
        (),
        lambda fn: fn(_np().array([2.0]), _np().array([1.0]), _np().array([1.0])),
    ),
    "optax.transforms.unitwise_norm": ("other", (), lambda fn: fn(_np().ones((2, 3)))),
    "optax.value_and_grad_from_state": (
        "other",
        (),
        lambda fn: fn(lambda p: _np().sum(p**2))(_np().ones(2), state=_lbfgs_state()),
    ),
}

#: Losses (of the edge-input snapshots, ``test_surface_loss_edges.py``) whose first argument is logits (unnormalized
#: log-probabilities,
#: scores) or log-probabilities, per their docstrings.
LOGITS = {
    "optax.softmax_cross_entropy",
    "optax.softmax_cross_entropy_with_integer_labels",
    "optax.safe_softmax_cross_entropy",
    "optax.sigmoid_binary_cross_entropy",
    "optax.sigmoid_focal_loss",
    "optax.ctc_loss",
    "optax.ctc_loss_with_forward_probs",
    "optax.kl_divergence",
    "optax.convex_kl_divergence",
    _L + "kl_divergence_with_log_targets",
    _L + "poly_loss_cross_entropy",
    _L + "sparsemax_loss",
    _L + "multiclass_sparsemax_loss",
    _L + "multiclass_hinge_loss",
    _L + "multiclass_perceptron_loss",
    _L + "ranking_softmax_loss",
    _L + "binary_dice_loss",
    _L + "dice_loss",
    _L + "multiclass_generalized_dice_loss",
}

#: The position of a loss's targets where it is not the second argument.
TARGET_ARG = {"optax.smooth_labels": 0, "optax.ctc_loss": 2, "optax.ctc_loss_with_forward_probs": 2}

#: The baseline's outcome of a call that does not return, pinned as
#: (exception type name, ledger id of the defect) where it fails on a
#: documented input.
EXPECT: dict[str, tuple[str, str]] = {
    "optax.projections.projection_box": ("ValueError", known_defect("projection-box-scalar-bounds")),
    "optax.projections.projection_hypercube": ("ValueError", known_defect("projection-box-scalar-bounds")),
}

#: Public callables the sweep does not call, with the reason.
LEFT_OUT: dict[str, str] = {
    "optax.monte_carlo.control_variates_jacobians": "needs a control variate, a gradient estimator and a "
    "distribution builder wired together (a Monte Carlo set-up, not a default call)",
}


def _adam() -> Any:
    import optax

    return optax.adam(0.1)


def _sf() -> Any:
    import optax

    return optax.contrib.schedule_free_sgd()


def _lbfgs_state() -> Any:
    import optax

    return optax.lbfgs().init(_np().ones(2))
