"""Which functions of Optax and Flax a candidate changed, read from the two environments as installed, or why
that cannot be told.

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import ast
import copy
import dataclasses
import hashlib
from pathlib import Path

from optax_gate.gate.reuse import same_code
from optax_gate.kit.environment import reach_names as reach

FunctionName = str  # "<file relative to site-packages>::<unit>"


@dataclasses.dataclass(frozen=True)
class FunctionDiff:
    """``changed``: the functions whose bodies differ (``"optax/_src/alias.py::lion"``);
    ``everything``: why every module must run instead ("" when the change maps to ``changed``)."""

    changed: frozenset[FunctionName] = frozenset()
    everything: str = ""


@dataclasses.dataclass(frozen=True)
class Cut:
    """A source file cut into its ``top`` level's digest and each unit's body digest."""

    top: str
    bodies: dict[str, str]


def _digest(node: ast.AST | list[ast.stmt]) -> str:
    dumped = ast.dump(ast.Module(body=node, type_ignores=[]) if isinstance(node, list) else node)
    return hashlib.sha256(dumped.encode()).hexdigest()


def _docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return [first]
    return []


def _units(body: list[ast.stmt], prefix: str, out: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]]) -> None:
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.setdefault(prefix + node.name, []).append(node)
        elif isinstance(node, ast.ClassDef):
            _units(node.body, f"{prefix}{node.name}.", out)


def cut(source: bytes) -> Cut | None:
    """``source`` cut into units (module docstring); None when it does not parse or a unit's name is defined twice."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    found: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    _units(tree.body, "", found)
    if any(len(nodes) > 1 for nodes in found.values()):
        return None
    bodies = {}
    for name, (node,) in found.items():
        doc = _docstring(node.body)
        bodies[name] = _digest(node.body[len(doc) :])
    top = copy.deepcopy(tree)
    stripped: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    _units(top.body, "", stripped)
    for (node,) in stripped.values():
        node.body = [*_docstring(node.body), ast.Pass()]
    return Cut(_digest(top), bodies)


def changed_in_file(name: str, rel: str, old: bytes, new: bytes) -> tuple[set[FunctionName], str]:
    """The functions of package ``name``'s file ``rel`` whose code differs between ``old`` and ``new``, and why
    the file cannot be mapped function by function ("" when it can; a file that does not parse or whose top level
    changed cannot)."""
    before, after = cut(old), cut(new)
    if before is None or after is None:
        return set(), f"{name}'s {rel} does not parse or defines a function twice"
    if before.top != after.top:
        return (
            set(),
            f"the top level of {rel} changed (what runs at import, a signature, a default, a decorator or a docstring)",
        )
    return {f"{rel}::{unit}" for unit in before.bodies if before.bodies[unit] != after.bodies[unit]}, ""


def _changed_package(name: str, base_site: Path, cand_site: Path) -> tuple[set[FunctionName], str]:
    dists = [same_code.distribution(site, name) for site in (base_site, cand_site)]
    base_dist, cand_dist = dists
    if base_dist is None or cand_dist is None:
        return (
            set(),
            f"{name} is not installed in {'the baseline' if base_dist is None else 'the candidate'}'s environment",
        )
    if base_dist.version != cand_dist.version:
        return set(), f"{name} {cand_dist.version} is another version than the baseline's {base_dist.version}"
    files, cand_files = same_code.installed_files(base_dist), same_code.installed_files(cand_dist)
    if files != cand_files:
        only = sorted(set(files) ^ set(cand_files))
        return set(), f"{name}'s files differ ({len(only)} in one environment only, first {only[0]})"
    changed: set[FunctionName] = set()
    for rel in files:
        old, new = (base_site / rel).read_bytes(), (cand_site / rel).read_bytes()
        if old == new:
            continue
        if not rel.endswith(".py"):
            return set(), f"{name}'s {rel} differs and is not Python source"
        found, why = changed_in_file(name, rel, old, new)
        if why:
            return set(), why
        changed |= found
    return changed, ""


def compare(baseline: same_code.Installed, candidate: same_code.Installed) -> FunctionDiff:
    """The functions the candidate changed (module docstring), or why every module runs."""
    if baseline.inputs is None or candidate.inputs is None:
        return FunctionDiff(everything="the sides' inputs are not known")
    ignore = {"lock_sha256": ""}
    if {**baseline.inputs, **ignore} != {**candidate.inputs, **ignore}:
        return FunctionDiff(everything="the sides' inputs differ beyond the lock")
    sites = (baseline.site, candidate.site)
    if sites[0] is None or sites[1] is None or not sites[0].is_dir() or not sites[1].is_dir():
        return FunctionDiff(everything="an environment's site-packages is not known")
    base, cand = (same_code.lock_entries(side.lock.read_text(encoding="utf-8")) for side in (baseline, candidate))
    if set(base) != set(cand):
        return FunctionDiff(everything="the locks pin other packages")
    moved = sorted(name for name in base if base[name] != cand[name])
    beyond = [name for name in moved if name not in reach.PACKAGES]
    if beyond:
        return FunctionDiff(
            everything=f"{', '.join(beyond)} {'is' if len(beyond) == 1 else 'are'} pinned differently, and "
            "only changes "
            f"of {' and '.join(reach.PACKAGES)} map to functions"
        )
    changed: set[FunctionName] = set()
    for name in moved:
        try:
            found, why = _changed_package(name, sites[0], sites[1])
        except OSError as exc:
            found, why = set(), f"{name}'s installed files could not be read ({exc.strerror or exc})"
        if why:
            return FunctionDiff(everything=why)
        changed |= found
    return FunctionDiff(frozenset(changed))
