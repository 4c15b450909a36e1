"""The matrix report's data shapes, as TypedDicts: its plan (``plan.json``) and its ``report.json``, built by
``plan.merge`` and ``plan.exit_status``, rendered by ``report.matrix_page``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, NotRequired, TypedDict

if TYPE_CHECKING:  # types only
    from optax_gate.gate.base import model
    from optax_gate.gate.base.run_record import Kind, Outcome

#: A contract's change in one environment (``judge.compare.CHANGES``).
Change = Literal["broken", "changed", "fixed", "new", "gone", "unchanged"]


class PlannedEnvironment(TypedDict):
    """One environment of the plan (``plan.Environment.to_json``): its name, the specs that replace the baseline's,
    why it is planned, and whether a package is built from an unreleased commit."""

    name: str
    specs: list[str]
    why: str
    unreleased: bool


class Plan(TypedDict):
    """``plan.json``: the releases found per package, and the environments planned from them."""

    discovered: dict[str, list[str]]
    environments: list[PlannedEnvironment]


class BeyondSection(TypedDict):
    """A section beyond the contracts in one environment (``diffs.unseen``): its status and its rows' counts."""

    status: str | None
    counts: model.SectionCounts


class UpstreamDirection(TypedDict):
    """One direction of an environment's cross-run of optax's own tests: its files, tests run and failed, seconds,
    failures per class (``upstream.failures.classify``) and its control run."""

    label: str
    files: int
    ran: int
    failed: int
    seconds: float
    kinds: dict[str, int]
    control: Any


class UpstreamRow(TypedDict):
    """An environment's cross-run of optax's own tests (``plan.upstream_row``): ``ran`` with its figures and
    findings, else ``failed`` or ``missing`` with the error."""

    status: Literal["ran", "failed", "missing"]
    error: NotRequired[str]
    seconds: NotRequired[float]
    modules: NotRequired[int]
    directions: NotRequired[list[UpstreamDirection]]
    findings: NotRequired[list[Any]]  # as model.UpstreamTests holds them


class EnvironmentRow(PlannedEnvironment):
    """One environment of the report: the plan's entry with its verdict, reasons and change counts against the
    baseline, its run record's versions, status and reason, whether it ran its contracts, its speed readings and the
    counts of the sections beyond the contracts (None: not made)."""

    sources: list[model.SourceBuild]
    verdict: Literal["pass", "fail", "not-verified"]
    reasons: list[str]
    summary: dict[str, int]
    upstream_tests: UpstreamRow | None
    versions: dict[str, str]
    status: str
    reason: str
    ran: bool
    speed: model.Speed | None
    beyond: dict[str, BeyondSection] | None


class Cell(TypedDict):
    """One contract in one environment: its outcome there, its change against the baseline, and the detail."""

    outcome: Outcome | None
    change: Change
    detail: str


class ContractRow(TypedDict):
    """One contract across the environments: its API, guide, kind, known defect and baseline outcome, whether it
    differs in an environment that ran, and its cell per environment."""

    id: str
    api: str
    guide: str
    kind: Kind
    defect: str
    baseline: Outcome | None
    differs: bool
    cells: dict[str, Cell]


class ApiCounts(TypedDict):
    """One API in one environment: its contracts per change, and the most severe change (``plan.WORST``)."""

    broken: int
    changed: int
    fixed: int
    new: int
    gone: int
    unchanged: int
    worst: Change


class ApiRow(TypedDict):
    """One API across the environments: its contracts, whether one differs, its counts per environment."""

    api: str
    contracts: int
    differs: bool
    cells: dict[str, ApiCounts]


class ExitStatus(TypedDict):
    """The matrix run's exit status and why (``plan.exit_status``)."""

    fail_on: str | None
    met_by: list[str]
    not_verified: list[str]
    status: int
    baseline_ran: bool


class MatrixReport(TypedDict):
    """The matrix report (schema 1, ``"kind": "matrix"``): the releases found, the baseline's run record (less its
    contracts), each environment, each API and each contract across them, and the exit status."""

    schema: Literal[1]
    kind: Literal["matrix"]
    discovered: dict[str, list[str]]
    baseline: model.BaselineRecord
    environments: list[EnvironmentRow]
    apis: list[ApiRow]
    contracts: list[ContractRow]
    exit: NotRequired[ExitStatus]
