"""The gate tool: everything that runs in the light tool environment, laid out by stage.

``docs/architecture.md`` lists the stages in the order a gate runs them and every module under its stage;
``tests/meta/project/test_stages.py`` holds it to the tree and to the import rule,
``tests/meta/project/test_layout.py`` to the import boundary (no jax, optax or flax here)."""
