"""Where a difference is born: the replays of a step (its jaxpr run equation by equation on both sides) compared, the
first equation whose output differs."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from optax_gate.gate.team_run.leaves import leaf_error, value_change


def read_replays(folder: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """The equation-by-equation replays in the trace files of ``folder``
    (``optax_gate.recorder.replay``), keyed by (function, call site): the
    first call of each function the team transformed. Unreadable files are
    :func:`read`'s to report: skipped here."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted(Path(folder).glob("trace-*.jsonl")):
        try:
            lines = path.read_text(encoding="utf-8").splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            if '"replay"' not in line:
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if "replay" in event:
                out.setdefault((event["replay"], event.get("site", "")), event)
    return out


def _place(eqn: dict[str, Any]) -> tuple[str, str]:
    """An equation's operation and the file it was traced in, without the line
    (Optax's, Flax's and JAX's line numbers move between releases without the
    program changing)."""
    return eqn["p"], eqn["at"].rpartition(":")[0]


def _owner(at: str) -> str:
    """Whose code a traced frame is: ``Optax``, ``Flax``, or ``your code`` (a file of the team's)."""
    head = at.split("/", 1)[0]
    return {"optax": "Optax", "flax": "Flax", "jax": "JAX"}.get(head, "your code")


def _same_values(be: list[dict[str, Any]], ce: list[dict[str, Any]], i: int) -> tuple[int, int] | None:
    """Whether two replays that trace other operations from equation ``i`` on compute the same values: they take up
    the same operations again (a common tail), and the first operation where they meet gets bit-identical inputs.
    Returns where in the tail they first differ in value (``len(be)``, ``len(ce)`` when nowhere), else None."""
    n = 0
    while n < min(len(be), len(ce)) - i and _place(be[len(be) - 1 - n]) == _place(ce[len(ce) - 1 - n]):
        n += 1
    jb, jc = len(be) - n, len(ce) - n
    if not n or be[jb]["in"] != ce[jc]["in"]:
        return None
    later = next((t for t in range(n) if be[jb + t]["out"] != ce[jc + t]["out"]), None)
    return (jb + later, jc + later) if later is not None else (len(be), len(ce))


def birth(
    baseline: dict[tuple[str, str], dict[str, Any]], candidate: dict[tuple[str, str], dict[str, Any]]
) -> list[dict[str, Any]]:
    """Where each replayed function's difference is born (see
    ``optax_gate.recorder.replay``), for the functions replayed on both sides
    whose equations give other results. Each is ``{"function", "site",
    "kind", ...}`` with ``kind``:

    - ``before``: the function's inputs already differ (``inputs``: how many
      of how many; ``first_input``: the path of the first that differs, in an ``nnx`` step's state): born before it (the
      data, ``jax.random``, the model's
      initialisation, an earlier step);
    - ``operation``: the first equation whose inputs are bit-identical and
      whose outputs differ, the same operation traced at the same place on
      both sides: JAX/XLA computes it otherwise (``index``, ``primitive``,
      ``at``, ``team``, ``error_ulps``, ``change``);
    - ``program``: from that equation on the two sides trace other programs
      (another operation, or traced elsewhere): the code at ``at`` (``by``:
      Optax, Flax or your code) computes something else; after an
      ``operation`` row, a ``program`` row with ``also`` says where the two
      programs part later (a step can hold both: XLA's rounding and Optax's change);
    - ``path``: from that equation on the two sides trace other programs that compute the same values (they
      meet again on bit-identical inputs): the code at ``at`` changed how, not what (not a cause); a value
      difference after it is a further row (``operation`` or ``program``);
    - ``compiled``: every equation gives the same results one at a time:
      the difference comes from how the program is compiled as a whole;
    - ``unknown``: a replay failed or was too large (``why``).
    """
    found = []
    for key in [k for k in baseline if k in candidate]:
        b, c = baseline[key], candidate[key]
        row: dict[str, Any] = {"function": key[0], "site": key[1]}
        if b.get("error") or c.get("error") or b.get("too_large") or c.get("too_large"):
            row.update(
                kind="unknown",
                why=b.get("error")
                or c.get("error")
                or f"too large to replay ({b.get('too_large') or c.get('too_large')} equations)",
            )
            found.append(row)
            continue
        b_in, c_in = b.get("inputs") or [], c.get("inputs") or []
        if b_in != c_in:
            differing = sum(x != y for x, y in zip(b_in, c_in, strict=False)) + abs(len(b_in) - len(c_in))
            if differing:
                row.update(kind="before", inputs=f"{differing} of {max(len(b_in), len(c_in))}")
                names = b.get("input_paths") or []
                first = next(
                    (
                        names[i]
                        for i, (x, y) in enumerate(zip(b_in, c_in, strict=False))
                        if x != y and i < len(names) and names[i]
                    ),
                    "",
                )
                if first:  # the graph's state: which of its arrays differs first (a model's initialisation)
                    row["first_input"] = first
                found.append(row)
                continue
        be, ce = b.get("eqns") or [], c.get("eqns") or []
        for i, (x, y) in enumerate(zip(be, ce, strict=False)):
            if _place(x) != _place(y) and (path := _same_values(be, ce, i)) is not None:
                # another program for the same values (optax 0.2.8's global norm): not a cause; a value that differs
                # after the two programs meet again is judged there, as any other
                row.update(
                    kind="path",
                    index=i,
                    primitive=f"{x['p']} → {y['p']}" if x["p"] != y["p"] else x["p"],
                    team=x.get("team") or "",
                )
                row.update(
                    at=x["at"] if x["at"] == y["at"] else f"{x['at']} → {y['at']}", by=_owner(y["at"] or x["at"])
                )
                if path[0] < len(be):
                    x, y = be[path[0]], ce[path[1]]
                    found.append(row)
                    kind = "operation" if x["in"] == y["in"] else "program"
                    row = {
                        "function": key[0],
                        "site": key[1],
                        "kind": kind,
                        "index": path[0],
                        "primitive": x["p"],
                        "at": x["at"],
                    }
                    row.update(team=x.get("team") or "", by="JAX/XLA" if kind == "operation" else _owner(x["at"]))
                break
            if _place(x) != _place(y):
                row.update(
                    kind="program",
                    index=i,
                    primitive=f"{x['p']} → {y['p']}" if x["p"] != y["p"] else x["p"],
                    at=x["at"] if x["at"] == y["at"] else f"{x['at']} → {y['at']}",
                    team=x.get("team") or "",
                    by=_owner(y["at"] or x["at"]),
                )
                break
            if x["out"] != y["out"]:
                kind = "operation" if x["in"] == y["in"] else "program"
                row.update(
                    kind=kind,
                    index=i,
                    primitive=x["p"],
                    at=x["at"],
                    team=x.get("team") or "",
                    by="JAX/XLA" if kind == "operation" else _owner(x["at"]),
                )
                pairs = list(zip(x["out"], y["out"], x.get("vals") or [], y.get("vals") or [], strict=False))
                moved = next(
                    ((u, v) for dx, dy, u, v in pairs if dx != dy and u and v), None
                )  # the output that differs
                if (
                    moved
                    and moved[0].get("dtype") == moved[1].get("dtype")
                    and moved[0].get("shape") == moved[1].get("shape")
                ):
                    error = leaf_error(*moved)
                    row["error_ulps"] = None if math.isinf(error) else error
                    row["change"] = value_change(*moved)
                    if not error:  # the difference lies outside the sampled elements
                        row["change"] = "it differs outside the sampled elements (its digest)"
                        row["error_ulps"] = None
                # later, the two programs may also part (Optax computing something else): a second birth, said too
                later = next((j for j in range(i + 1, min(len(be), len(ce))) if _place(be[j]) != _place(ce[j])), None)
                if later is not None:
                    x, y = be[later], ce[later]
                    found.append(row)
                    row = {
                        "function": key[0],
                        "site": key[1],
                        "kind": "program",
                        "index": later,
                        "primitive": f"{x['p']} → {y['p']}" if x["p"] != y["p"] else x["p"],
                        "at": x["at"] if x["at"] == y["at"] else f"{x['at']} → {y['at']}",
                        "team": x.get("team") or "",
                        "by": _owner(y["at"] or x["at"]),
                        "also": True,
                    }
                break
        else:
            if len(be) != len(ce):
                row.update(kind="program", index=min(len(be), len(ce)), primitive="", at="", team="", by="")
            else:
                row.update(kind="compiled")
        found.append(row)
    return found
