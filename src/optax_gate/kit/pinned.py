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
#: optax ``transforms/_combining.py`` (``partition``, alias ``multi_transform``):
#: a label with no transformation, raised at ``init``.
NO_TRANSFORMATION = "Some parameters have no corresponding transformation"
#: Python's own message when an array meets a None leaf in arithmetic (optax
#: moments or ``apply_updates`` given a None update where the state or params
#: hold an array).
NONE_OPERAND = "unsupported operand type"
