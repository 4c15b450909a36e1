"""What a training recipe's finding changes for a program that does what the recipe does, in the team's words."""

from __future__ import annotations

import re

from optax_gate.gate.base import model
from optax_gate.gate.team_code import call_sites


def recipe_words(finding: model.Finding, recipe: str) -> str:
    """What a training recipe's finding changes for a program that does what the recipe does, in the
    team's words (``call_sites.RECIPE_CONDITIONS``), said once per finding (``your_code_recipe``):
    ``if your run has a gradient leaf that is None where the params hold an array: the optimizer now
    raises ValueError where the baseline had a known defect``; "" when the recipe has no condition
    in words."""
    condition = call_sites.RECIPE_CONDITIONS.get(recipe)
    return f"if your run has {condition}: {_now(finding)}" if condition else ""


_RAISES = re.compile(r"\b((?:[A-Z]\w*)(?:Error|Exception))\b")


def _now(finding: model.Finding) -> str:
    """What the candidate does in the recipe, from the finding's broken part: ``the update now raises
    ValueError`` or its cause in a few words."""
    pieces: list[model.FindingPart | model.Finding] = [*finding.get("parts", [])] or [finding]
    parts = [p for p in pieces if p.get("change") == "broken"] or [finding]
    cause = str(parts[0].get("cause") or "")
    m = _RAISES.match(cause) or (re.search(r"now raises (\w+)", cause))
    if m:
        before = (
            " (the baseline did not raise)"
            if "known upstream defect" not in str(finding.get("cause"))
            else (" where the baseline had a known defect")
        )
        return f"the optimizer now raises {m.group(1)}{before}"
    return cause[:160]
