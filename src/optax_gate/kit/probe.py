"""Versions of an environment, and the import check the gate runs first.

``python -m optax_gate.kit.probe`` prints one JSON object on stdout:
``{"versions": {...}, "import_error": null | "<ExceptionType: message>"}`` and
exits 0 when ``optax``, ``jax`` and ``flax.nnx`` import, 3 otherwise. Versions
come from the installed distributions' metadata, so they are known even when
an import fails.
"""

from __future__ import annotations

import json
import platform
import sys
import traceback
from importlib import metadata

PACKAGES = ("optax", "jax", "jaxlib", "flax", "numpy")


def installed_versions() -> dict[str, str]:
    """``python``, each of ``PACKAGES`` (or ``"not installed"``) and ``platform``."""
    versions = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    versions["platform"] = f"{platform.system()}-{platform.machine()}"
    return versions


def import_error() -> str | None:
    """None when the contracted packages import, else the error's last line
    and the innermost frame of the traceback."""
    try:
        import optax  # noqa: F401
        import jax.numpy  # noqa: F401
        from flax import nnx  # noqa: F401
    except BaseException as exc:  # an import may fail with anything
        tb = traceback.extract_tb(exc.__traceback__)
        where = f" (at {tb[-1].filename.rsplit('site-packages/', 1)[-1]}:{tb[-1].lineno})" if tb else ""
        return f"{type(exc).__name__}: {exc}{where}"
    return None


def main() -> int:
    err = import_error()
    print(json.dumps({"versions": installed_versions(), "import_error": err}))
    return 0 if err is None else 3


if __name__ == "__main__":
    sys.exit(main())
