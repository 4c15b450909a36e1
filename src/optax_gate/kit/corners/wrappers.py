"""The wrappers' corner grid: each wrapper around each inner optimizer, over each params dtype and mixed-dtype tree,
carried through a scan."""

from __future__ import annotations

from typing import Any

from optax_gate.kit.corners.outcome import as_dtype, jnp_module

#: Wrappers around an inner optimizer: name -> (API path, how it is built
#: around ``inner``: a form of :func:`wrap`).
WRAPPERS: dict[str, str] = {
    "optax.MultiSteps": "multi_steps",
    "optax.inject_hyperparams": "inject",
    "optax.masked": "masked",
    "optax.chain": "chain",
    "optax.apply_if_finite": "apply_if_finite",
}
#: Inner optimizers: name -> (factory path, keyword arguments; a dtype as text).
INNERS: dict[str, tuple[str, dict[str, Any]]] = {
    "adam": ("optax.adam", {"learning_rate": 0.1}),
    "adam_mu_bfloat16": ("optax.adam", {"learning_rate": 0.1, "mu_dtype": "bfloat16"}),
    "adam_mu_float32": ("optax.adam", {"learning_rate": 0.1, "mu_dtype": "float32"}),
    "adamw_mu_bfloat16": ("optax.adamw", {"learning_rate": 0.1, "mu_dtype": "bfloat16"}),
    "nadam": ("optax.nadam", {"learning_rate": 0.1}),
}
#: Param dtypes every wrapper x inner pair is carried over: one dtype for the whole PyTree.
PARAM_DTYPES = ("float32", "bfloat16", "float16", "complex64")
#: Trees that mix two dtypes (``w`` of the first, ``b`` of the second): every pair of the floating dtypes, and
#: float32 with complex64, carried by each wrapper around :data:`MIXED_INNERS` (a mixed tree meets the inner's
#: dtype handling, ``mu_dtype`` or none, and the wrapper's own: inject_hyperparams' dtype promotion, MultiSteps'
#: accumulator).
MIXED_DTYPES = ("f32+bf16", "f32+f16", "bf16+f16", "f32+c64")
#: The short dtype names of :data:`MIXED_DTYPES` (a snapshot's line stays short enough that YAML never folds it).
SHORT = {"f32": "float32", "bf16": "bfloat16", "f16": "float16", "c64": "complex64"}
MIXED_INNERS = ("adam", "adam_mu_bfloat16")


def cases() -> list[tuple[str, str]]:
    """Every (inner, params dtype) pair each wrapper is carried over."""
    return [(i, d) for i in INNERS for d in PARAM_DTYPES] + [(i, d) for i in MIXED_INNERS for d in MIXED_DTYPES]


#: Steps of the scan (MultiSteps with every_k_schedule=2 applies once, then accumulates).
SCAN_STEPS = 3
#: Wrappers and set-ups without a grid, and why.
WRAPPER_LEFT_OUT: dict[str, str] = {
    "optax.multi_transform": (
        "labels split the PyTree between two inner optimizers: optax.masked covers one inner on part of it"
    ),
    "optax.inject_stateful_hyperparams": (
        "the same state layout as optax.inject_hyperparams for a plain float hyperparameter"
    ),
    "optax.lookahead": "params must be a LookaheadParams pair, not a plain PyTree",
}


def inner(name: str) -> Any:
    """The inner optimizer ``name`` of :data:`INNERS`, built."""
    from optax_gate.kit.surface import build as surface_build

    path, kwargs = INNERS[name]
    return surface_build.resolve(path)(**{k: as_dtype(v) for k, v in kwargs.items()})


def wrap(wrapper: str, inner_name: str) -> Any:
    """The wrapper ``wrapper`` (a key of :data:`WRAPPERS`) around the inner optimizer ``inner_name``."""
    import optax

    from optax_gate.kit.surface import build as surface_build

    fn = surface_build.resolve(wrapper)
    form = WRAPPERS[wrapper]
    if form == "multi_steps":
        return fn(inner(inner_name), every_k_schedule=2)
    if (
        form == "inject"
    ):  # a dtype is callable: named static, as inject_hyperparams' docstring asks of non-schedule callables
        path, kwargs = INNERS[inner_name]
        static = tuple(k for k in kwargs if k.endswith("_dtype"))
        return fn(surface_build.resolve(path), static_args=static)(**{k: as_dtype(v) for k, v in kwargs.items()})
    if form == "masked":
        return fn(inner(inner_name), lambda p: {k: k != "b" for k in p})
    if form == "chain":
        return fn(inner(inner_name), optax.scale(1.0))
    return fn(inner(inner_name), max_consecutive_errors=2)


def wrapper_outcome(wrapper: str, inner_name: str, dtype: str, imag: dict[str, str] | None = None) -> str:
    """:data:`SCAN_STEPS` jitted steps of ``wrap(wrapper, inner_name)`` carried
    through ``jax.lax.scan`` on params ``{"w": [3], "b": [2, 2]}`` of ``dtype``
    (one of :data:`PARAM_DTYPES` or :data:`MIXED_DTYPES`; seeded gradients of the params' dtypes): ``ok params bfloat16
    state
    bfloat16,float32,int32`` (the dtypes of the params and of the state's
    leaves after the scan), ``non-finite ...`` or ``raises <type>``. With ``imag``, a tree holding complex64
    params also puts the sum of its params' imaginary parts after the scan there, under
    ``corner.<inner>/<dtype>/imag`` (3 significant digits: a wrapper that drops the imaginary part of the
    gradients it carries moves it otherwise, keeping every dtype)."""
    import jax
    import numpy as np
    import optax

    jnp = jnp_module()

    w_dtype, _, b_dtype = (SHORT.get(part, part) for part in dtype.partition("+"))

    def run() -> Any:
        rng = np.random.default_rng(0)
        w, b = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, (2, 2))
        if "complex64" in (w_dtype, b_dtype):  # an imaginary part of its own, which a wrapper must carry along
            w, b = w + 1j * rng.uniform(-1, 1, 3), b + 1j * rng.uniform(-1, 1, (2, 2))
        params = {
            "w": jnp.asarray(w if w_dtype == "complex64" else w.real, w_dtype),
            "b": jnp.asarray(b if (b_dtype or w_dtype) == "complex64" else b.real, b_dtype or w_dtype),
        }
        grads = jax.tree.map(lambda x: jnp.stack([x * (k + 1) for k in range(SCAN_STEPS)]), params)
        tx = wrap(wrapper, inner_name)

        def step(carry: Any, g: Any) -> Any:
            p, s = carry
            u, s = tx.update(g, s, p)
            return (optax.apply_updates(p, u), s), None

        return jax.jit(lambda p: jax.lax.scan(step, (p, tx.init(p)), grads)[0])(params)

    try:
        p, state = run()
    except Exception as exc:  # the outcome is the exception's type
        return f"raises {type(exc).__name__}"
    leaves = [np.asarray(x) for x in jax.tree.leaves(p)]
    bad = any(not np.all(np.isfinite(x.astype(np.complex64 if np.iscomplexobj(x) else np.float32))) for x in leaves)
    if imag is not None and any(np.iscomplexobj(x) for x in leaves):
        total = sum(float(np.imag(x.astype(np.complex128)).sum()) for x in leaves if np.iscomplexobj(x))
        imag[f"corner.{inner_name}/{dtype}/imag"] = f"{total:.3g}"
    pd = ",".join(sorted({x.dtype.name for x in leaves}))
    sd = ",".join(sorted({np.asarray(x).dtype.name for x in jax.tree.leaves(state)}))
    return f"{'non-finite' if bad else 'ok'} params {pd} state {sd}"
