"""The ledger of behaviour that moved after the pinned baseline: at another baseline, a contract pins that
baseline's behaviour.

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

LEDGER = "tests/contracts/moved_behaviour.toml"
#: The baseline's optax version, set by the gate for both sides.
BASELINE_ENV = "OPTAX_GATE_BASELINE_OPTAX"
#: How a contract's report says it followed the ledger.
TAG = "[moved behaviour]"


@dataclasses.dataclass(frozen=True)
class Entry:
    """One ledger entry (module docstring): ``contract`` a pytest node id,
    ``optax`` a specifier set of baseline versions, ``fails`` a regular
    expression its failure text matches there, ``why`` what moved."""

    contract: str
    optax: str
    fails: str
    why: str

    def applies(self, version: str) -> bool:
        """Whether the entry holds for a baseline of optax ``version`` (its specifier; never for a version not PEP
        440)."""
        try:
            return Version(version) in SpecifierSet(self.optax)
        except InvalidVersion:
            return False


def load(path: Path) -> list[Entry]:
    """The entries of the ledger at ``path`` (none when it does not exist).

    Raises:
      ValueError: not TOML, an entry without the four non-empty strings, an
        invalid specifier set or regular expression, or two entries of one
        contract whose ranges meet.
    """
    if not path.exists():
        return []
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path}: {exc}") from None
    unknown = set(data) - {"moved"}
    if unknown:
        raise ValueError(f"{path}: unknown tables {sorted(unknown)} (entries are [[moved]])")
    entries = []
    for i, raw in enumerate(data.get("moved", []), 1):
        fields = {f.name for f in dataclasses.fields(Entry)}
        if set(raw) != fields or not all(isinstance(raw[f], str) and raw[f].strip() for f in fields):
            raise ValueError(
                f"{path}: entry {i} needs exactly {sorted(fields)} as non-empty strings, got {sorted(raw)}"
            )
        try:
            SpecifierSet(raw["optax"])
            re.compile(raw["fails"])
        except (InvalidSpecifier, re.error) as exc:
            raise ValueError(f"{path}: entry {i} ({raw['contract']}): {exc}") from None
        entries.append(Entry(**raw))
    by_contract: dict[str, list[Entry]] = {}
    for entry in entries:
        by_contract.setdefault(entry.contract, []).append(entry)
    for contract, mine in by_contract.items():
        if len(mine) > 1 and _overlap(mine):
            raise ValueError(
                f"{path}: {contract} has entries whose optax ranges meet ({', '.join(e.optax for e in mine)})"
            )
    return entries


def _overlap(entries: list[Entry]) -> bool:
    """Whether two ranges share a version among the releases they name (a check, not a proof)."""
    named = {Version(m) for e in entries for m in re.findall(r"\d+(?:\.\d+)+", e.optax)}
    probes = named | {Version(f"{v.base_version}.post1") for v in named}
    return any(sum(e.applies(str(v)) for e in entries) > 1 for v in probes)


def baseline_version() -> str:
    """The baseline's optax version: ``$OPTAX_GATE_BASELINE_OPTAX``, else the installed one ("" when none)."""
    given = os.environ.get(BASELINE_ENV, "").strip()
    if given:
        return given
    try:
        return metadata.version("optax")
    except metadata.PackageNotFoundError:
        return ""


def applicable(entries: list[Entry], version: str) -> dict[str, Entry]:
    """``{contract id: entry}`` of the entries whose range holds ``version``."""
    return {e.contract: e for e in entries if version and e.applies(version)}


def judged(entry: Entry, version: str, failed: bool, text: str) -> tuple[bool, str]:
    """``(passes, message)`` of a contract that ``failed`` (or passed) with
    ``text`` under ``entry`` at baseline ``version``: it passes only when it
    failed with text matching ``entry.fails``; the message says why it fails otherwise."""
    expected = (
        f"{TAG} at the baseline optax {version} this contract fails with text matching {entry.fails!r} ({entry.why})"
    )
    if failed and re.search(entry.fails, text):
        return True, ""
    if not failed:
        return False, f"{expected}; here it passed: the behaviour is no longer the baseline's"
    return False, f"{text}\n{expected}; here it failed otherwise: the behaviour moved again"
