"""Mutants of the contracted Optax APIs: proof that every contract can fail.

A contract that cannot fail is a defect. Each mutant below replaces one
contracted API with a deliberately broken variant (a sign flipped, a mask
ignored, a mean for a sum, a dtype upcast, a check dropped or added, a value
perturbed only under ``jax.jit``...). ``python -m optax_gate.mutants`` runs the
API's contract module once per mutant and then requires that

- every mutant is caught by at least one contract (else the mutant names a
  behaviour nobody pins), and
- every contract fails under at least one mutant (else the contract cannot
  fail and is a check that asserts nothing).

Layout: one module per contracted API family, named like its contract module
(``sgd.py`` for ``tests/contracts/test_sgd.py``); ``registry`` holds the
registry, ``patches`` the shared building blocks, ``plugin`` the pytest plugin
(``-p optax_gate.mutants.plugin --mutant NAME`` patches ``optax`` before the
tests run) and ``__main__`` the check. Written here rather than with a mutation
testing tool (mutmut, cosmic-ray): those mutate the project's own source at
random and report surviving mutants; here the code under test is a third-party
package, the mutations must be behaviours the guides name, and the question is
the converse one (does every *test* fail under some mutant).
"""

from __future__ import annotations

import importlib

from optax_gate.mutants.registry import AREAS, MUTANTS, Mutant, family

#: The built-in families, one module each (mirroring ``tests/contracts/``).
FAMILIES = (
    "per_example_global_norm_clip", "sgd", "incremental_update", "add_decayed_weights_mask", "multi_steps",
    "clip_by_global_norm", "masked", "chain", "inject_hyperparams", "nnx", "resume",
    "schedules", "losses",
)


def load() -> dict[str, Mutant]:
    """Import every family module (registering its mutants); return the registry."""
    for name in FAMILIES:
        importlib.import_module(f"optax_gate.mutants.{name}")
    return MUTANTS


__all__ = ["AREAS", "FAMILIES", "MUTANTS", "Mutant", "family", "load"]
