"""pytest plugin: the Optax and Flax functions each contract module executes, for selecting a candidate's modules
by changed function.

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

import _pytest
import pluggy
import pytest

from optax_gate.kit.environment import trace_caches
from optax_gate.kit.environment.reach_names import FORMAT, PACKAGES, PER_API_VARIABLE, SESSION, VARIABLE, unit_of
from optax_gate.kit.environment.select_apis import api_of, module_of


class Recorder:
    """The ``sys.monitoring`` tool that records which functions of ``roots`` start, per module and, where
    ``per_api``, per API of a module (the contract marker's ``api``)."""

    def __init__(self, roots: dict[str, str]) -> None:
        self.roots = roots  # folder of a package (with its separator) -> the folder holding it
        #: whether each API of a module is recorded apart (decided once the contracts are collected: JAX is imported)
        self.per_api = False
        #: why not, when not
        self.why_not_per_api = "the contracts were not collected"
        self.found: dict[str, set[str]] = {SESSION: set()}
        #: module -> API -> what started while that API's tests ran (per_api only)
        self.apis: dict[str, dict[str, set[str]]] = {}
        #: module -> what started in it outside any API's tests: collection, module fixtures, tests without an API
        self.common: dict[str, set[str]] = {}
        self.current: tuple[str, str | None] = (SESSION, None)
        self.current_file: str | None = None
        self.tool: int | None = None
        #: frames of pytest and pluggy: above them, no import is a contract's
        self.outer = tuple(os.path.dirname(m.__file__) + os.sep for m in (_pytest, pluggy) if m.__file__)

    def start(self) -> None:
        """Register the recorder as a free ``sys.monitoring`` tool, called at each function start."""
        monitoring = sys.monitoring
        free = [
            i
            for i in range(6)
            if monitoring.get_tool(i) is None and i not in (monitoring.DEBUGGER_ID, monitoring.COVERAGE_ID)
        ]
        if not free:
            raise RuntimeError("no free sys.monitoring tool id for the reach recorder")
        self.tool = free[-1]
        monitoring.use_tool_id(self.tool, "optax-gate-reach")
        monitoring.register_callback(self.tool, monitoring.events.PY_START, self._on_start)
        monitoring.set_events(self.tool, monitoring.events.PY_START)

    def stop(self) -> None:
        """Unregister the recorder's ``sys.monitoring`` tool."""
        if self.tool is not None:
            sys.monitoring.set_events(self.tool, 0)
            sys.monitoring.register_callback(self.tool, sys.monitoring.events.PY_START, None)
            sys.monitoring.free_tool_id(self.tool)
            self.tool = None

    def _on_start(self, code: types.CodeType, offset: int) -> Any:
        name = code.co_filename
        for root, base in self.roots.items():
            if name.startswith(root):
                unit = f"{name[len(base) :].replace(os.sep, '/')}::{unit_of(code.co_qualname)}"
                module, api = (SESSION, None) if self._importing() else self.current
                self.found[module].add(unit)
                if module != SESSION:
                    (self.common[module] if api is None else self.apis[module][api]).add(unit)
                break
        return sys.monitoring.DISABLE

    def _importing(self) -> bool:
        """Whether the code starting now runs inside the import of a module other than
        the current contract module (a helper, the kit, Flax): what it runs, it runs once
        for every module that imports it later, so it is the session's."""
        frame: types.FrameType | None = sys._getframe(2)
        while frame is not None:
            code = frame.f_code
            if code.co_filename.startswith(self.outer):
                return False
            if code.co_name == "<module>" and code.co_filename != self.current_file:
                return True
            frame = frame.f_back
        return False

    def switch(self, module: str, path: str | None = None, api: str | None = None) -> None:
        """From now on, what starts is ``module``'s (its file ``path``), and ``api``'s within it when
        recording per API (None: the module's own, outside any API's tests). Entering another module
        clears every cache; entering another API of the same module evicts every trace of code JAX did not
        define (``trace_caches``), so that no API takes a trace another one made."""
        unit = (module, api if self.per_api else None)
        if unit == self.current:
            return
        if module != SESSION:
            if module != self.current[0]:
                clear_caches()
            else:
                trace_caches.evict_foreign()
                clear_function_caches()
        self.current, self.current_file = unit, path
        self.found.setdefault(module, set())
        if module != SESSION:
            self.common.setdefault(module, set())
            if unit[1] is not None:
                self.apis.setdefault(module, {}).setdefault(unit[1], set())
        sys.monitoring.restart_events()


def clear_caches() -> None:
    """Clear JAX's caches and every ``functools`` cache of the recorded packages, this project and the contracts."""
    jax = sys.modules.get("jax")
    if jax is not None:
        jax.clear_caches()
    clear_function_caches()


def clear_function_caches() -> None:
    """Clear every ``functools`` cache of the recorded packages, this project and the contracts."""
    prefixes = (*PACKAGES, "optax_gate", "tests", "test_")
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(prefixes):
            continue
        for value in list(vars(module).values()):
            for target in (value, *(vars(value).values() if isinstance(value, type) else ())):
                clear = getattr(target, "cache_clear", None)
                if callable(clear) and hasattr(target, "cache_info"):
                    clear()


def _roots() -> dict[str, str]:
    out = {}
    for package in PACKAGES:
        spec = importlib.util.find_spec(package)
        for folder in (spec.submodule_search_locations or []) if spec else []:
            real = os.path.realpath(folder)
            for shown in {folder, real}:
                out[shown.rstrip(os.sep) + os.sep] = os.path.dirname(shown.rstrip(os.sep)) + os.sep
    return out


def _start() -> Recorder | None:
    """The recorder, started as the plugin is imported (before ``conftest.py`` and Optax are), when :data:`VARIABLE` is
    set."""
    if not os.environ.get(VARIABLE):
        return None
    recorder = Recorder(_roots())
    recorder.start()
    return recorder


_RECORDER = _start()


@pytest.hookimpl(tryfirst=True)
def pytest_collectstart(collector: pytest.Collector) -> None:
    """What starts now is the module being collected's (its import), else the session's."""
    if _RECORDER is not None:
        if isinstance(collector, pytest.Module):
            _RECORDER.switch(module_of(collector.nodeid), str(collector.path))
        else:
            _RECORDER.switch(SESSION)


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """A module collected: what follows is the session's until the next one."""
    if _RECORDER is not None and report.nodeid.endswith(".py"):  # a module collected: what follows is no module's
        _RECORDER.switch(SESSION)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Decide whether to record per API (asked for, and JAX is imported now) and, if so, run each API's tests of a
    module
    one after the other (in the order their first test was collected): one eviction per API, not per test."""
    if _RECORDER is None:
        return
    if os.environ.get(PER_API_VARIABLE) != "1":
        _RECORDER.why_not_per_api = f"not asked for (${PER_API_VARIABLE})"
    else:
        _RECORDER.why_not_per_api = trace_caches.supported() if "jax" in sys.modules else "JAX is not imported"
    _RECORDER.per_api = not _RECORDER.why_not_per_api
    if not _RECORDER.per_api:
        return
    first: dict[tuple[str, str | None], int] = {}
    order = [first.setdefault((module_of(i.nodeid), api_of(i)), len(first)) for i in items]
    items[:] = [item for _, item in sorted(zip(order, items, strict=True), key=lambda pair: pair[0])]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """What starts now is the contract's module's, and its API's."""
    if _RECORDER is not None:
        _RECORDER.switch(module_of(item.nodeid), str(item.path), api_of(item))


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest) -> Any:
    """A fixture that outlives a test serves every API after it: what its set-up runs is its module's own
    (module and class scope) or the session's (package and session scope)."""
    if _RECORDER is None or fixturedef.scope == "function":
        return (yield)
    (module, api), path = _RECORDER.current, _RECORDER.current_file
    _RECORDER.switch(SESSION if fixturedef.scope in ("package", "session") else module, path)
    try:
        return (yield)
    finally:
        _RECORDER.switch(module, path, api)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Write the record (:func:`dump`)."""
    dump()


def dump() -> None:
    """Stop the recorder (if one runs) and write its record to ``$OPTAX_GATE_REACH`` with this process's id
    added (atomically): one file per process, the pytest-xdist controller and each worker, or the speed
    worker (``kit.environment.speed``), whose record is all ``session``."""
    if _RECORDER is None:
        return
    _RECORDER.stop()
    target = Path(f"{os.environ[VARIABLE]}.{os.getpid()}")
    found = {k: sorted(v) for k, v in _RECORDER.found.items()}
    payload: dict[str, Any] = {
        "format": FORMAT,
        "packages": list(PACKAGES),
        "session": found.pop(SESSION, []),
        "modules": found,
    }
    if _RECORDER.per_api:
        payload["common"] = {k: sorted(v) for k, v in _RECORDER.common.items()}
        payload["apis"] = {k: {api: sorted(v) for api, v in apis.items()} for k, apis in _RECORDER.apis.items()}
    else:
        payload["per_api"] = _RECORDER.why_not_per_api
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(payload, out, sort_keys=True)
    os.replace(tmp, target)
