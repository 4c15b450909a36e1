"""Where a difference of the team's run is born, in words: the report's line and the verdict's short form."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from optax_gate.gate.team_run import divergence


def born_words(row: Mapping[str, Any], optax_first: bool = False) -> str:
    """Where one replayed function's difference is born, in words a team reads (``birth.birth``'s row);
    ``optax_first``: an Optax call of the team's own, outside the functions it transformed, was found where the
    difference is born (:func:`eager_births`), so inputs that already differ come from there."""
    called = f"`{row['function']}` (called at `{row['site']}`)"
    team = f" at your line `{row['team']}`" if row.get("team") and row.get("team") != row.get("at") else ""
    if row["kind"] == "before":
        first = f", first `{row['first_input']}`" if row.get("first_input") else ""
        return (
            f"{called} already gets other inputs ({row['inputs']} arrays differ{first}): the difference is "
            "born before it, "
            + (
                "in the Optax call where it is born (above)"
                if optax_first
                else "in code that is not an Optax call (the data, jax.random, the model's initialisation, an "
                "earlier step)"
            )
        )
    if row["kind"] == "operation":
        size = (
            f" ({_ulp_text(row.get('error_ulps'))}{'; ' + row['change'] if row.get('change') else ''})"
            if row.get("error_ulps") is not None or row.get("change")
            else ""
        )
        return (
            f"in {called}, the first operation that gives other results is `{row['primitive']}`{team} (traced at "
            f"`{row['at']}`), on bit-identical inputs: JAX/XLA computes that operation otherwise{size}"
        )
    if row["kind"] == "program" and row.get("also") and row.get("at"):  # after an operation rounded otherwise
        return (
            f"in {called}, from operation {row['index'] + 1} on {row['by']} also traces another program, at "
            f"`{row['at']}`{team}, on "
            "inputs the rounding above already moved: whether it computes other values is not told by this "
            "replay (your "
            "run's values are judged against its own rounding noise)"
        )
    if row["kind"] == "program":
        if not row.get("at"):
            return f"in {called}, the two sides trace programs of different lengths: the code the step calls changed"
        return (
            f"in {called}, from operation {row['index'] + 1} on the two sides trace other programs, at `{row['at']}`"
            f"{team}: {row['by']} computes something else there"
        )
    if row["kind"] == "path":
        return (
            f"in {called}, from operation {row['index'] + 1} on {row['by']} traces another program at "
            f"`{row['at']}`{team}, "
            "which computes the same values (the two programs meet again on bit-identical inputs): a changed "
            "code path, not a changed result"
        )
    if row["kind"] == "compiled":
        return (
            f"in {called}, every operation replayed one at a time gives the same results: the difference comes from "
            "how JAX/XLA compiles the program as a whole (fusion), not from what Optax or your code computes"
        )
    if row["kind"] == "later":
        return (
            f"{called} gives bit-identical results at its first call; they first differ at call {row['call']}: born in "
            "a later step, which a replay of a first call cannot tell (what changes there: a schedule's boundary, "
            "rounding that builds up from step to step)"
        )
    return f"where the difference is born in {called} cannot be told: {row.get('why', '')}"


def eager_births(team_run: Mapping[str, Any]) -> list[str]:
    """Where a difference is born at an Optax call of the team's own, outside
    any function it transformed: a cause (its inputs the same, its results
    other), observed directly: a schedule logged with
    ``float(schedule(step))`` that goes NaN → 0.01 is born at its own line,
    not at a matmul in the jitted step."""
    out = []
    for c in team_run.get("causes") or []:
        if c.get("phase") == "call" and not divergence.transformed(c["api"]) and c.get("side", "both") == "both":
            # through nnx.Optimizer: the Optax transformation it holds (``via``) computed the state or the update
            where = (
                f"in `{c['via']}`, through `{c['call']}` at `{c['site']}`"
                if c.get("via")
                else f"in the Optax call `{c['call']}` at `{c['site']}`"
            )
            out.append(f"{where}: other results on the same inputs (Optax's code, or the JAX operations it runs)")
    return list(dict.fromkeys(out))


def born_short(row: Mapping[str, Any]) -> str:
    """Where one difference is born, in a few words for the verdict's reason ("Your code" says :func:`born_words`)."""
    mine = f" (your line `{row['team']}`)" if row.get("team") and row.get("team") != row.get("at") else ""
    if row["kind"] == "operation":
        size = _ulp_text(row["error_ulps"]) if row.get("error_ulps") is not None else row.get("change") or ""
        return f"in JAX/XLA: `{row['primitive']}` at `{row['at']}`{mine} gives other results on identical inputs" + (
            f" ({size})" if size else ""
        )
    if row["kind"] == "program" and row.get("at") and row.get("also"):
        return f"{row['by']} also traces another program from `{row['at']}`{mine} (on inputs rounding already moved)"
    if row["kind"] == "program" and row.get("at"):
        return f"in {row['by']}: the step computes something else from `{row['at']}`{mine}"
    if row["kind"] == "before":
        return (
            f"before `{row['function']}`: its inputs already differ (the data, jax.random, the initialisation, an "
            "earlier step)"
        )
    if row["kind"] == "path":
        return f"{row['by']} traces another program at `{row['at']}`{mine}, with the same values"
    if row["kind"] == "compiled":
        return "in JAX/XLA's compilation of the whole step (no single operation differs alone)"
    if row["kind"] == "later":
        return f"at call {row['call']} of `{row['function']}` (its first call gives the same results)"
    return (
        "where, cannot be told"
        if row["kind"] == "unknown"
        else "in the code the step calls (its programs differ in length)"
    )


def _ulp_text(x: float | None) -> str:
    return "beyond any ULP count" if x is None else f"{x:.3g} ULP"
