"""The report's data shapes (``report.json``, schema 3) as TypedDicts, for the type checker.

Generated from ``gate/report/report.schema.json`` by ``./noxw -s report-model``
(``optax_gate.gate.report.schema_model``): do not edit; change the schema and regenerate."""
from __future__ import annotations

# ruff: noqa

from typing import Any, Literal, NotRequired, TypedDict

BisectPackage = TypedDict(
    'BisectPackage',
    {
        'history': str,
        'environment': NotRequired[Literal['candidate', 'baseline']],
        'from': NotRequired[str],
        'to': NotRequired[str],
        'commits': NotRequired[int],
        'searches': NotRequired[int],
        'built': NotRequired[int],
        'build_s': NotRequired[float],
        'error': NotRequired[str],
    },
)


class BisectSummary(TypedDict):
    """
    --bisect or the bisect command (schema 3): the bisection as a whole; absent without one. optax_gate.gate.bisect.flow.
    """

    packages: dict[str, BisectPackage]
    duration_s: float
    error: NotRequired[str]


class GateError(TypedDict):
    phase: str
    error: str


class Scope(TypedDict):
    """
    optax_gate.gate.team_code.scope: what scoped the findings (by: 'usage', 'run' or null when nothing did), --fail-on, how many findings are elsewhere and how many broken contracts they hold (not counted in the verdict unless fail_on is 'all').
    """

    by: str | None
    fail_on: Literal['broken', 'all']
    elsewhere: int
    broken_elsewhere: int


class Composition(TypedDict):
    constructors: NotRequired[int]
    errors: NotRequired[list[str]]


class Attribution(TypedDict):
    """
    --usage (optax_gate.gate.team_code.attribution): the composition probe of both environments (constructors whose parts are known; errors of a probe that could not run) and the team's lines per verdict, over the findings
    """

    composition: NotRequired[Composition]
    lines: NotRequired[dict[str, int]]


class UpstreamControl(TypedDict):
    """
    the control run: the suspect tests re-run in their own environment (a test failing there too is 'could not tell')
    """

    tests: int
    files: int
    seconds: float


class UpstreamSplit(TypedDict):
    """
    the split by cause where the environments differ beyond optax: behaviour failures re-run with one side's optax on the other side's packages (upstream_tests.split_by_cause); 'error' says why a run could not be made, '' otherwise
    """

    tests: int
    seconds: float
    error: str


class UpstreamFailure(TypedDict):
    test: str
    text: str
    kind: Literal['api', 'could not tell', 'behaviour', 'other packages']
    subject: str
    change: Literal['', 'new', 'gone', 'changed']
    moved_by: NotRequired[
        Literal['optax', 'other packages', 'both together', 'not split']
    ]


class UpstreamDirection(TypedDict):
    label: str
    files: list[str]
    ran: int
    failed: int
    seconds: float
    overlay: list[str]
    control: NotRequired[UpstreamControl]
    split: NotRequired[UpstreamSplit]
    failures: list[UpstreamFailure]


class UpstreamTests(TypedDict):
    """
    --upstream-tests: optax's shipped tests of the modules that differ, cross-run (optax_gate.gate.upstream.upstream_tests): each direction's files, counts, time, overlay of missing test dependencies and classified failures; its findings are in 'findings' (section 'upstream-tests') and do not change the verdict.
    """

    changed_modules: list[str]
    other_packages: NotRequired[list[str]]
    seconds: float
    findings: list[Any]
    directions: list[UpstreamDirection]


class FindingPart(TypedDict):
    change: Literal['broken', 'changed', 'fixed', 'new', 'gone']
    section: Literal['contracts', 'surface', 'dependencies', 'warnings']
    cause: str
    contracts: int
    names: list[str]
    pattern: NotRequired[str]
    gone: NotRequired[bool]
    params_nonfinite: NotRequired[bool]


class LineAttribution(TypedDict):
    verdict: Literal['affected', 'not-affected', 'cannot-tell']
    why: str
    calls: str
    decided_by: NotRequired[str]


class LineRun(TypedDict):
    run: Literal[
        'diverges',
        'same',
        'structure',
        'inputs-differ',
        'not-reached',
        'not-reached-candidate',
    ]
    findings: NotRequired[list[int]]
    until: NotRequired[str]
    bits: NotRequired[Literal['within the budget']]


class PytestPlugins(TypedDict):
    """
    the pytest plugins the run loaded (modules) and the installed ones it left out (distributions); see optax_gate.gate.run.pytest_plugins
    """

    loaded: list[str]
    left_out: list[str]


class FromCache(TypedDict):
    """
    its contract modules taken from the results cache (optax_gate.gate.reuse.results_cache.origin): the key, the oldest result's date, how many modules of how many
    """

    key: str
    recorded: str
    modules: NotRequired[int]
    of: NotRequired[int]


class BaselineRecord(TypedDict):
    label: str
    status: Literal['ran', 'not-verified']
    reason: NotRequired[str]
    requirements: NotRequired[list[str]]
    versions: NotRequired[dict[str, str]]
    duration_s: NotRequired[float | None]
    hypothesis_profile: NotRequired[str]
    snapshots: NotRequired[str]
    pytest_plugins: NotRequired[PytestPlugins]
    lock_file: NotRequired[str]
    site_packages: NotRequired[str]
    from_cache: NotRequired[FromCache]
    exitstatus: NotRequired[int | None]


SameCode = TypedDict(
    'SameCode',
    {
        'as': Literal['baseline'],
        'why': str,
        'packages': dict[str, int],
        'text_only': list[str],
    },
)


class Selection(TypedDict):
    """
    present when a selection of the candidate's contract modules was tried (optax_gate.gate.reuse.selection): the candidate ran only the modules that executed, at the baseline, a function it changed, and the others' outcomes are the baseline's, taken, not run; or, with 'everything', every module ran and why
    """

    changed: list[str]
    ran: list[str]
    taken: list[str]
    reached: dict[str, list[str]]
    apis: NotRequired[dict[str, list[str]]]
    everything: NotRequired[str]


class SourceCommit(TypedDict):
    sha: str
    short: str
    date: str
    subject: str
    pr: int | None


class SourceBuild(TypedDict):
    package: Literal['optax', 'flax']
    given: str
    repository: str
    ref: str
    status: Literal['built', 'failed']
    commit: SourceCommit | None
    wheel: str | None
    sha256: str | None
    dirty: list[str]
    message: str


class CandidateRecord(TypedDict):
    label: str
    status: Literal['ran', 'not-verified']
    reason: NotRequired[str]
    requirements: NotRequired[list[str]]
    versions: NotRequired[dict[str, str]]
    duration_s: NotRequired[float | None]
    hypothesis_profile: NotRequired[str]
    snapshots: NotRequired[str]
    pytest_plugins: NotRequired[PytestPlugins]
    lock_file: NotRequired[str]
    site_packages: NotRequired[str]
    from_cache: NotRequired[FromCache]
    exitstatus: NotRequired[int | None]
    same_code: NotRequired[SameCode]
    selection: NotRequired[Selection]
    sources: NotRequired[list[SourceBuild]]


class ContractRow(TypedDict):
    id: str
    api: str
    guide: str
    kind: Literal['golden', 'negative', 'property', 'acceptance', 'snapshot']
    defect: str
    baseline: Literal['passed', 'failed', 'error', 'skipped', 'xfailed'] | None
    candidate: Literal['passed', 'failed', 'error', 'skipped', 'xfailed'] | None
    change: Literal['broken', 'changed', 'fixed', 'new', 'gone', 'unchanged']
    detail: str
    team: NotRequired[str]
    baseline_detail: NotRequired[str]
    configuration: NotRequired[dict[str, str]]


class CandidateLock(TypedDict):
    """
    the lock the candidate's environment was built from, written into the run folder
    """

    file: str
    sha256: str


class NotScanned(TypedDict):
    path: str
    reason: str


class Usage(TypedDict):
    """
    The --usage scan (optax_gate.gate.inputs.usage_files): every .py/.ipynb file found is scanned or listed in not_scanned with its reason; an API change a file not scanned may use is cannot-tell, never unaffected.
    """

    paths: list[str]
    files: int
    uses: int
    scanned: NotRequired[int]
    not_scanned: NotRequired[list[NotScanned]]


SectionCounts = TypedDict(
    'SectionCounts',
    {
        'broken': int,
        'changed': int,
        'new': int,
        'noted': int,
        'cannot-tell': NotRequired[int],
    },
)


class SurfaceSite(TypedDict):
    where: str
    verdict: Literal['breaks', 'cannot-tell', 'affected', 'unaffected']
    note: str


class SurfaceRow(TypedDict):
    path: str
    change: Literal[
        'removed',
        'moved',
        'kind-changed',
        'parameter-removed',
        'parameter-renamed',
        'parameter-reordered',
        'keyword-only',
        'positional-only',
        'parameter-kind-changed',
        'new-required-parameter',
        'default-removed',
        'default-changed',
        'parameter-added',
        'deprecated',
        'added',
    ]
    kind: Literal[
        'module',
        'class',
        'function',
        'attribute',
        'type alias',
        'external',
        'unresolved',
    ]
    old: str
    new: str
    where: str
    param: str
    verdict: Literal['broken', 'cannot-tell', 'changed', 'new', 'noted']
    breaks: NotRequired[bool]
    uses: list[str]
    sites: NotRequired[list[SurfaceSite]]
    not_scanned: NotRequired[list[str]]


class Surface(TypedDict):
    status: Literal['compared', 'unavailable']
    reason: str
    counts: SectionCounts
    packages: list[str]
    duration_s: NotRequired[float]
    rows: list[SurfaceRow]


class OwnWarnings(TypedDict):
    """
    warnings JAX raised about the gate's own compilation cache (optax_gate.gate.install.compilation_cache.OWN_WARNINGS), left out of the rows: how many per side, and the corrupt cache entries discarded after the run; absent when there were none
    """

    baseline: int
    candidate: int
    discarded: int


class WarningRow(TypedDict):
    change: Literal['new', 'moved', 'gone']
    module_before: NotRequired[str]
    verdict: Literal['broken', 'changed', 'new', 'noted']
    when: Literal['import', 'collect', 'contract', 'setup', 'teardown', 'config']
    category: str
    message: str
    module: str
    contracts: list[str]
    apis: list[str]
    your_code: NotRequired[list[str]]


class Warnings(TypedDict):
    status: Literal['compared', 'unavailable']
    reason: str
    counts: SectionCounts
    fail_on_new_deprecations: NotRequired[bool]
    own: NotRequired[OwnWarnings]
    rows: list[WarningRow]


class RequiresPython(TypedDict):
    baseline: dict[str, str]
    candidate: dict[str, str]


class JaxlibTags(TypedDict):
    baseline: list[str]
    candidate: list[str]


class DependencyRow(TypedDict):
    name: str
    change: Literal['added', 'removed', 'moved']
    old: str | None
    new: str | None
    level: Literal['', 'major', 'minor', 'patch', 'other']
    down: bool
    via: list[str]
    uses: list[str]
    breaks: NotRequired[bool]
    verdict: Literal['broken', 'cannot-tell', 'changed', 'new', 'noted']
    not_scanned: NotRequired[list[str]]


class Dependencies(TypedDict):
    status: Literal['compared', 'unavailable']
    reason: str
    counts: SectionCounts
    requires_python: RequiresPython
    jaxlib_tags: JaxlibTags
    rows: list[DependencyRow]


class Wrote(TypedDict):
    """
    the files of run_dir that the runs created, changed or deleted (modification time or size; .git, __pycache__ and environments left out; not looked at past 20,000 files). Each run started from the folder as it was, and the gate put it back after each (optax_gate.gate.team_run.team_files); reports written before 2026-12-02 lack kept and not_restored: there the files held the last run's output
    """

    files: list[str]
    count: int
    existed: NotRequired[list[str]]
    kept: NotRequired[list[str]]
    not_restored: NotRequired[list[str]]


class CommandRun(TypedDict):
    label: Literal['baseline', 'baseline-repeat', 'candidate']
    exit: int | None
    seconds: float
    timed_out: NotRequired[bool]
    error: NotRequired[str]
    tail: NotRequired[str]
    log: NotRequired[str]
    trace: NotRequired[str]
    calls: NotRequired[int]


class OutputFirst(TypedDict):
    """
    the first line that differs beyond the budget (line: 1-based, in the baseline's output), or null
    """

    line: int
    baseline: str
    candidate: str
    change: str


class Output(TypedDict):
    lines: int
    noise: int
    differs: bool
    within_budget: int
    first: OutputFirst | None
    warnings: NotRequired[list[str]]
    noise_ratio: NotRequired[float | None]


class FilesFirst(TypedDict):
    """
    the first output that differs beyond the budget (key: the array's key in it, or empty), or null
    """

    file: str
    key: str
    change: str


class Files(TypedDict):
    files: int
    noise: int
    differs: bool
    within_budget: int
    first: FilesFirst | None
    not_judged: NotRequired[list[str]]
    checkpoint_folders: NotRequired[int]
    noise_files: NotRequired[list[str]]


class Witness(TypedDict):
    """
    the second witness (optax_gate.gate.team_run.witness): the runs' exit statuses, output and written files compared without the recorder, where the two baseline runs agree; differs: beyond the ULP budget; first: where first, in words (absent in reports written before 2026-12-03)
    """

    exit: list[int | None]
    output: Output
    files: Files
    differs: bool
    first: str


class ReplayRun(TypedDict):
    label: Literal['baseline-replay', 'candidate-replay']
    exit: int | None
    seconds: float
    timed_out: NotRequired[bool]
    error: NotRequired[str]


class Birth(TypedDict):
    function: str
    site: str
    kind: Literal[
        'before', 'operation', 'program', 'path', 'compiled', 'later', 'unknown'
    ]
    inputs: NotRequired[str]
    first_input: NotRequired[str]
    index: NotRequired[int]
    primitive: NotRequired[str]
    at: NotRequired[str]
    team: NotRequired[str]
    by: NotRequired[str]
    error_ulps: NotRequired[float | None]
    change: NotRequired[str]
    also: NotRequired[bool]
    call: NotRequired[int]
    why: NotRequired[str]


class ComparedBy(TypedDict):
    """
    how each matched call was compared (optax_gate.gate.team_run.divergence.compared_by): by value (array values on both sides), by structure only (traced, or no array in or out), not at all (on one side only, the recorder failed); why: reason key -> count; value_sites: the lines with a call compared by value (absent in reports written before 2026-12-03)
    """

    value: int
    structure: int
    none: int
    why: dict[str, int]
    value_sites: list[str]


class FirstWithinBudget(TypedDict):
    """
    the first of these calls in execution order; inputs_differ: its inputs already differed, so the difference was born in code that is not an Optax call (absent in reports written before 2026-12-02)
    """

    site: str
    call: str
    inputs_differ: bool


class WithinBudget(TypedDict):
    """
    the compared calls that no rule counts as differing but whose results are not bit-identical (optax_gate.gate.team_run.divergence.bit_error): how many, the largest error in ULPs, their sites in order, each once
    """

    calls: int
    max_ulps: float
    sites: list[str]
    inputs_differ_sites: NotRequired[list[str]]
    first: NotRequired[FirstWithinBudget | None]
    sampled: NotRequired[int]
    shadow_only: NotRequired[bool]
    kept_max_ulps: NotRequired[float | None]
    noise_ratio: NotRequired[float | None]


class WarnedItem(TypedDict):
    site: str
    call: str
    texts: list[str]


class Ensemble(TypedDict):
    """
    the run's own rounding noise (optax_gate.gate.team_run.ensemble, docs/team-run.md): the perturbed baseline runs the candidate was judged against; absent when the candidate was bit for bit the baseline
    """

    members: int
    used: bool
    why: NotRequired[str]
    cached: NotRequired[bool]
    seconds: NotRequired[float]
    factor: NotRequired[float]
    calls: NotRequired[int]
    reached: NotRequired[int]


class DifferItem(TypedDict):
    site: str
    api: str
    call: str
    kinds: list[str]
    texts: list[str]
    max_ulps: NotRequired[float | None]


class Isolated(TypedDict):
    """
    the Optax calls of each step's first call, and the first eager call of each Optax API at each line, run alone on both sides on the baseline's own inputs (optax_gate.recorder.isolate, docs/team-run.md): their inputs identical by construction, a call that computes otherwise there is a cause of the run
    """

    calls: int
    same: int
    differ: list[DifferItem]
    skipped: dict[str, int]


class GrewItem(TypedDict):
    site: str
    step: str
    figure: Literal['argument_bytes', 'output_bytes', 'temp_bytes']
    baseline: int
    candidate: int
    ratio: float | None


class ShrankItem(GrewItem):
    pass


class MeasuredItem(TypedDict):
    site: str
    step: str
    backend: str
    baseline: dict[str, int]
    candidate: dict[str, int]


class Memory(TypedDict):
    """
    the compiled memory of each whole step the team transformed, at its first call, baseline against candidate (optax_gate.recorder.memory, gate/team_run/memory.py): a figure beyond MEMORY_RTOL and MEMORY_ATOL (kit/tolerances.py) that grew fails the gate
    """

    steps: int
    same: int
    grew: list[GrewItem]
    shrank: list[ShrankItem]
    not_measured: dict[str, str]
    measured: NotRequired[list[MeasuredItem]]


class Divergence(TypedDict):
    site: str
    api: str
    call: str
    phase: Literal['call', 'trace', 'run', 'isolated']
    occurrence: int
    kinds: list[
        Literal[
            'exception',
            'warning',
            'arguments',
            'structure',
            'dtype',
            'shape',
            'values',
            'one side only',
        ]
    ]
    texts: list[str]
    max_ulps: NotRequired[float | None]
    budget_ulps: NotRequired[int]
    role: Literal['cause', 'consequence']
    side: NotRequired[Literal['both', 'baseline', 'candidate']]
    via: NotRequired[str]


class AffectedSite(TypedDict):
    site: NotRequired[str]
    apis: NotRequired[list[str]]
    calls: NotRequired[list[str]]
    changes: NotRequired[list[str]]
    max_ulps: NotRequired[float | None]
    findings: NotRequired[list[int]]


class TeamRun(TypedDict):
    """
    gate --run (optax_gate.gate.team_run.recording, docs/team-run.md): the team's command traced in the baseline (twice) and the candidate; absent without --run
    """

    command: str
    run_dir: str
    wrote: NotRequired[Wrote]
    not_in_candidate: NotRequired[list[str]]
    called: NotRequired[list[str]]
    named_from: NotRequired[str]
    outcome: Literal['same', 'diverged', 'broke', 'not-verified']
    reason: str
    runs: list[CommandRun]
    compared: int
    differing: int
    witness: NotRequired[Witness]
    replay_runs: NotRequired[list[ReplayRun]]
    born: NotRequired[list[Birth]]
    witnessed: NotRequired[str]
    budget_ulps: NotRequired[int]
    compared_by: NotRequired[ComparedBy]
    within_budget: NotRequired[WithinBudget]
    warned: NotRequired[list[WarnedItem]]
    ensemble: NotRequired[Ensemble]
    isolated: NotRequired[Isolated]
    memory: NotRequired[Memory]
    first: Divergence | None
    causes: list[Divergence]
    divergences: NotRequired[list[Divergence]]
    sites: list[str]
    raised_at: NotRequired[str]
    failure: NotRequired[str]
    affected: NotRequired[list[AffectedSite]]


class SpeedFromCache(TypedDict):
    """
    taken from the results cache (optax_gate.gate.reuse.results_cache.fetch_speed): measured by an earlier gate of the same two environments
    """

    key: str
    recorded: str


class Timing(TypedDict):
    median: float
    low: float
    high: float
    n: int


class SpeedReading(TypedDict):
    setup: str
    metric: Literal['step_s', 'compile_s']
    change: Literal['broken', 'changed', 'unchanged', 'not-measured']
    direction: NotRequired[Literal['', 'slower', 'faster']]
    ratio: NotRequired[float]
    interval: NotRequired[list[float]]
    coverage: NotRequired[float]
    noise: NotRequired[list[float]]
    slots: NotRequired[int]
    baseline: NotRequired[Timing]
    candidate: NotRequired[Timing]
    detail: str


class Speed(TypedDict):
    """
    Speed drift (optax_gate.gate.speed.readings): three training steps timed in both environments, interleaved; absent under --no-speed.
    """

    status: Literal['measured', 'not-measured']
    reason: str
    budget: NotRequired[float | None]
    rounds: NotRequired[int]
    step_slots: NotRequired[int]
    duration_s: NotRequired[float]
    plot: NotRequired[str]
    plot_missing: NotRequired[str]
    from_cache: NotRequired[SpeedFromCache]
    baseline: NotRequired[dict[str, Any]]
    candidate: NotRequired[dict[str, Any]]
    raw: NotRequired[dict[str, Any]]
    summary: dict[str, int]
    readings: list[SpeedReading]


class BisectCommit(TypedDict):
    sha: str
    short: str
    date: str
    subject: str
    pr: NotRequired[int | None]
    url: str
    pr_url: NotRequired[str]


FindingBisect = TypedDict(
    'FindingBisect',
    {
        'package': str,
        'status': Literal['found', 'range', 'not-bisected'],
        'reason': str,
        'commits': list[BisectCommit],
        'skipped': NotRequired[dict[str, str]],
        'source_files': NotRequired[list[str]],
        'suspects': NotRequired[list[BisectCommit]],
        'from': NotRequired[str],
        'to': NotRequired[str],
        'tested': NotRequired[int],
        'duration_s': NotRequired[float],
    },
)


class Finding(TypedDict):
    number: int
    section: NotRequired[
        Literal['contracts', 'surface', 'dependencies', 'warnings', 'upstream-tests']
    ]
    change: Literal['broken', 'changed', 'fixed', 'new', 'gone']
    api: str
    apis: NotRequired[list[str]]
    cause: str
    key: NotRequired[str]
    contracts: list[str]
    tests: NotRequired[list[list[Any]]]
    text: str
    your_code: NotRequired[list[str]]
    your_code_not_scanned: NotRequired[list[str]]
    your_code_recipe: NotRequired[str]
    parts: NotRequired[list[FindingPart]]
    changes: NotRequired[dict[str, int]]
    causes: NotRequired[list[str]]
    scope: NotRequired[Literal['yours', 'elsewhere']]
    scope_why: NotRequired[str]
    configuration: NotRequired[dict[str, Any]]
    your_code_attribution: NotRequired[dict[str, LineAttribution]]
    your_code_notes: NotRequired[dict[str, str]]
    breaks_unreached: NotRequired[list[str]]
    run_sites: NotRequired[list[str]]
    your_code_run: NotRequired[dict[str, LineRun]]
    bisect: NotRequired[list[FindingBisect]]


class Report(TypedDict):
    """
    optax-gate report.json (schema 3). The gate's machine-readable report: the verdict, the contracts compared between the baseline and the candidate, and (schema 2) what the contracts cannot see: the API surface, warnings and dependency diffs; schema 3 adds the bisection (--bisect): each finding's 'bisect' entries and the top-level 'bisect' summary. Written by optax_gate.gate.report.json_file; reports of each kind are validated against it under tests/meta (jsonschema); optax_gate.gate.base.model is generated from it.
    """

    schema: Literal[3]
    bisect: NotRequired[BisectSummary]
    verdict: Literal['pass', 'fail', 'not-verified']
    reasons: list[str]
    notes: NotRequired[list[str]]
    gate_errors: NotRequired[list[GateError]]
    scope: NotRequired[Scope]
    attribution: NotRequired[Attribution]
    upstream_tests: NotRequired[UpstreamTests]
    findings: NotRequired[list[Finding]]
    summary: dict[str, int]
    baseline: BaselineRecord
    candidate: CandidateRecord
    contracts: list[ContractRow]
    beyond_contracts_s: NotRequired[float]
    run: NotRequired[str]
    candidate_lock: NotRequired[CandidateLock]
    usage: NotRequired[Usage | None]
    surface: NotRequired[Surface]
    warnings: NotRequired[Warnings]
    dependencies: NotRequired[Dependencies]
    team_run: NotRequired[TeamRun]
    speed: NotRequired[Speed]
