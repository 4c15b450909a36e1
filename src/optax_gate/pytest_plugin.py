"""pytest plugin of the suite (registered through the ``pytest11`` entry point).

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import json
import os
import tomllib
import warnings
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from optax_gate.kit import guides, moved_behaviour
from optax_gate.kit.environment.probe import installed_versions, warning_record

DEFAULT_LEDGER = "tests/contracts/known_defects.toml"
_LEDGER = pytest.StashKey[dict[str, str]]()
_MOVED = pytest.StashKey[dict[str, moved_behaviour.Entry]]()
_BASELINE = pytest.StashKey[str]()
_MOVED_ENTRY = pytest.StashKey[moved_behaviour.Entry]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add the ledgers' ini options (known defects, moved behaviour)."""
    parser.addini("known_defects", "ledger of known upstream defects (TOML: id = reason)", default=DEFAULT_LEDGER)
    parser.addini(
        "moved_behaviour",
        "ledger of behaviour moved after the pinned baseline (TOML [[moved]] entries)",
        default=moved_behaviour.LEDGER,
    )


def load_ledger(path: Path) -> dict[str, str]:
    """``{id: reason}`` from the ledger; an absent file is an empty ledger.

    Raises:
      pytest.UsageError: when the file is not TOML of string values.
    """
    if not path.exists():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise pytest.UsageError(f"{path}: {exc}") from None
    bad = [k for k, v in data.items() if not isinstance(v, str) or not v.strip()]
    if bad:
        raise pytest.UsageError(f"{path}: entries need a non-empty reason string: {bad}")
    return data


def pytest_configure(config: pytest.Config) -> None:
    """Register the contract markers and read the ledgers."""
    config.addinivalue_line("markers", "contract(api, guide): the API a contract pins and the guide it encodes")
    config.addinivalue_line(
        "markers", "known_defect(id): the contract pins a known upstream defect of the baseline (see the ledger)"
    )
    config.addinivalue_line(
        "markers",
        "configuration(**keywords): the keyword arguments the contract's configuration fixes, in words "
        "(weight_decay='a schedule'), so that a team's literal arguments can rule a finding out (gate --usage)",
    )
    config.stash[_LEDGER] = load_ledger(config.rootpath / config.getini("known_defects"))
    config.addinivalue_line(
        "markers",
        "moved_behaviour(optax, why): added to a contract the ledger of moved behaviour lists for this "
        "baseline: it passes when it fails as the baseline does",
    )
    try:
        entries = moved_behaviour.load(config.rootpath / config.getini("moved_behaviour"))
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[_BASELINE] = moved_behaviour.baseline_version()
    config.stash[_MOVED] = moved_behaviour.applicable(entries, config.stash[_BASELINE])
    for kind, meaning in guides.KINDS.items():
        config.addinivalue_line("markers", f"{kind}: {meaning}")


def pytest_report_header(config: pytest.Config) -> list[str]:
    """The versions of the packages under test, in pytest's header."""
    versions = installed_versions()
    line = ", ".join(f"{k} {v}" for k, v in versions.items())
    return [f"optax-gate versions: {line}"]


def contract_metadata(item: pytest.Item) -> dict[str, str] | None:
    """The ``api``, ``guide``, ``kind`` (and ``defect``, ``"id: reason"``, for a
    known upstream defect) of a contract test, or None for a test of the suite
    itself.

    Raises:
      pytest.UsageError: a contract without exactly one kind marker, or whose
        guide is neither in ``optax_gate.kit.guides.GUIDES`` nor a source label.
    """
    marker = item.get_closest_marker("contract")
    if marker is None:
        return None
    api, guide = marker.kwargs.get("api"), marker.kwargs.get("guide")
    kinds = [k for k in guides.KINDS if item.get_closest_marker(k) is not None]
    if not api or not guides.is_source(guide):
        raise pytest.UsageError(
            f"{item.nodeid}: contract marker needs api= and guide= naming a guide from optax_gate.kit.guides "
            f"or a source label starting with one of {list(guides.SOURCE_PREFIXES)}, got {marker.kwargs}"
        )
    if len(kinds) != 1:
        raise pytest.UsageError(
            f"{item.nodeid}: a contract needs exactly one kind marker of {list(guides.KINDS)}, got {kinds}"
        )
    meta = {"api": api, "guide": guide, "kind": kinds[0]}
    defect = item.get_closest_marker("known_defect")
    if defect is not None:
        ledger = item.config.stash[_LEDGER]
        ident = defect.args[0] if defect.args else None
        if ident not in ledger:
            raise pytest.UsageError(
                f"{item.nodeid}: known_defect({ident!r}) is not in the ledger {item.config.getini('known_defects')}"
            )
        meta["defect"] = f"{ident}: {ledger[ident]}"
    configuration = item.get_closest_marker("configuration")
    if configuration is not None:
        if (
            configuration.args
            or not configuration.kwargs
            or not all(isinstance(v, str) and v for v in configuration.kwargs.values())
        ):
            raise pytest.UsageError(
                f"{item.nodeid}: configuration() takes keywords whose values are words "
                f"(weight_decay='a schedule'), got {configuration.args} {configuration.kwargs}"
            )
        meta["configuration"] = json.dumps(configuration.kwargs, sort_keys=True)
    return meta


@pytest.hookimpl(wrapper=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> Generator[None, Any, Any]:
    """Check each contract's labels while its module is collected, so a
    mislabelled contract is a collection error of that module (reported the
    same way with or without pytest-xdist, where an error raised later would
    crash the worker)."""
    result = yield
    for item in result if isinstance(result, list) else [result]:
        if isinstance(item, pytest.Item):
            try:
                contract_metadata(item)
            except pytest.UsageError as exc:
                raise collector.CollectError(str(exc)) from None
    return result


def pytest_collection_finish(session: pytest.Session) -> None:
    """Write the number of collected tests to ``$OPTAX_GATE_PROGRESS`` (when
    set): the gate's progress lines read it as the ``M`` of ``N/M``."""
    path = os.environ.get("OPTAX_GATE_PROGRESS")
    if path and session.items:  # under pytest-xdist each worker collects the whole run
        Path(path).write_text(f"{len(session.items)}\n", encoding="utf-8")
        go = os.environ.get("OPTAX_GATE_GO")
        if go:
            _wait_for(Path(go))


def _wait_for(go: Path, poll_s: float = 0.05) -> None:
    """Wait until ``go`` exists; stop the session if the process that
    started this one is gone (nobody would ever create it)."""
    import time

    parent = os.getppid()
    while not go.exists():
        if os.getppid() != parent:
            pytest.exit("the gate that started this run is gone", returncode=pytest.ExitCode.INTERRUPTED)
        time.sleep(poll_s)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Put each contract's labels in its report's properties, and mark the contracts the ledger of moved
    behaviour lists for this baseline."""
    moved = config.stash[_MOVED]
    for item in items:
        meta = contract_metadata(item)
        if meta is not None:
            item.user_properties.extend(("contract_" + k, v) for k, v in meta.items())
        entry = moved.get(item.nodeid)
        if entry is not None:
            item.stash[_MOVED_ENTRY] = entry
            item.add_marker(pytest.mark.moved_behaviour(optax=entry.optax, why=entry.why))
            item.user_properties.append(("contract_moved", f"optax {entry.optax}: {entry.why}"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Generator[None, Any, Any]:
    """A contract the ledger of moved behaviour lists for this baseline passes
    when its call failed as the baseline does, and fails otherwise
    (``moved_behaviour.judged``)."""
    report = yield
    entry = item.stash.get(_MOVED_ENTRY, None)
    if entry is not None and report.when == "call" and not report.skipped:
        passes, message = moved_behaviour.judged(
            entry, item.config.stash[_BASELINE], report.failed, str(report.longrepr) if report.failed else ""
        )
        report.outcome = "passed" if passes else "failed"
        report.longrepr = None if passes else message
    return report


WARNINGS_ENV = "OPTAX_GATE_WARNINGS"
_RECORDED: list[dict[str, object]] = []


def pytest_warning_recorded(warning_message: warnings.WarningMessage, when: str, nodeid: str, location: object) -> None:
    """Keep each warning with the contract (``nodeid``) and phase that raised it."""
    _RECORDED.append({"nodeid": nodeid, "when": when, **warning_record(warning_message)})


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Write the warnings kept to ``$OPTAX_GATE_WARNINGS`` (when set)."""
    target = os.environ.get(WARNINGS_ENV)
    if target:
        Path(target).write_text(json.dumps(_RECORDED, indent=1) + "\n", encoding="utf-8")
