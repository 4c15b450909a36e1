"""JAX's persistent compilation cache, one per environment under test.

Almost all of a contract run's time is XLA compiling many small programs; JAX
can keep compiled executables on disk (``jax_compilation_cache_dir``) and serve
them to the next run. The gate and the nox sessions turn it on by default, with
the cache folder *inside* the environment's own folder, so no entry is shared
between environments (JAX's own cache key also includes the jax/jaxlib
versions, the backend and the compile options). The thresholds are set so that
every program is cached, however fast it compiled or small it is.

Turned off by ``--no-compilation-cache`` (gate, matrix) or
``OPTAX_GATE_COMPILATION_CACHE=0`` (every session). A cached run gives the same
contract outcomes as an uncached one (``tests/meta/test_compilation_cache.py``);
a program served from the cache still counts as a compilation in
``optax_gate.kit.recompilation``, so the "does not recompile" contracts keep
their meaning with the cache on.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Set to ``0`` to turn the cache off everywhere.
SWITCH = "OPTAX_GATE_COMPILATION_CACHE"
FOLDER = "jax-compilation-cache"


def enabled(flag: bool = True) -> bool:
    """The cache is on unless ``flag`` is False or ``$OPTAX_GATE_COMPILATION_CACHE`` is ``0``."""
    return flag and os.environ.get(SWITCH, "1") != "0"


def environment(env_folder: Path, on: bool = True) -> dict[str, str]:
    """Environment variables for a process of the environment in ``env_folder``
    (JAX reads its configuration from ``JAX_*`` variables at import)."""
    if not enabled(on):
        return {"JAX_ENABLE_COMPILATION_CACHE": "false", "JAX_COMPILATION_CACHE_DIR": ""}
    return {
        "JAX_ENABLE_COMPILATION_CACHE": "true",
        "JAX_COMPILATION_CACHE_DIR": str(Path(env_folder).absolute() / FOLDER),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
    }
