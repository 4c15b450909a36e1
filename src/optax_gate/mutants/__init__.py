"""Mutants of the contracted Optax APIs: proof that every contract can fail.

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from pathlib import Path

from optax_gate.mutants.registry import AREAS, MUTANTS, Mutant, family

#: The built-in families, one module each (mirroring ``tests/contracts/``).
FAMILIES = (
    "per_example_global_norm_clip",
    "sgd",
    "incremental_update",
    "add_decayed_weights_mask",
    "multi_steps",
    "clip_by_global_norm",
    "masked",
    "chain",
    "inject_hyperparams",
    "nnx",
    "resume",
    "adam",
    "adamw",
    "lion",
    "rmsprop",
    "adafactor",
    "sharded_state",
    "data_parallel",
    "resume_across_devices",
    "zero_nans",
    "apply_if_finite",
    "clip",
    "multi_transform",
    "training_recipes",
    "schedules",
    "losses",
    "surface_transformations",
    "surface_sweep",
    "surface_loss_edges",
    "surface_dtypes",
    "surface_x64",
    "surface_corners_trees",
    "surface_corners_wrappers",
    "surface_corners_losses",
    "surface_corners_schedules",
    "surface_corners_transformations",
    "surface_corners_wrapped",
    "surface_corners_derivatives",
    "surface_corners_ranges",
    "surface_corners_injected",
    "surface_corners_thresholds",
    "surface_memory",
    "surface_sharded",
    "microbatching",
    "microbatching_sharded",
    "skip_functions",
    "tree_utils",
)


#: Where a team's own mutants are found: files named ``*_mutants.py`` anywhere
#: under the contracts folder, beside the contract module they break (pytest
#: does not collect them: they do not match ``test_*.py``).
TEAM_PATTERN = "tests/contracts/**/*_mutants.py"
#: The team's contract folders outside the project (``--contracts DIR`` of the
#: check; ``os.pathsep``-separated, so that the pytest processes see them too):
#: their ``*_mutants.py`` files are loaded as well, and a family's module path
#: given relative there (``family("team-adam", "test_adam.py")``) is read from
#: the folder of its mutants file.
TEAM_DIRS_ENV = "OPTAX_GATE_TEAM_CONTRACTS"


def _exec(path: Path, module_name: str) -> None:
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the mutants file {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)


def load(root: Path | None = None) -> dict[str, Mutant]:
    """Import every built-in family module and every team mutants file under
    ``root`` (default: the current folder, the project root), registering
    their mutants; return the registry. Loading twice is harmless.

    Raises:
      ValueError: two mutants with one name, or one family declared for two
        contract modules (``registry.family``).
      Exception: whatever a team mutants file raises on import.
    """
    for name in FAMILIES:
        importlib.import_module(f"optax_gate.mutants.families.{name}")
    for path in sorted((root or Path.cwd()).glob(TEAM_PATTERN)):
        module_name = f"optax_gate_team_mutants.{path.stem}"
        if module_name not in sys.modules:
            _exec(path, module_name)
    for folder in (Path(d) for d in os.environ.get(TEAM_DIRS_ENV, "").split(os.pathsep) if d):
        for path in sorted(folder.resolve().rglob("*_mutants.py")):
            module_name = f"optax_gate_team_mutants.outside_{hashlib.sha256(str(path).encode()).hexdigest()[:12]}"
            if module_name in sys.modules:
                continue
            before = set(AREAS)
            _exec(path, module_name)
            for area in set(AREAS) - before:
                if not Path(AREAS[area]).is_absolute():
                    AREAS[area] = str(path.parent / AREAS[area])
    return MUTANTS


__all__ = ["AREAS", "FAMILIES", "MUTANTS", "TEAM_DIRS_ENV", "TEAM_PATTERN", "Mutant", "family", "load"]
