"""The search of a bisection: which first-parent commit of a package's history first gives a finding's candidate
outcomes (``git bisect``'s "first bad commit"), for several findings at once over one list of commits.

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from optax_gate.gate.inputs.options import BisectOptions


class Unusable(Exception):
    """A commit cannot be tested: its package does not build, install or import."""


@dataclasses.dataclass(frozen=True)
class Target:
    """One search: contract id -> outcome in the baseline (``old``) and in
    the candidate (``new``); findings with equal targets share one search."""

    old: tuple[tuple[str, str], ...]
    new: tuple[tuple[str, str], ...]

    @classmethod
    def of(cls, rows: Sequence[Mapping[str, Any]]) -> Target:
        """From report contract rows (``{"id", "baseline", "candidate"}``)."""
        return cls(
            tuple(sorted((r["id"], str(r.get("baseline"))) for r in rows)),
            tuple(sorted((r["id"], str(r.get("candidate"))) for r in rows)),
        )

    @property
    def contracts(self) -> list[str]:
        """The contracts the search runs at each commit: those of its findings."""
        return [cid for cid, _ in self.old]

    def side(self, outcomes: dict[str, str]) -> str:
        """``old``, ``new`` or ``other`` (neither) for the outcomes at a commit."""
        got = tuple((cid, str(outcomes.get(cid))) for cid, _ in self.old)
        return "old" if got == self.old else "new" if got == self.new else "other"


@dataclasses.dataclass
class Answer:
    """The result of one search.

    ``status``: ``found`` (``commits`` is the one first new commit), ``range``
    (``commits``: every commit that may be the first new one, oldest first;
    ``skipped`` says why the others were not tested) or ``not-bisected``
    (``reason``). ``tested``: commits this search ran its contracts at;
    ``duration_s``: the seconds of those runs (shared runs counted in full)."""

    status: Literal["found", "range", "not-bisected"]
    commits: list[str] = dataclasses.field(default_factory=list)
    reason: str = ""
    skipped: dict[str, str] = dataclasses.field(default_factory=dict)
    tested: int = 0
    duration_s: float = 0.0


@dataclasses.dataclass
class _State:
    target: Target
    lo: int
    hi: int
    skip: dict[int, str] = dataclasses.field(default_factory=dict)
    answer: Answer | None = None
    tested: int = 0
    seconds: float = 0.0

    def untested(self, unusable: dict[int, str]) -> list[int]:
        return [i for i in range(self.lo + 1, self.hi) if i not in self.skip and i not in unusable]


Probe = Callable[[str, list[str]], dict[str, str]]


def search(
    commits: Sequence[str],
    targets: Sequence[Target],
    probe: Probe,
    ends: tuple[str, str] = ("baseline end", "candidate end"),
    say: Callable[[str], None] = lambda message: None,
    options: BisectOptions | None = None,
) -> dict[Target, Answer]:
    """Search every target over ``commits`` (oldest first, at least two).

    Args:
      commits: SHAs; ``commits[0]`` the baseline's end, ``commits[-1]`` the candidate's.
      targets: the searches (equal targets are one search).
      probe: ``probe(sha, contract_ids) -> {contract id: outcome}``; raises
        :class:`Unusable` for a commit that cannot be built, installed or
        imported. Called at most once per commit and contract.
      ends: how the answers name the two ends (e.g. ``("v0.2.6", "v0.2.8")``).
      options: ``env``, which side's environment ``probe`` runs in (for the answers' words).
      say: progress lines.

    Returns:
      an :class:`Answer` per distinct target.
    """
    options = options or BisectOptions()
    n, environment = len(commits), options.env
    states = {t: _State(t, 0, n - 1) for t in dict.fromkeys(targets)}
    seen: dict[int, dict[str, str]] = {}
    unusable: dict[int, str] = {}

    def run(i: int, wanting: list[_State]) -> None:
        need = sorted({c for s in wanting for c in s.target.contracts} - set(seen.get(i, {})))
        start = time.monotonic()
        if need and i not in unusable:
            say(f"commit {commits[i][:12]} ({i} of {n - 1}): {len(need)} contract(s) for {len(wanting)} search(es)")
            try:
                seen.setdefault(i, {}).update(probe(commits[i], need))
            except Unusable as exc:
                unusable[i] = str(exc)
                say(f"commit {commits[i][:12]} skipped: {exc}")
        spent = time.monotonic() - start
        for s in wanting:
            s.tested += 1
            s.seconds += spent

    # the ends first: the baseline's end must give the old outcomes, the candidate's the new ones
    for i, want, name in ((0, "old", ends[0]), (n - 1, "new", ends[1])):
        live = [s for s in states.values() if s.answer is None]
        run(i, live)
        for s in live:
            if i in unusable:
                s.answer = Answer(
                    "not-bisected", reason=f"the {name} ({commits[i][:12]}) cannot be tested: {unusable[i]}"
                )
                continue
            got = s.target.side(seen[i])
            if got != want:
                s.answer = Answer("not-bisected", reason=_end_reason(name, (want, got), s.target, seen[i], environment))
    while True:
        live = [s for s in states.values() if s.answer is None]
        for s in live:
            left = s.untested(unusable)
            if not left:
                s.answer = _settle(s, commits, unusable)
        live = [s for s in live if s.answer is None]
        if not live:
            break
        wants = [_next(s, unusable) for s in live]
        i = max(wants, key=wants.count)  # the commit most searches want next (the first such on a tie)
        wanting = [s for s in live if s.lo < i < s.hi and i not in s.skip]
        run(i, wanting)
        for s in wanting:
            if i in unusable:
                continue
            got = s.target.side(seen[i])
            if got == "old":
                s.lo = i
            elif got == "new":
                s.hi = i
            else:
                s.skip[i] = "outcomes neither the baseline's nor the candidate's: " + _outcomes(s.target, seen[i])
    answers: dict[Target, Answer] = {}
    for t, s in states.items():
        if s.answer is None:
            raise AssertionError("the search ends only once every target has its answer")
        answers[t] = dataclasses.replace(s.answer, tested=s.tested, duration_s=round(s.seconds, 1))
    return answers


def _next(s: _State, unusable: dict[int, str]) -> int:
    """The commit a search tests next: the middle of the longest run of
    untested commits between its ends. Without skipped commits that is the
    middle of the range (a plain bisection); with some, the search does not
    walk along a block of them commit by commit while the rest of the range
    is still open (optax's commits that set a jax option a newer jax lacks
    are dozens in a row)."""
    runs: list[list[int]] = [[]]
    for i in range(s.lo + 1, s.hi):
        if i in s.skip or i in unusable:
            runs.append([])
        else:
            runs[-1].append(i)
    longest = max(runs, key=len)  # the first of equal length: the older commits first
    return longest[(len(longest) - 1) // 2]


def _settle(s: _State, commits: Sequence[str], unusable: dict[int, str]) -> Answer:
    if s.hi - s.lo == 1:
        return Answer("found", [commits[s.hi]])
    between = range(s.lo + 1, s.hi)
    why = {commits[i]: unusable.get(i) or s.skip[i] for i in between}
    return Answer(
        "range",
        [commits[i] for i in range(s.lo + 1, s.hi + 1)],
        skipped=why,
        reason=f"{len(why)} commit(s) before {commits[s.hi][:12]} could not be tested",
    )


def _outcomes(target: Target, outcomes: dict[str, str]) -> str:
    got = [f"{cid.rsplit('::', 1)[-1]} {outcomes.get(cid)}" for cid in target.contracts]
    return ", ".join(got[:3]) + (f" and {len(got) - 3} more" if len(got) > 3 else "")


def _end_reason(
    name: str, wanted_got: tuple[str, str], target: Target, outcomes: dict[str, str], environment: str
) -> str:
    want, got = wanted_got
    if want == "old" and got == "new":
        return (
            f"the {name} already gives the candidate's outcomes in the {environment} environment: the change is not in "
            f"this package's history between the two ends (another package moved it)"
        )
    if want == "new" and got == "old":
        return (
            f"the {name} still gives the baseline's outcomes in the {environment} environment: the change needs "
            "another package too"
        )
    wanted = "baseline's" if want == "old" else "candidate's"
    return f"the {name} does not reproduce the {wanted} outcomes ({_outcomes(target, outcomes)})"
