"""Discover releases on the package index (PEP 691 JSON simple API).

The index is the one uv and pip use: ``UV_INDEX_URL``, else ``PIP_INDEX_URL``,
else PyPI's ``https://pypi.org/simple``. Pre-releases and yanked releases are
left out. Versions are ordered by PEP 440 (``packaging.version``).
"""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Callable
from typing import Any

from packaging.version import InvalidVersion, Version

ACCEPT = "application/vnd.pypi.simple.v1+json"
DEFAULT_INDEX = "https://pypi.org/simple"

Fetch = Callable[[str], dict[str, Any]]


def index_url() -> str:
    """The simple index in use (no trailing slash)."""
    return (os.environ.get("UV_INDEX_URL") or os.environ.get("PIP_INDEX_URL") or DEFAULT_INDEX).rstrip("/")


def fetch_json(url: str) -> dict[str, Any]:
    """The JSON document at ``url`` (the package index's JSON API).

    Raises:
      OSError: the index cannot be reached (``urllib.error.URLError`` included)."""
    request = urllib.request.Request(url, headers={"Accept": ACCEPT})
    with urllib.request.urlopen(request, timeout=60) as response:
        data: dict[str, Any] = json.load(response)
        return data


def releases(project: str, fetch: Fetch | None = None) -> list[Version]:
    """All final, non-yanked releases of ``project``, oldest first (``fetch``: the index's JSON of a URL,
    :func:`fetch_json` when None, looked up at the call so that a test can replace it).

    Raises:
      OSError: when the index cannot be reached (urllib's URLError is one).
    """
    data = (fetch or fetch_json)(f"{index_url()}/{project}/")
    yanked: dict[str, bool] = {}
    for f in data.get("files", []):
        version = _version_of(project, f.get("filename", ""))
        if version is not None:
            yanked[version] = yanked.get(version, True) and bool(f.get("yanked"))
    out = set()
    for raw in data.get("versions") or list(yanked):
        try:
            v = Version(raw)
        except InvalidVersion:
            continue
        if not v.is_prerelease and not v.is_devrelease and not yanked.get(raw, False):
            out.add(v)
    return sorted(out)


def _version_of(project: str, filename: str) -> str | None:
    """Version part of a wheel or sdist file name (``optax-0.2.8-py3-none-any.whl``,
    ``optax-0.2.8.tar.gz``); wheel and PEP 625 sdist names escape ``-`` in the
    project name as ``_``."""
    stem = filename.removesuffix(".tar.gz").removesuffix(".zip").removesuffix(".whl")
    parts = stem.split("-")
    if len(parts) < 2 or parts[0].lower().replace("_", "-") != project.lower().replace("_", "-"):
        return None
    return parts[1]


def newer_than(project: str, baseline: str, fetch: Fetch | None = None, include_older: bool = False) -> list[Version]:
    """Releases of ``project`` newer than ``baseline`` (all others too with
    ``include_older``, baseline itself excluded), oldest first."""
    base = Version(baseline)
    return [v for v in releases(project, fetch) if v != base and (include_older or v > base)]
