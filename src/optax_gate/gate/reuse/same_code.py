"""Whether a candidate environment runs the baseline's code, so its contract outcomes are the baseline's.

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import ast
import dataclasses
import re
from importlib import metadata
from pathlib import Path
from typing import Any, Unpack, cast

from packaging.utils import canonicalize_name

from optax_gate.gate.base import model
from optax_gate.gate.base.run_record import RecordFields, RunRecord

#: dist-info files the installer writes (they differ between two installs of one wheel).
INSTALLER_FILES = frozenset({"RECORD", "INSTALLER", "REQUESTED", "direct_url.json", "uv_cache.json", "uv_build.json"})
_NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)")


@dataclasses.dataclass(frozen=True)
class SameCode:
    """The outcome of :func:`compare`: ``same`` when the candidate runs the
    baseline's code; ``why`` says what decided it (in words for the report);
    ``packages`` the distributions compared file by file (name -> files);
    ``text_only`` the files whose text differs and code does not."""

    same: bool
    why: str
    packages: dict[str, int] = dataclasses.field(default_factory=dict)
    text_only: tuple[str, ...] = ()

    def record(self) -> model.SameCode:
        """The ``same_code`` field of a candidate's run record."""
        return {"as": "baseline", "why": self.why, "packages": dict(self.packages), "text_only": list(self.text_only)}


def lock_entries(text: str) -> dict[str, str]:
    """``{canonical name: entry}`` of a hashed lock: each requirement with its
    ``--hash`` pins sorted, comments and continuation backslashes left out; an
    option line (``--index-url ...``) is kept under its own text."""
    joined = re.sub(r"\\\s*\n", " ", text)  # continuation lines, as validate.lock_packages reads them
    logical = [line.split(" #", 1)[0].strip() for line in joined.splitlines()]
    logical = [line for line in logical if line and not line.startswith("#")]
    out: dict[str, str] = {}
    for entry in logical:
        parts = entry.split()
        hashes = sorted(p for p in parts if p.startswith("--hash="))
        rest = " ".join(p for p in parts if not p.startswith("--hash="))
        m = _NAME.match(rest)
        key = canonicalize_name(m.group(1)) if m and not rest.startswith("-") else rest
        out[key] = " ".join([rest, *hashes])
    return out


def distribution(site: Path, name: str) -> metadata.Distribution | None:
    """The distribution ``name`` (canonical) installed in ``site``; None when it is not there."""
    return next(
        (d for d in metadata.distributions(path=[str(site)]) if canonicalize_name(d.metadata["Name"] or "") == name),
        None,
    )


def installed_files(dist: metadata.Distribution) -> list[str]:
    """The distribution's files under its ``site-packages`` (relative, POSIX) from its RECORD,
    without bytecode, scripts outside it and the installer's records."""
    out = []
    for path in dist.files or []:
        parts = path.parts
        if not parts or parts[0] == ".." or "__pycache__" in parts or path.suffix == ".pyc":
            continue
        if parts[0].endswith(".dist-info") and parts[-1] in INSTALLER_FILES | {"METADATA"}:
            continue  # the version is compared on its own; the rest the installer writes
        out.append(path.as_posix())
    return sorted(set(out))


def _tree(source: bytes) -> str | None:
    try:
        return ast.dump(ast.parse(source))
    except (SyntaxError, ValueError):
        return None


def _compare_package(name: str, base_site: Path, cand_site: Path) -> tuple[str, int, list[str]]:
    """``(why it differs or "", files compared, files differing in text only)``."""
    dists = [distribution(site, name) for site in (base_site, cand_site)]
    base_dist, cand_dist = dists
    if base_dist is None or cand_dist is None:
        return (
            f"{name} is not installed in {'the baseline' if base_dist is None else 'the candidate'}'s environment",
            0,
            [],
        )
    if base_dist.version != cand_dist.version:
        return f"{name} {cand_dist.version} is another version than the baseline's {base_dist.version}", 0, []
    files, cand_files = installed_files(base_dist), installed_files(cand_dist)
    if files != cand_files:
        only = sorted(set(files) ^ set(cand_files))
        return f"{name}'s files differ ({len(only)} in one environment only, first {only[0]})", 0, []
    text_only = []
    for rel in files:
        a, b = (base_site / rel).read_bytes(), (cand_site / rel).read_bytes()
        if a == b:
            continue
        if rel.endswith(".py") and (tree := _tree(a)) is not None and tree == _tree(b):
            text_only.append(f"{name}: {rel}")
            continue
        return f"{name}'s code differs, first in {rel}", 0, []
    return "", len(cand_files), text_only


@dataclasses.dataclass(frozen=True)
class Installed:
    """One side as installed: the hashed ``lock`` its environment was built
    from, the environment's ``site`` (its ``site-packages``; None: unknown) and
    the side's results-cache ``inputs`` (``results_cache.side_inputs``; None: not computed)."""

    lock: Path
    site: Path | None
    inputs: dict[str, Any] | None


def compare(baseline: Installed, candidate: Installed) -> SameCode:
    """Whether the candidate's environment runs the baseline's code (module docstring).

    Returns:
      a :class:`SameCode`; ``same`` False with the first difference found in ``why``.
    """
    baseline_inputs, candidate_inputs = baseline.inputs, candidate.inputs
    baseline_site, candidate_site = baseline.site, candidate.site
    if baseline_inputs is None or candidate_inputs is None:
        return SameCode(False, "the sides' inputs are not known")
    ignore = {"lock_sha256": ""}
    if {**baseline_inputs, **ignore} != {**candidate_inputs, **ignore}:
        differ = sorted(
            k
            for k in set(baseline_inputs) | set(candidate_inputs)
            if k not in ignore and baseline_inputs.get(k) != candidate_inputs.get(k)
        )
        return SameCode(False, f"the sides' inputs differ beyond the lock ({', '.join(differ)})")
    if baseline_site is None or candidate_site is None or not baseline_site.is_dir() or not candidate_site.is_dir():
        return SameCode(False, "an environment's site-packages is not known")
    base, cand = (lock_entries(side.lock.read_text(encoding="utf-8")) for side in (baseline, candidate))
    if set(base) != set(cand):
        only = sorted(set(base) ^ set(cand))
        return SameCode(
            False, f"the locks pin other packages ({', '.join(only[:3])}{', ...' if len(only) > 3 else ''})"
        )
    moved = sorted(name for name in base if base[name] != cand[name])
    if not moved:  # one lock, one environment (named by its pins); two folders of one lock are not compared here
        if baseline_site.resolve() != candidate_site.resolve():
            return SameCode(False, "the two sides' environments are two folders of one lock")
        return SameCode(True, "the candidate's lock pins what the baseline's does")
    packages: dict[str, int] = {}
    text_only: list[str] = []
    for name in moved:
        if name.startswith("-"):
            return SameCode(False, f"the locks' options differ ({name})")
        try:
            why, count, loose = _compare_package(name, baseline_site, candidate_site)
        except OSError as exc:  # a RECORD naming a file that is gone: not known to be the same
            why, count, loose = f"{name}'s installed files could not be read ({exc.strerror or exc})", 0, []
        if why:
            return SameCode(False, why)
        packages[name] = count
        text_only += loose
    shown = ", ".join(f"{name} ({n} files)" for name, n in packages.items())
    return SameCode(
        True,
        f"{shown}: the same code as the baseline's"
        + (
            f", {len(text_only)} file(s) differing in comments or layout only ("
            + ", ".join(f.partition(": ")[2] for f in text_only[:3])
            + (", ..." if len(text_only) > 3 else "")
            + ")"
            if text_only
            else ", byte for byte"
        )
        + "; every other package pinned alike",
        packages,
        tuple(text_only),
    )


def record(
    baseline: RunRecord, label: str, same: SameCode, versions: dict[str, str] | None, **extra: Unpack[RecordFields]
) -> RunRecord:
    """The run record of a side whose code is the baseline's: the baseline's
    contracts, warnings and exit status under ``label``, with its own
    ``versions`` (from its import check) and ``extra`` fields, and
    ``same_code`` saying why; when the baseline's run is not verified,
    neither is this one (with the baseline's reason)."""
    if not baseline.ran:
        return RunRecord(
            label,
            "not-verified",
            "not run: its code is the baseline's, whose contracts did not run "
            f"({baseline.reason or 'no reason recorded'})",
            fields={"warnings": [], **extra},
        )
    kept = cast(
        RecordFields,
        {
            k: v
            for k, v in baseline.fields.items()
            if k in ("exitstatus", "hypothesis_profile", "pytest_plugins", "warnings")
        },
    )
    return RunRecord(
        label,
        baseline.status,
        baseline.reason,
        baseline.contracts,
        dict(versions or baseline.versions or {}),
        {**kept, "duration_s": None, **extra, "same_code": same.record()},
    )
