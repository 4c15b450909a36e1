"""A side's run record: what its contracts did, typed in memory; JSON only in ``evidence/<label>.json``."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict, Unpack, cast

if TYPE_CHECKING:  # the report's types name the fields only; not imported by the runner (results_cache.RUN_MODULES)
    from optax_gate.gate.base import model

#: A run's status: ``ran`` only when its contracts ran and ended normally; ``not-verified`` otherwise, with a reason.
Status = Literal["ran", "not-verified"]
#: A contract's kind (its marker, ``guides.KINDS``) and its outcome (``outcomes.parse``), as the report's rows say them.
Kind = Literal["golden", "negative", "property", "acceptance", "snapshot"]
Outcome = Literal["passed", "failed", "error", "skipped", "xfailed"]


class ContractResult(TypedDict):
    """One contract's outcome in a record (``outcomes.ContractOutcome`` less its id): its API, guide, kind,
    outcome (``passed``, ``failed``, ``error``, ``skipped``, ``xfailed``...) and detail; ``defect`` (a known upstream
    defect it pins) and ``configuration`` (its configuration marker's keywords as JSON) are ``""`` when none;
    ``team`` names the team's contract folder it came from (``gate --contracts``)."""

    api: str
    guide: str
    kind: Kind
    outcome: Outcome
    detail: str
    defect: NotRequired[str]
    configuration: NotRequired[str]
    team: NotRequired[str]


class RecordedWarning(TypedDict):
    """One distinct warning a run raised (``warnings_diff.fold``): when (``import``, ``collect``, ``contract``...),
    its category, message and module, and the contracts that raised it (none at import)."""

    when: str
    category: str
    message: str
    module: str
    contracts: list[str]


class Reach(TypedDict):
    """What a run executed (``reach_record.join``): the functions of Optax and Flax run outside any module
    (``session``), in each contract module (``modules``) and, where every process recorded per API, in each module
    outside any API's tests (``common``) and in each API's tests (``apis``)."""

    session: list[str]
    modules: dict[str, list[str]]
    common: NotRequired[dict[str, list[str]]]
    apis: NotRequired[dict[str, dict[str, list[str]]]]


class RecordFields(TypedDict, total=False):
    """The fields of a run record beside its label, status, reason, versions and contracts, each present only when
    its builder knows it (``model.BaselineRecord`` and ``model.CandidateRecord`` describe them in the report):
    ``requirements`` (the SPECs resolved, or the lock's), ``sources`` (packages built from source), ``lock_file``,
    ``site_packages``, ``snapshots`` (the baseline's own snapshot folder), ``compilation_cache`` (whether the run had
    one), ``checkpoint_writer``, ``hypothesis_profile``, ``pytest_plugins``, ``warnings``,
    ``compilation_cache_discarded``; from a run, ``exitstatus``, ``duration_s`` (None: nothing ran) and ``reach``;
    from the cache, ``from_cache``; a candidate's ``same_code`` and ``selection``; a matrix environment's ``speed``
    and ``upstream_tests``. The record builders (``runner.run``, ``runner.not_verified``,
    ``results_cache.assemble``, ``same_code.record``, ``sides_prepare.prepare``) take them as keywords."""

    requirements: list[str]
    sources: list[model.SourceBuild]
    lock_file: str
    site_packages: str
    snapshots: str
    compilation_cache: bool
    checkpoint_writer: str
    hypothesis_profile: str
    pytest_plugins: model.PytestPlugins
    warnings: list[RecordedWarning]
    compilation_cache_discarded: list[str]
    exitstatus: int | None
    duration_s: float | None
    reach: Reach
    from_cache: model.FromCache
    same_code: model.SameCode
    selection: model.Selection
    speed: model.Speed | None
    upstream_tests: model.UpstreamTests | dict[str, str]


class NotARunRecord(ValueError):
    """A JSON document that is not a run record (``RunRecord.is_json`` is false of it)."""


#: The keys of a record's JSON that are :class:`RunRecord`'s own attributes, not :class:`RecordFields`.
OWN_KEYS = ("label", "status", "reason", "versions", "contracts")


@dataclasses.dataclass(frozen=True)
class RunRecord:
    """The evidence a comparison works from: one side's run.

    ``status`` is ``ran`` only when the contracted packages import, pytest ends normally (exit 0 or 1) within the
    time limit, nothing fails to collect and at least one contract ran; ``reason`` says why not (``""`` when it ran).
    ``versions`` are the distributions its import check read (None: no check, the key absent from its JSON);
    ``contracts`` each contract's result by id; ``fields`` the rest (:class:`RecordFields`)."""

    label: str
    status: Status
    reason: str | None = None
    contracts: dict[str, ContractResult] = dataclasses.field(default_factory=dict)
    versions: dict[str, str] | None = None
    fields: RecordFields = dataclasses.field(default_factory=lambda: RecordFields())

    @property
    def ran(self) -> bool:
        """Whether the side's contracts ran (``status == "ran"``)."""
        return self.status == "ran"

    def with_fields(self, **fields: Unpack[RecordFields]) -> RunRecord:
        """A copy with ``fields`` set (over those it had)."""
        return dataclasses.replace(self, fields={**self.fields, **fields})

    def to_json(self) -> dict[str, Any]:
        """The record as its file holds it: one JSON object, the attributes left None left out."""
        own = {"label": self.label, "status": self.status, "reason": self.reason, "versions": self.versions}
        return {
            **self.fields,
            **{k: v for k, v in own.items() if v is not None},
            "contracts": {cid: dict(result) for cid, result in self.contracts.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunRecord:
        """The record a file holds (``is_json`` of it is true): its own keys as attributes, every other key kept in
        ``fields`` as it is (a record written by a newer gate keeps what this one does not know)."""
        return cls(
            label=str(data["label"]),
            status=cast(Status, data["status"]),
            reason=data.get("reason"),
            contracts=dict(data["contracts"] or {}),
            versions=dict(data["versions"]) if isinstance(data.get("versions"), Mapping) else None,
            fields=cast(RecordFields, {k: v for k, v in data.items() if k not in OWN_KEYS}),
        )

    @staticmethod
    def is_json(value: Any) -> bool:
        """Whether ``value`` (read from JSON) is a run record: an object with a label, a status and contracts."""
        return isinstance(value, dict) and {"label", "status", "contracts"} <= set(value)
