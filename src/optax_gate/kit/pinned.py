"""Error message fragments pinned from the baseline (optax 0.2.6, jax 0.11.2).

A negative contract asserts an exception's type *and* one of these fragments,
so that a release that changes how a mistake is reported shows in the gate.
Each fragment is the shortest stable part of the message, read off the
baseline's source or output (named per entry).
"""

#: ``jax.tree.map`` on two PyTrees of different structure
#: (jax ``tree_util``: "pytree structure error: different ... at key path").
PYTREE_STRUCTURE = "pytree structure error"
#: Adding arrays of incompatible shapes (jax ``lax`` broadcasting check).
INCOMPATIBLE_SHAPES = "incompatible shapes for broadcasting"
#: optax ``base.NO_PARAMS_MSG``, raised by transformations that need params.
NO_PARAMS = "requires the current value of parameters"
#: ``jax.lax.scan`` whose body returns a carry of another dtype than it got
#: (jax ``lax.control_flow.loops``: "scan body function carry input and carry
#: output must have equal types").
SCAN_CARRY_TYPES = "carry input and carry output must have equal types"
#: NumPy's ``np.dtype`` of an unknown name, raised by optax ``utils.canonicalize_dtype``
#: when ``optax.adam(..., mu_dtype=...)`` is constructed ("data type 'x' not understood").
DTYPE_NOT_UNDERSTOOD = "not understood"
#: A jitted computation (or an eager op) whose arguments live on different
#: device sets, e.g. an optimizer state on another mesh than the params
#: (jax ``_src/stages.py``: "Received incompatible devices for {api}ted computation").
INCOMPATIBLE_DEVICES = "Received incompatible devices for jitted computation"
#: ``jax.shard_map`` with an ``in_specs`` axis the mesh does not have
#: (jax ``_src/shard_map.py``: "shard_map in_specs argument must refer to an
#: axis marked as manual").
SHARD_MAP_UNKNOWN_AXIS = "must refer to an axis marked as manual"
#: A collective over an axis name no ``pmap``/``shard_map`` binds (jax
#: ``_src/lax/parallel.py``: "Found an unbound axis name: {name}").
UNBOUND_AXIS = "Found an unbound axis name"
#: optax ``transforms/_combining.py`` (``partition``, alias ``multi_transform``):
#: a label with no transformation, raised at ``init``.
NO_TRANSFORMATION = "Some parameters have no corresponding transformation"
#: Python's own message when an array meets a None leaf in arithmetic (optax
#: moments or ``apply_updates`` given a None update where the state or params
#: hold an array).
NONE_OPERAND = "unsupported operand type"

# Schedules (optax 0.2.6 ``optax/schedules/_schedule.py``).
#: ``cosine_decay_schedule`` with ``decay_steps <= 0`` (also reached through
#: ``warmup_cosine_decay_schedule`` when ``decay_steps == warmup_steps``).
COSINE_DECAY_STEPS = "requires positive decay_steps"
#: ``piecewise_constant_schedule`` with a negative scale factor.
PIECEWISE_NEGATIVE_SCALE = "expects non-negative scale factors"

# Losses (optax 0.2.6 ``optax/losses/_classification.py``, ``_regression.py``;
# the checks are chex assertions, raised as ``AssertionError``).
#: ``chex.assert_type([logits], float)`` / ``([labels], int)`` on a wrong dtype.
CHEX_TYPE = "Assertion assert_type failed"
#: ``chex.assert_equal_shape`` in ``squared_error`` (and ``l2_loss``).
CHEX_SHAPE = "Assertion assert_equal_shape failed"
#: ``canonicalize_axis`` of ``softmax_cross_entropy_with_integer_labels``.
AXIS_OUT_OF_BOUNDS = "is out of bounds for array of dimension"
#: ``softmax_cross_entropy_with_integer_labels`` with an ``axis`` of another type.
AXIS_TYPE = "must be of type 'int' or 'tuple[int, ...]'"
#: ``chex.warn_only_n_pos_args_in_future(n=2)`` around ``huber_loss``: a
#: DeprecationWarning when ``delta`` is passed positionally.
POSITIONAL_DELTA = "only the first 2 arguments can be passed positionally"
