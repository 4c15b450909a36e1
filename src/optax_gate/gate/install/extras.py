"""Refuse a candidate spec that asks for an extra its package does not define
(``optax[examples]``): pip and uv only warn and install the package without it,
so the gate would judge something other than what was asked.

The extras a package defines are read from its own metadata (``Provides-Extra``
of the wheel's ``METADATA``), for the version the candidate lock pins: uv
fetches that one wheel, without its dependencies, into a temporary folder (from
uv's cache when the environment was built before), after the resolution and
before the environment is installed. Read with ``importlib.metadata``, not by hand.
"""

from __future__ import annotations

import importlib.metadata
import re
import tempfile
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from optax_gate.gate.inputs.validate import InvalidInput
from optax_gate.gate.install import environments


def pinned(lock: Path) -> dict[str, str]:
    """``{canonical name: version}`` of the ``name==version`` lines of a lock file."""
    pins: dict[str, str] = {}
    for line in lock.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*==\s*([^\s;\\]+)", line)
        if m:
            pins[canonicalize_name(m.group(1))] = m.group(2)
    return pins


def provided(name: str, version: str, python: str, timeout: float = 300) -> set[str]:
    """The extras (canonical names) that ``name==version`` defines.

    Raises:
      environments.EnvironmentFailure: uv cannot fetch the package.
    """
    with tempfile.TemporaryDirectory(prefix="optax-gate-extras-") as tmp:
        environments.run_uv(
            "resolution",
            ["pip", "install", "--quiet", "--no-deps", "--python", python, "--target", tmp, f"{name}=={version}"],
            timeout,
        )
        dists = [
            d for d in importlib.metadata.distributions(path=[tmp]) if canonicalize_name(d.metadata["Name"]) == name
        ]
        if not dists:
            raise environments.EnvironmentFailure("resolution", f"no metadata of {name}=={version} after fetching it")
        return {canonicalize_name(e) for e in dists[0].metadata.get_all("Provides-Extra") or []}


def check(specs: list[str], lock: Path, python: str) -> None:
    """Refuse a spec whose extras its package, at the version ``lock`` pins, does not define.

    Raises:
      InvalidInput: naming the unknown extra and the extras the package defines.
      environments.EnvironmentFailure: the package's metadata cannot be fetched.
    """
    pins = None
    for spec in specs:
        req = Requirement(spec)
        if not req.extras:
            continue
        pins = pins if pins is not None else pinned(lock)
        name = canonicalize_name(req.name)
        version = pins.get(name)
        if version is None:
            raise InvalidInput(f"{spec!r}: the candidate lock pins no {name}")
        defined = provided(name, version, python)
        unknown = sorted(canonicalize_name(e) for e in req.extras if canonicalize_name(e) not in defined)
        if unknown:
            which = ", ".join(sorted(defined)) if defined else "none"
            raise InvalidInput(
                f"{spec!r}: {name} {version} defines no extra named {', '.join(map(repr, unknown))} (its "
                f"extras: {which})"
            )
