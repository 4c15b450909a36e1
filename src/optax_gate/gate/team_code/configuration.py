"""A finding's configuration read from its contract cases' own labels: the keyword values, dtypes and inputs they used,
never the finding's prose."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from optax_gate.gate.judge.causes import missing_name
from optax_gate.gate.judge.findings import EDGE_KEY, row_cause, test_name
from optax_gate.gate.team_code import call_sites

DTYPES = ("bfloat16", "float16", "float32", "float64", "complex64", "complex128")


_DTYPE_WORD = re.compile(r"\b(" + "|".join(DTYPES) + r")\b")


#: A contract row about a signature (parameter kinds: ``('delta', 'KEYWORD_ONLY', 1.0)``): its finding
#: has the cause of an API surface break at the team's line (``signature`` in :func:`configuration`).
_SIGNATURE_WORDS = re.compile(
    r"\b(?:KEYWORD_ONLY|POSITIONAL_ONLY|POSITIONAL_OR_KEYWORD|VAR_POSITIONAL|VAR_KEYWORD)\b"
    r"|keyword-only|positional-only"
)


def configuration(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The configuration a finding's contract rows were run with (see the
    module docstring): ``{"keywords": {name: value text}, "dtypes": [...],
    "leaves": [...], "x64": bool, "raises": type, "negative": bool,
    "signature": bool, "condition": words}``, the keys that apply only
    (``condition``: what a training recipe's rows need of the run,
    ``call_sites.RECIPE_CONDITIONS``) (``signature``: a row is
    about parameter kinds, so a line whose call the API surface says breaks
    breaks for this finding's cause)."""
    keywords: dict[str, str] = {}
    dtypes: list[str] = []
    leaves: list[str] = []
    cases: list[str] = []
    out: dict[str, Any] = {}
    for row in rows:
        key, evidence = row_cause(row, True)
        kind = key[0]
        if kind == "edge-hyper":
            for path in key[1]:
                if EDGE_KEY.match(path):
                    name, _, rest = path.partition("=")
                    keywords[name] = rest.partition("/")[0]
                    inputs = rest.split("/")[1] if rest.count("/") else ""
                    built = any(
                        str(getattr(leaf, side, "")).startswith("build ")
                        for leaf in evidence or ()
                        for side in ("old", "new")
                    )  # building with it raised: whatever the inputs
                    if inputs in _NONFINITE_INPUTS and not built:
                        out["condition"] = _NONFINITE_INPUTS[inputs]
        elif kind == "nonfinite" and all(p in _NONFINITE_INPUTS for p in key[1]):
            out["condition"] = " or ".join(dict.fromkeys(_NONFINITE_INPUTS[p] for p in key[1]))
        elif kind == "dtype-variant":
            dtypes += [p.rpartition("_")[2] for p in key[1]]
        elif kind == "state-dtype":
            dtypes += [old for old, _ in key[1]]
            leaves += [leaf.path for leaf in evidence if leaf.dtypes[0] != leaf.dtypes[1]]
        elif kind == "x64":
            out["x64"] = True
        elif kind == "raises":
            out["raises"], out["negative"] = key[1], bool(key[2])
        elif kind == "corner" and all(c.startswith(_DERIVATIVE_CORNER) for c in key[1]):  # surface_derivatives
            names = ", ".join(f"`{c[len(_DERIVATIVE_CORNER) :]}`" for c in key[1])
            out["condition"] = f"a derivative taken with respect to {names} (jax.grad or jax.jvp over that argument)"
        elif kind == "corner" and _misuse_corner(evidence):  # a corner that raised at the baseline: a misuse's error
            out["raises"], out["negative"] = _misuse_corner(evidence), True
        gone = missing_name(str(row.get("detail") or ""))
        if gone:  # the contract met a name the candidate no longer has (optax.monte_carlo)
            out["gone"] = gone
        params = test_name(row["id"])[1]
        dtypes += _DTYPE_WORD.findall(params)
        cases += [w for w in params.split("-") if w and "." not in w and not _DTYPE_WORD.fullmatch(w)]
        if row.get("change") == "new":
            out["new"] = True
        keywords.update(row.get("configuration") or {})  # the contract's configuration marker, in words
        if row.get("api") in call_sites.RECIPE_CONDITIONS:
            out["condition"] = call_sites.RECIPE_CONDITIONS[row["api"]]
    if keywords:
        out["keywords"] = keywords
    if dtypes:
        out["dtypes"] = list(dict.fromkeys(dtypes))
    if leaves:
        out["leaves"] = list(dict.fromkeys(leaves))
    if cases:
        out["cases"] = list(dict.fromkeys(cases))
    if any(_SIGNATURE_WORDS.search(str(row.get("detail") or "")) for row in rows):
        out["signature"] = True
    return out


#: A derivative corner's key (``kit.surface.derivatives``: ``corner.grad_wrt=<parameter>``) less ``corner.``.
_DERIVATIVE_CORNER = "grad_wrt="


#: The generated snapshots' non-finite input classes (``kit.surface.edges.INPUTS``,
#: ``base.drift.NONFINITE_CLASSES``): what a finding about them needs of the run.
_NONFINITE_INPUTS = {
    "nan_inf_params": "a parameter that is NaN or inf",
    "nan_param": "a parameter that is NaN or inf",
    "nan_inf_grads": "a gradient that is NaN or inf",
}


def _misuse_corner(leaves: Any) -> str:
    """The error type a corner-grid drift's corners raised at the baseline (``corner.int_inputs/grad:
    raises AssertionError -> raises TypeError``), when every one of its corners raised there (the
    corner is a misuse: integer inputs to a loss, shapes that do not match); "" otherwise."""
    types = []
    for leaf in leaves or ():
        old = str(getattr(leaf, "old", ""))
        m = re.match(r"raises (\w+)", old)
        if m:
            types.append(m[1])
        elif not str(getattr(leaf, "path", "")).endswith(
            "/error"
        ):  # the error's own message: its type is on the other keys
            return ""
    return types[0] if types and len(set(types)) == 1 else ""
