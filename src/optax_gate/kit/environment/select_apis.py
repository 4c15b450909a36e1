"""pytest plugin: in the contract modules a selection runs in part, deselect the contracts of the APIs it does not run.

The gate writes ``{module: [api, ...]}`` (the APIs that run, per module run in part: ``gate.reuse.selection``)
to the JSON file ``$OPTAX_GATE_SELECT_APIS``; a contract of a listed module whose ``contract`` marker names
another API, or none, is deselected. Without the variable, nothing is."""

from __future__ import annotations

import json
import os

import pytest

from optax_gate.kit.environment.reach_names import SELECT_VARIABLE


def module_of(nodeid: str) -> str:
    """The contract module of a test id (its path, as pytest names it)."""
    return nodeid.split("::", 1)[0]


def api_of(item: pytest.Item) -> str | None:
    """The API a contract pins (its ``contract`` marker's ``api``), or None."""
    marker = item.get_closest_marker("contract")
    api = marker.kwargs.get("api") if marker is not None else None
    return str(api) if api else None


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep only the contracts of the APIs the file named by :data:`SELECT_VARIABLE` lists for their module
    (every contract of a module it does not list); the others are deselected."""
    path = os.environ.get(SELECT_VARIABLE)
    if not path:
        return
    with open(path, encoding="utf-8") as handle:
        runs: dict[str, list[str]] = json.load(handle)
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        module = module_of(item.nodeid)
        (drop if module in runs and api_of(item) not in runs[module] else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
