"""Versions of an environment, and the import check the gate runs first.

``python -m optax_gate.kit.environment.probe`` prints one JSON object on stdout:
``{"versions": {...}, "import_error": null | "<ExceptionType: message>",
"import_warnings": [{"category", "message", "module", "lineno"}, ...],
"pytest_plugins": {distribution: [module, ...]}}`` and
exits 0 when ``optax``, ``jax`` and ``flax.nnx`` import, 3 otherwise. Versions
come from the installed distributions' metadata, so they are known even when
an import fails. ``import_warnings`` are the warnings raised while importing
the contracted packages (every one, whatever the active filters), for the
gate's warnings diff.
"""

from __future__ import annotations

import json
import platform
import re
import sys
import traceback
import warnings
from importlib import metadata

#: Packages whose versions are recorded; ``pytest-xdist`` tells the gate whether
#: a contract run can be split over processes.
PACKAGES = ("optax", "jax", "jaxlib", "flax", "numpy", "pytest-xdist")


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


def pytest_plugins() -> dict[str, list[str]]:
    """``{distribution name: [module, ...]}`` of every installed ``pytest11``
    entry point (the plugins pytest would autoload), modules sorted."""
    out: dict[str, list[str]] = {}
    for dist in metadata.distributions():
        modules = [ep.value.split(":")[0] for ep in dist.entry_points if ep.group == "pytest11"]
        if modules:
            out[dist.metadata["Name"]] = sorted(set(modules))
    return out


def _module_of(filename: str) -> str:
    """Dotted module of a source file under ``site-packages`` (else its name)."""
    path = filename.replace("\\", "/")
    if "site-packages/" in path:
        path = path.rsplit("site-packages/", 1)[1]
    elif "/src/" in path:
        path = path.rsplit("/src/", 1)[1]
    else:  # a file outside any package folder (a test module): its name
        path = path.rsplit("/", 1)[-1]
    path = path.removesuffix(".py").removesuffix("/__init__")
    return path.replace("/", ".")


def warning_record(w: warnings.WarningMessage) -> dict[str, object]:
    """``{"category", "message", "module", "lineno"}`` of a caught warning:
    the category's qualified name (builtins bare), the message on one line
    with memory addresses masked, the module the warning is attributed to."""
    cat = w.category
    name = cat.__qualname__ if cat.__module__ == "builtins" else f"{cat.__module__}.{cat.__qualname__}"
    message = re.sub(r"0x[0-9a-fA-F]+", "0x…", " ".join(str(w.message).split()))[:400]
    return {"category": name, "message": message, "module": _module_of(w.filename or ""), "lineno": w.lineno}


IMPORT_WARNINGS: list[dict[str, object]] = []


def import_error() -> str | None:
    """None when the contracted packages import, else the error's last line
    and the innermost frame of the traceback. The warnings raised meanwhile
    go to ``IMPORT_WARNINGS``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        err = _import_error()
    IMPORT_WARNINGS[:] = [warning_record(w) for w in caught]
    return err


def _import_error() -> str | None:
    try:
        import jax.numpy  # noqa: F401
        import optax  # noqa: F401
        from flax import nnx  # noqa: F401
    except BaseException as exc:  # an import may fail with anything
        tb = traceback.extract_tb(exc.__traceback__)
        where = f" (at {tb[-1].filename.rsplit('site-packages/', 1)[-1]}:{tb[-1].lineno})" if tb else ""
        return f"{type(exc).__name__}: {exc}{where}"
    return None


def main() -> int:
    """Print the environment's versions, import error, import-time warnings and pytest plugins as one JSON line."""
    err = import_error()
    print(
        json.dumps(
            {
                "versions": installed_versions(),
                "import_error": err,
                "import_warnings": IMPORT_WARNINGS,
                "pytest_plugins": pytest_plugins(),
            }
        )
    )
    return 0 if err is None else 3


if __name__ == "__main__":
    sys.exit(main())
