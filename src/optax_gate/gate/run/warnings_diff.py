"""Warnings diff: what each environment warned while importing the contracted packages and while the contracts
ran.

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from optax_gate.gate.base.run_record import RecordedWarning
from optax_gate.gate.install import compilation_cache

DEPRECATIONS = ("DeprecationWarning", "PendingDeprecationWarning", "FutureWarning")


def read(path: Path) -> list[dict[str, Any]]:
    """The plugin's warning records (``[]`` when the file is absent or unreadable)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return []
    return data if isinstance(data, list) else []


def fold(import_warnings: Iterable[dict[str, Any]], test_warnings: Iterable[dict[str, Any]]) -> list[RecordedWarning]:
    """One entry per distinct warning of the import check's and the plugin's records (JSON): ``when`` is
    ``import``, ``collect`` or ``contract``; ``contracts`` the test ids that raised it."""
    groups: dict[tuple[str, str, str, str], set[str]] = {}
    for w in import_warnings:
        groups.setdefault(("import", w["category"], w["message"], w["module"]), set())
    for w in test_warnings:
        when = "contract" if w.get("when") == "runtest" else w.get("when") or "contract"
        key = (when, w["category"], w["message"], w["module"])
        groups.setdefault(key, set())
        if w.get("nodeid"):
            groups[key].add(w["nodeid"])
    return [
        {"when": k[0], "category": k[1], "message": k[2], "module": k[3], "contracts": sorted(v)}
        for k, v in sorted(groups.items())
    ]


#: The module column of a warning attributed to the code that called the API (a ``stacklevel`` that points
#: past optax: here a contract module or the kit that calls for it, in a team's code their own line).
CALLER = "the caller (here a contract)"


def _module(module: str) -> str:
    """``module``, or :data:`CALLER` where it is this project's own code (``optax_gate.*``) or a contract
    module (``test_*``, ``conftest``): a warning that names its caller is one row, whichever contract called."""
    name = module.rpartition(".")[2]
    return (
        CALLER
        if module == "optax_gate" or module.startswith("optax_gate.") or name.startswith("test_") or name == "conftest"
        else module
    )


def _by_key(warnings: Iterable[RecordedWarning]) -> dict[tuple[str, str, str, str], RecordedWarning]:
    """Folded warnings by ``(when, category, message, module)``, the caller's modules as one (:func:`_module`),
    their contracts joined."""
    out: dict[tuple[str, str, str, str], RecordedWarning] = {}
    for w in warnings:
        module = _module(w["module"])
        k = (w["when"], w["category"], w["message"], module)
        if k in out:
            out[k] = {**out[k], "contracts": sorted(set(out[k]["contracts"]) | set(w["contracts"]))}
        else:
            out[k] = {**w, "module": module}
    return out


def is_deprecation(category: str) -> bool:
    """Whether the warning category (``module.Name``) is a deprecation."""
    return category.rsplit(".", 1)[-1].endswith(DEPRECATIONS)


def diff(
    baseline: list[RecordedWarning],
    candidate: list[RecordedWarning],
    apis: dict[str, str],
    fail_on_new_deprecations: bool = False,
) -> list[dict[str, Any]]:
    """Rows ``{"change": "new" | "moved" | "gone", "verdict", "when",
    "category", "message", "module", "contracts", "apis"}``; ``apis`` maps a
    contract id to the API it pins. Only the suite's contracts count
    (``tests/meta`` ids are left out); new rows first. A warning gone from one
    module and new from another (same moment, category and message: optax
    moved the code that warns) is one ``moved`` row, ``noted``, with
    ``module_before``: neither new nor gone for code that meets it. A warning
    attributed to its caller (a contract, the kit) has :data:`CALLER` for module:
    one row whichever contract called."""

    def keep(w: RecordedWarning) -> bool:
        if _is_own(w):  # the gate's machinery, not the environment under test
            return False
        return w["when"] == "import" or not w["contracts"] or any(c in apis for c in w["contracts"])

    base = _by_key(w for w in baseline if keep(w))
    cand = _by_key(w for w in candidate if keep(w))
    # the same warning raised from another module (optax moved the code that warns): one "moved" row, noted
    gone_from: dict[tuple[str, str, str], list[tuple[str, str, str, str]]] = {}
    for k in sorted(set(base) - set(cand)):
        gone_from.setdefault(k[:3], []).append(k)
    moved = {k: gone_from[k[:3]].pop(0) for k in sorted(set(cand) - set(base)) if gone_from.get(k[:3])}
    moved_from = set(moved.values())  # said on their "moved" rows
    rows = []
    for k in sorted(set(base) ^ set(cand)):
        if k in moved_from:
            continue
        w = cand.get(k) or base[k]
        new = k in cand
        verdict = "noted"
        if new and k not in moved:
            verdict = "broken" if fail_on_new_deprecations and is_deprecation(w["category"]) else "changed"
        found = w["contracts"] + (base[moved[k]]["contracts"] if k in moved else [])
        contracts = sorted(set(c for c in found if c in apis) or found)
        row = {
            "change": "moved" if k in moved else "new" if new else "gone",
            "verdict": verdict,
            "when": w["when"],
            "category": w["category"],
            "message": w["message"],
            "module": w["module"],
            "contracts": contracts,
            "apis": sorted({apis[c] for c in contracts if c in apis}),
        }
        if k in moved:
            row["module_before"] = moved[k][3]
        rows.append(row)
    rows.sort(key=lambda r: (("new", "moved", "gone").index(r["change"]), r["when"], r["category"], r["message"]))
    return rows


def own(warnings: list[RecordedWarning]) -> list[RecordedWarning]:
    """The folded warnings about the gate's own machinery (its compilation
    cache), left out of :func:`diff`."""
    return [w for w in warnings if _is_own(w)]


def _is_own(warning: RecordedWarning) -> bool:
    """Whether a folded warning is JAX's about the gate's compilation cache (``compilation_cache.is_own_warning``,
    which reads a warning as a plain dict)."""
    return compilation_cache.is_own_warning(dict(warning))
