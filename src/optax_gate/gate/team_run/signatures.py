"""A call's abstract signature on both sides compared in words: what a structure-only comparison says differs."""

from __future__ import annotations

from typing import Any

from optax_gate.gate.team_run.leaves import short_leaf


def texts(base: dict[str, Any] | None, cand: dict[str, Any] | None) -> list[str]:
    """What differs between a call's recorded arguments on the two sides (``{"positional", "keyword"}`` of
    abstract leaves and PyTree structures), one text each; [] when they are equal."""
    if base == cand:
        return []
    if not base or not cand:
        return ["arguments not recorded on one side"]
    said = []
    b_pos, c_pos = base.get("positional", []), cand.get("positional", [])
    if len(b_pos) != len(c_pos):
        said.append(f"{len(b_pos)} → {len(c_pos)} positional arguments")
    for i, (b, c) in enumerate(zip(b_pos, c_pos, strict=False)):
        said += _one(f"argument {i + 1}", b, c)
    bk, ck = base.get("keyword", {}), cand.get("keyword", {})
    for k in sorted(set(bk) | set(ck)):
        if k not in bk or k not in ck:
            said.append(f"keyword {k} given on one side only")
        else:
            said += _one(k, bk[k], ck[k])
    return said or ["arguments differ"]


def structure_change(base: str, cand: str, width: int = 80) -> str:
    """Where two PyTree structures (as the recorder writes them) part, and what each holds there:
    ``at `…optimizer(`: `step=int32…` → `count=int32…```; "" when equal."""
    if base == cand:
        return ""
    i = next((k for k, (x, y) in enumerate(zip(base, cand, strict=False)) if x != y), min(len(base), len(cand)))
    start = max(base.rfind(sep, 0, i) for sep in "([{,") + 1
    before = base[max(0, start - width) : start].lstrip(", ")
    parts = [text[start : start + width] + ("…" if len(text) > start + width else "") for text in (base, cand)]
    return f"at `…{before}`: `{parts[0] or '(nothing)'}` → `{parts[1] or '(nothing)'}`"


def _one(name: str, b: dict[str, Any], c: dict[str, Any]) -> list[str]:
    if b == c:
        return []
    if b.get("tree") != c.get("tree"):
        return [f"{name}: PyTree structure differs {structure_change(str(b.get('tree')), str(c.get('tree')))}"]
    for i, (x, y) in enumerate(zip(b.get("leaves", []), c.get("leaves", []), strict=False)):
        if x != y:
            return [
                f"{name}{'' if b.get('n_leaves', 1) == 1 else f' leaf {i}'}: {short_leaf(x)} → {short_leaf(y)}"
                + (" (weak type)" if x.get("weak_type") != y.get("weak_type") else "")
            ]
    return [f"{name} differs"]
