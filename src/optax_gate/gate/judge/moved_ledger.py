"""Entries of the ledger of moved behaviour written from a contract run at a new baseline (``rebaseline``).

A contract that fails at a baseline of optax ``V`` pins what an earlier
baseline did; :func:`accept` turns each such failure into an entry
(``optax_gate.kit.moved_behaviour``): ``optax = ">=V"``, ``fails`` a regular
expression of the failure's first line (:func:`pattern`: a decimal
fraction's digits and an address matched loosely, they vary with the
machine; words, integers and dtype names literal), ``why`` saying where
it came from. An entry of the same contract whose range holds ``V`` and whose
expression the new failure does not match is narrowed to ``<V``; one it
matches is kept as it is. An error outside the contract's call (a fixture, a
collection error) is not behaviour: it is listed, not accepted.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from optax_gate.gate.base import atomic
from optax_gate.gate.base.run_record import RunRecord
from optax_gate.kit import moved_behaviour

HEADER = """\
# Ledger of behaviour that moved after the pinned baseline (optax 0.2.6): at a baseline whose optax
# version is in an entry's `optax` range, the contract passes only when it fails with text matching
# `fails` (that baseline's behaviour), and fails otherwise. See src/optax_gate/kit/moved_behaviour.py.
# Written by `./noxw -s rebaseline -- LOCK`; an entry's `why` is then worth rewriting in words.
"""
#: A decimal fraction or a number with an exponent, standing alone (not part of a word: ``float32`` stays).
_FLOAT = r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+(?=[eE]))(?:[eE][-+]?\d+)?(?![\w.])"
_LOOSE_FLOAT = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"


def pattern(detail: str) -> str:
    """A regular expression for the first non-empty line of a failure's
    ``detail``, at most 240 characters of it: its words, integers and dtype
    names literal; a decimal fraction's digits and a hex address loose (they
    vary with the machine and the run; a changed count or dtype does not match)."""
    line = next((ln.strip() for ln in detail.splitlines() if ln.strip()), "")[:240]
    out, last = [], 0
    for m in re.finditer(r"0x[0-9a-fA-F]+|" + _FLOAT, line):
        out.append(re.escape(line[last : m.start()]))
        out.append(r"0x[0-9a-fA-F]+" if m.group().startswith("0x") else _LOOSE_FLOAT)
        last = m.end()
    out.append(re.escape(line[last:]))
    return "".join(out)


@dataclasses.dataclass
class Accepted:
    """What :func:`accept` did: the new ``entries`` (contract ids), the
    ``narrowed`` older ones, those ``kept`` (the old expression still matches)
    and the ``refused`` (contract id: why) it could not accept."""

    entries: list[str] = dataclasses.field(default_factory=list)
    narrowed: list[str] = dataclasses.field(default_factory=list)
    kept: list[str] = dataclasses.field(default_factory=list)
    refused: dict[str, str] = dataclasses.field(default_factory=dict)


def crash_lines(reportlogs: list[Path]) -> dict[str, str]:
    """``{node id: first line of its crash message}`` of every failed call in
    pytest's report logs (``--report-log``): the text the plugin matches an
    entry's ``fails`` against, as pytest wrote it (the run record's ``detail``
    is shortened for people)."""
    out = {}
    for log in reportlogs:
        if not log.is_file():
            continue
        for line in log.read_text(encoding="utf-8").splitlines():
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if r.get("$report_type") == "TestReport" and r.get("when") == "call" and r.get("outcome") == "failed":
                crash = (r.get("longrepr") or {}).get("reprcrash") or {} if isinstance(r.get("longrepr"), dict) else {}
                message = crash.get("message") or str(r.get("longrepr") or "")
                out[r["nodeid"]] = next((ln.strip() for ln in message.splitlines() if ln.strip()), "")
    return out


def accept(
    ledger: list[moved_behaviour.Entry],
    record: RunRecord,
    crashes: dict[str, str],
    version: str,
    jax_version: str = "",
) -> tuple[list[moved_behaviour.Entry], Accepted]:
    """The ledger with the failures of ``record`` (a run record at baseline
    optax ``version``; ``crashes`` its :func:`crash_lines`) accepted (module
    docstring), and what was done."""
    done = Accepted()
    out = list(ledger)
    where = f"optax {version}" + (f", jax {jax_version}" if jax_version else "")
    for cid, result in sorted(record.contracts.items()):
        if result.get("outcome") not in ("failed", "error"):
            continue
        first = crashes.get(cid, "")
        if result.get("outcome") == "error" or not first:
            done.refused[cid] = "an error outside the contract's call (a fixture or the module): fix the contract; " + (
                result.get("detail") or "no detail recorded"
            )
            continue
        holding = [e for e in out if e.contract == cid and e.applies(version)]
        if any(re.search(e.fails, first) for e in holding):
            done.kept.append(cid)
            continue
        for old in holding:
            out[out.index(old)] = dataclasses.replace(old, optax=f"{old.optax},<{version}")
            done.narrowed.append(cid)
        out.append(moved_behaviour.Entry(cid, f">={version}", pattern(first), f"rebaselined at {where}: {first[:200]}"))
        done.entries.append(cid)
    return sorted(out, key=lambda e: (e.contract, e.optax)), done


def render(entries: list[moved_behaviour.Entry]) -> str:
    """The ledger's TOML text: :data:`HEADER`, then one ``[[moved]]`` table per entry (strings JSON-escaped, valid
    TOML)."""
    parts = [HEADER]
    for e in entries:
        parts.append(
            "\n[[moved]]\n"
            + "".join(f"{f} = {json.dumps(getattr(e, f))}\n" for f in ("contract", "optax", "fails", "why"))
        )
    return "".join(parts)


def write(path: Path, entries: list[moved_behaviour.Entry]) -> Path:
    """Write the ledger atomically; read back, it must give ``entries`` (else ValueError, the file unchanged)."""
    text = render(entries)
    probe = path.with_name(f".{path.name}.check")
    try:
        probe.write_text(text, encoding="utf-8")
        if moved_behaviour.load(probe) != list(entries):
            raise ValueError(f"{path}: the rendered ledger does not read back as written")
    finally:
        probe.unlink(missing_ok=True)
    return atomic.write_text(path, text)
