"""The fields a side's run record holds beside its outcome: what the record builders take as keywords."""

from __future__ import annotations

from typing import Any, TypedDict

from optax_gate.gate.base import model


class RecordFields(TypedDict, total=False):
    """The keywords of the run record builders (``runner.run``, ``runner.not_verified``, ``results_cache.assemble``,
    ``same_code.record``, ``sides_prepare.prepare``), copied into the record as they are (``model.BaselineRecord`` and
    ``model.CandidateRecord`` describe them in the report): ``requirements`` (the SPECs resolved, or the lock's),
    ``sources`` (packages built from source), ``lock_file``, ``site_packages``, ``snapshots`` (the baseline's own
    snapshot folder), ``compilation_cache`` (whether the run had one), ``checkpoint_writer``, ``hypothesis_profile``,
    ``pytest_plugins``, ``warnings`` (``warnings_diff.fold``) and ``compilation_cache_discarded``."""

    requirements: list[str]
    sources: list[dict[str, Any]]
    lock_file: str
    site_packages: str
    snapshots: str
    compilation_cache: bool
    checkpoint_writer: str
    hypothesis_profile: str
    pytest_plugins: model.PytestPlugins
    warnings: list[dict[str, Any]]
    compilation_cache_discarded: list[str]
