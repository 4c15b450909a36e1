"""The team's call sites on every finding (``--usage``), applied after the findings are formed
(``optax_gate.gate.judge.findings``) and the sections beyond the contracts are built
(``optax_gate.gate.diffs.unseen``).

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from optax_gate.gate.base import model
from optax_gate.gate.team_code import binding, usage

#: Most sites named on one finding in report.md (report.json has them all).
SHOWN = 8


#: The APIs through which each training-recipe contract of ``tests/contracts/test_training_recipes.py``
#: reaches the team's code. The base recipe (``recipe()``: ``chain(clip_by_global_norm,
#: adamw(warmup_cosine_decay_schedule))``) names all four of its APIs. A recipe that adds something to
#: the base names only what it adds or exercises beyond it: a change of the base itself breaks the base
#: recipe's own contracts, which reach the base's users. So MultiSteps around the recipe reaches code
#: using ``optax.MultiSteps`` (a float32 team calling ``adam`` and ``clip_by_global_norm`` was failed by
#: MultiSteps' accumulator change), a None gradient leaf reaches the transformations that see it (clip
#: and Adam; 0.2.8's ValueError is scale_by_adam's), a zero clipping threshold reaches
#: ``clip_by_global_norm``. ``optax.chain`` is left out: every alias is built from it (``sgd`` would
#: match), and a change of ``chain`` itself shows in its own contracts. ``optax.adam`` is in wherever
#: Adam's own behaviour is pinned (its moments with a None gradient leaf, its eps in float16), which code
#: calling ``optax.adam`` meets as well. A recipe missing here names no API and is the team's, fail
#: closed (``optax_gate.gate.team_code.scope.usage_decision``); a meta test keeps the table and the module
#: together.
_RECIPE = ("optax.clip_by_global_norm", "optax.adamw", "optax.adam", "optax.warmup_cosine_decay_schedule")
_ADAM = ("optax.adamw", "optax.adam")
RECIPE_APIS: dict[str, tuple[str, ...]] = {
    "recipe:adamw+warmup-cosine+clip": _RECIPE,
    "recipe:multisteps(adamw+warmup-cosine+clip)": ("optax.MultiSteps",),
    "recipe:scan-carry": _RECIPE,
    "recipe:scan-carry(multisteps)": ("optax.MultiSteps",),
    "recipe:scan-carry(mu-bfloat16)": _ADAM,
    "recipe:none-gradients": ("optax.clip_by_global_norm", *_ADAM),
    "recipe:zero-gradients-low-precision": ("optax.clip_by_global_norm", *_ADAM),
    "recipe:zero-clip-threshold": ("optax.clip_by_global_norm",),
    "recipe:inject_hyperparams(adam)": ("optax.inject_hyperparams", "optax.adam"),
}


#: What a training recipe's finding needs of the team's run to reach it, said where its lines cannot be
#: told statically (``optax_gate.gate.team_code.attribution``): more than "cannot tell without --run", what
#: to look for (a float32 Adam team and the None-gradient change: whether its gradients hold a None). What a
#: call's arguments decide is the contract's ``configuration(...)`` marker instead (the zero clipping
#: threshold is ``max_norm="0"``, the bfloat16 moment ``mu_dtype="bfloat16"``): ``clip_by_global_norm(1.0)``
#: is not affected by the zero-threshold recipe.
RECIPE_CONDITIONS: dict[str, str] = {
    "recipe:none-gradients": "a gradient leaf that is None where the params hold an array",
    "recipe:zero-gradients-low-precision": "all-zero gradients in a low-precision dtype",
    **dict.fromkeys(
        ("recipe:scan-carry", "recipe:scan-carry(multisteps)", "recipe:scan-carry(mu-bfloat16)"),
        "the optimizer state carried through jax.lax.scan",
    ),
}


def apis_of(label: str) -> list[str]:
    """The public paths a contract's ``api`` label names (see the module docstring)."""
    if label in RECIPE_APIS:
        return list(RECIPE_APIS[label])
    out = []
    for part in label.split("+"):
        part = part.split("@", 1)[0].strip()
        if part.startswith("nnx:"):
            part = "flax.nnx." + part[4:]
        part = part.split(":", 1)[0]
        if "." in part and part not in out:
            out.append(part)
    return out


def definition(path: str, targets: dict[str, str]) -> str:
    """Where ``path`` is defined (``optax.losses.huber_loss`` and
    ``optax.huber_loss`` -> ``optax.losses._regression.huber_loss``): the
    longest public prefix known to ``targets``, the rest kept; ``path`` itself
    when no prefix is known."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        head = ".".join(parts[:cut])
        if head in targets:
            return ".".join([targets[head], *parts[cut:]])
    return path


def matcher(apis: Iterable[str], targets: dict[str, str]) -> Callable[[str], bool]:
    """Whether a public path is one of ``apis`` or below one, under any public path of the same definition."""
    wanted = {x for a in apis for x in (a, definition(a, targets))}

    def hit(path: str) -> bool:
        return any(p == w or p.startswith(w + ".") for p in (path, definition(path, targets)) for w in wanted)

    return hit


def _site_ranks(
    report: model.Report, apis: Iterable[str], targets: dict[str, str] | None
) -> dict[str, list[tuple[int, str]]]:
    """``file:line`` -> (rank in ``binding.SITE_VERDICTS``, note) of each site the API surface rows of ``apis``
    judge."""
    hit = matcher(apis, targets or {})
    found: dict[str, list[tuple[int, str]]] = {}
    surface = report.get("surface")
    for row in surface["rows"] if surface else []:
        if hit(row.get("path", "")):
            for site in row.get("sites") or []:
                found.setdefault(site["where"], []).append((binding.SITE_VERDICTS.index(site["verdict"]), site["note"]))
    return found


def binding_notes(report: model.Report, apis: Iterable[str], targets: dict[str, str] | None = None) -> dict[str, str]:
    """``file:line`` -> what the API surface diff says of that use of ``apis``
    (``row["sites"]`` of the surface rows of those APIs, ``binding.match``):
    the notes of its most severe verdict (``binding.SITE_VERDICTS``), joined by
    ``; `` (``breaks: delta is keyword-only in the candidate``; ``passes delta
    by keyword``). Empty where no surface row judges the API's calls."""
    out = {}
    for where, notes in _site_ranks(report, apis, targets).items():
        worst = min(rank for rank, _ in notes)
        out[where] = "; ".join(dict.fromkeys(note for rank, note in notes if rank == worst))
    return out


def binding_verdicts(
    report: model.Report, apis: Iterable[str], targets: dict[str, str] | None = None
) -> dict[str, str]:
    """``file:line`` -> the most severe verdict (``binding.SITE_VERDICTS``) of
    the API surface rows of ``apis`` on that use: ``unaffected`` where every
    change of the signature binds the call as before."""
    return {
        where: binding.SITE_VERDICTS[min(rank for rank, _ in notes)]
        for where, notes in _site_ranks(report, apis, targets).items()
    }


def sites(scan: usage.Scan, apis: Iterable[str], targets: dict[str, str] | None = None) -> list[str]:
    """``file:line`` of the team's uses of ``apis`` (a use of the path itself or
    of a member below it, under any public path of the same definition:
    ``targets`` maps public paths to definitions, from the baseline's static
    surface), calls and attribute uses first found; imports and type
    annotations (``-> optax.MultiSteps`` runs none of it) only when nothing
    else uses them. No duplicates, in scan order."""
    hit = matcher(apis, targets or {})
    hits = [u for u in scan.uses if u.how != "catch" and hit(u.path)]
    used = [u.where for u in hits if u.how not in ("import", "annotation")] or [u.where for u in hits]
    return list(dict.fromkeys(used))


def _not_scanned(scan: usage.Scan, apis: list[str]) -> list[str]:
    """Files read but not parsed whose text names one of ``apis`` (files not
    read at all may use any API: the report says so once, not per finding)."""
    return list(dict.fromkeys(n.path for a in apis for n in scan.may_use(a) if n.content is not None))


def annotated(report: model.Report, scan: usage.Scan, targets: dict[str, str] | None = None) -> model.Report:
    """A copy of ``report`` (``report`` itself is not changed) whose findings
    each have ``your_code`` / ``your_code_not_scanned`` (and
    ``your_code_notes``), the findings touching the team's code first,
    renumbered from 1, and whose warnings rows naming APIs have ``your_code``.
    ``targets``: public path -> definition (``Entry.target`` of the baseline's
    surface), so a use through another public path of the same function
    counts. Reads the report's ``contracts``, ``findings``, ``surface`` (the
    rows' ``sites``) and ``warnings``."""
    out: model.Report = {**report}
    api_of = {row["id"]: row.get("api") or "" for row in report.get("contracts", [])}
    findings = report.get("findings")
    if isinstance(findings, list):
        marked: list[model.Finding] = []
        for f in findings:
            labels = [api_of.get(cid, "") for cid in f.get("contracts", [])] or [f.get("api", "")]
            apis = list(dict.fromkeys(a for label in labels for a in apis_of(label)))
            g: model.Finding = {
                **f,
                "your_code": sites(scan, apis, targets),
                "your_code_not_scanned": _not_scanned(scan, apis),
            }
            notes = binding_notes(report, apis, targets)
            if any(w in notes for w in g["your_code"]):
                g["your_code_notes"] = {w: notes[w] for w in g["your_code"] if w in notes}
            marked.append(g)
        marked.sort(key=lambda f: not f["your_code"])  # stable: the order among each group stays
        out["findings"] = [{**f, "number": number} for number, f in enumerate(marked, 1)]
    warnings = report.get("warnings")
    if isinstance(warnings, dict) and warnings.get("rows"):
        out["warnings"] = {
            **warnings,
            "rows": [
                {**row, "your_code": sites(scan, list(row["apis"]), targets)} if row.get("apis") else row
                for row in warnings["rows"]
            ],
        }
    return out
