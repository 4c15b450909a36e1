"""Dependency diff: the baseline's and the candidate's resolved lock files.

Rows (``change``): ``added``, ``removed`` (with the baseline packages that had
pulled it in, from the lock's ``# via`` comments) and ``moved`` (old -> new
version, ``level`` major / minor / patch / other, ``down`` when older), parsed
with ``packaging``. Besides the rows: the ``Requires-Python`` of the
contracted distributions and the platform tags of the installed jaxlib wheel,
read from each environment's ``*.dist-info`` (``METADATA``, ``WHEEL``)
without importing anything. With ``--usage``, a removed package that the
team's code imports is ``broken`` (its import lines named): code that
imported a package it never declared stops importing.
"""

from __future__ import annotations

import re
from email.parser import HeaderParser
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

CONTRACTED = ("optax", "jax", "jaxlib", "flax")
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;\\]+)")
#: ``name @ URL``: a direct reference, such as a wheel built from source (``optax_gate.gate.install.source_specs``).
_DIRECT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*@\s*([^\s;\\]+)")


def _direct_version(url: str) -> str:
    """The version in a direct reference's wheel file name (``…/optax-0.2.9.dev0-py3-none-any.whl``
    is ``0.2.9.dev0``), else the URL itself."""
    name = url.rsplit("/", 1)[-1]
    parts = name[: -len(".whl")].split("-") if name.endswith(".whl") else []
    return parts[1] if len(parts) >= 5 else url


def _via(entry: str) -> str:
    """A ``# via`` entry as the report names it: ``-r <file>`` (the package is
    listed in the requirements the lock was compiled from) is ``requested``."""
    return "requested" if entry.startswith("-r ") else entry


def parse_lock(text: str) -> dict[str, dict[str, Any]]:
    """``{canonical name: {"version", "via": [...]}}`` of a uv/pip-compile lock
    (``name==version`` lines; ``# via a`` or ``# via`` then ``#   a`` lines;
    ``-r <file>`` entries read ``requested``)."""
    out: dict[str, dict[str, Any]] = {}
    current: str | None = None
    in_via = False
    for raw in text.splitlines():
        line = raw.strip()
        m = _PIN.match(raw) or _DIRECT.match(raw)
        if m:
            current = canonicalize_name(m.group(1))
            version = m.group(2) if m.re is _PIN else _direct_version(m.group(2))
            out[current] = {"version": version, "via": []}
            in_via = False
        elif current and line.startswith("# via"):
            rest = line[len("# via") :].strip()
            if rest:
                out[current]["via"].append(_via(rest))
                in_via = False
            else:
                in_via = True
        elif current and in_via and line.startswith("#   "):
            out[current]["via"].append(_via(line[1:].strip()))
        elif not line.startswith("--hash") and not line.startswith("#"):
            in_via = False
    return out


def level(old: str, new: str) -> tuple[str, bool]:
    """``(major | minor | patch | other, moved down)`` between two versions."""
    try:
        a, b = Version(old), Version(new)
    except InvalidVersion:
        return "other", False
    pa, pb = [*a.release, 0, 0, 0][:3], [*b.release, 0, 0, 0][:3]
    for name, x, y in zip(("major", "minor", "patch"), pa, pb, strict=True):
        if x != y:
            return name, b < a
    return "other", b < a


def _dist_info(site_packages: Path | None, name: str) -> Path | None:
    if site_packages is None or not Path(site_packages).is_dir():
        return None
    want = canonicalize_name(name)
    for d in Path(site_packages).glob("*.dist-info"):
        if canonicalize_name(d.name[: -len(".dist-info")].rsplit("-", 1)[0]) == want:
            return d
    return None


def requires_python(site_packages: Path | None) -> dict[str, str]:
    """``{distribution: Requires-Python}`` of the contracted distributions."""
    out = {}
    for name in CONTRACTED:
        d = _dist_info(site_packages, name)
        if d is not None and (d / "METADATA").is_file():
            meta = HeaderParser().parsestr(
                (d / "METADATA").read_text(encoding="utf-8", errors="replace"), headersonly=True
            )
            out[name] = meta.get("Requires-Python") or "(none)"
    return out


def wheel_tags(site_packages: Path | None, name: str = "jaxlib") -> list[str]:
    """The ``Tag:`` lines of a distribution's ``WHEEL`` file (its platform tags)."""
    d = _dist_info(site_packages, name)
    if d is None or not (d / "WHEEL").is_file():
        return []
    return [
        ln.split(":", 1)[1].strip()
        for ln in (d / "WHEEL").read_text(encoding="utf-8").splitlines()
        if ln.startswith("Tag:")
    ]


def top_level_modules(site_packages: Path | None, name: str) -> set[str]:
    """Import names a distribution provides (``top_level.txt``, else the
    top-level entries of its ``RECORD``, else its normalised name)."""
    d = _dist_info(site_packages, name)
    names: set[str] = set()
    if d is not None and (d / "top_level.txt").is_file():
        names = {ln.strip() for ln in (d / "top_level.txt").read_text(encoding="utf-8").splitlines() if ln.strip()}
    elif d is not None and (d / "RECORD").is_file():
        for ln in (d / "RECORD").read_text(encoding="utf-8").splitlines():
            top = ln.split(",", 1)[0].split("/", 1)[0]
            if top and not top.endswith((".dist-info", ".data")) and top != "..":
                names.add(top[:-3] if top.endswith(".py") else top)
    names.discard("__pycache__")
    return names or {name.replace("-", "_")}


def diff(
    old_lock: str,
    new_lock: str,
    baseline_site: Path | None = None,
    imported: dict[str, list[str]] | None = None,
    declared: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Rows ``{"name", "change", "old", "new", "level", "down", "via", "uses",
    "breaks"}`` between two lock texts, sorted by change then name.

    ``imported`` (``{top-level module: [where, ...]}`` from the team's code)
    marks a removed package whose modules the team imports (``breaks``),
    unless the team's project declares the package itself (``declared``,
    ``{canonical name: where}`` from ``optax_gate.gate.inputs.declared``: its
    own requirements install it; the row then gets ``"declared"``)."""
    a, b = parse_lock(old_lock), parse_lock(new_lock)
    rows = []
    for name in sorted(set(a) | set(b)):
        x, y = a.get(name), b.get(name)
        row: dict[str, Any] = {
            "name": name,
            "old": x and x["version"],
            "new": y and y["version"],
            "level": "",
            "down": False,
            "via": [],
            "uses": [],
            "breaks": False,
        }
        if y is None:
            if x is None:
                raise AssertionError(f"{name} comes from one of the two locks")
            row.update(change="removed", via=x["via"])
            own = (declared or {}).get(name)
            if own:
                row["declared"] = own
            for module in sorted(top_level_modules(baseline_site, name)):
                for where in (imported or {}).get(module, []):
                    if own:
                        row["uses"].append(
                            f"{where}: imports {module}; your project declares {name} ({own}), so your own "
                            f"requirements install it, not {', '.join(x['via']) or '?'}"
                        )
                        continue
                    unknown = sorted(n for n in (declared or {}) if n not in a and n not in b)
                    if (
                        unknown
                    ):  # a package of the team's own the gate did not install may bring it (distrax brings chex)
                        row["uses"].append(
                            f"{where}: imports {module}, installed only through {', '.join(x['via']) or '?'} "
                            f"in the baseline; your project also declares "
                            f"{', '.join(f'{n} ({(declared or {})[n]})' for n in unknown[:3])}"
                            f"{' and more' if len(unknown) > 3 else ''}, which the gate did not install and "
                            f"which may bring {name}: cannot tell"
                        )
                        row["may_come_with"] = unknown
                        continue
                    row["uses"].append(
                        f"{where}: imports {module}, installed only through {', '.join(x['via']) or '?'} in "
                        "the baseline → ModuleNotFoundError"
                    )
                    row["breaks"] = True
        elif x is None:
            row.update(change="added", via=y["via"])
        elif x["version"] != y["version"]:
            lv, down = level(x["version"], y["version"])
            row.update(change="moved", level=lv, down=down, via=y["via"])
        else:
            continue
        rows.append(row)
    order = ("removed", "moved", "added")
    rows.sort(key=lambda r: (order.index(r["change"]), r["name"]))
    return rows
