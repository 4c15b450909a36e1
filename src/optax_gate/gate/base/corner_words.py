"""A corner's recorded shorthand in words (the corner grids' records, ``optax_gate.kit.corners``): a
transformation corner's ``ok u f32 |u| 0.03 u0 0.01 s f32x6,i32x1``, a schedule corner's values per step,
a sharded corner's layouts. Used by the findings' lines and by each drifted row of a report."""

from __future__ import annotations

import re

from optax_gate.gate.base.plain_text import and_join

#: A transformation corner's recorded outcome (``optax_gate.kit.corners.transformations.transformation_outcome``).
TRANSFORMATION_OUTCOME = re.compile(r"(ok|non-finite) u (\S+) \|u\| (\S+) u0 (\S+) s (\S+)(?: h (\S+))?")


_KIND = r"(?:py \w+|\w+(?:\[[\d,]*\])?(?: weak)?)"
_NUMBER = r"(?:-?inf|nan|-?[\d.]+(?:e[-+]\d+)?)"
#: A schedule corner's record (``corners.schedules.schedule_outcomes``): status, the results' kinds, a value per step.
_SCHEDULE_OUTCOME = re.compile(rf"(ok|non-finite) ({_KIND}(?:/{_KIND})*) ({_NUMBER}(?: {_NUMBER})*)")


def _schedule_words(value: str) -> str | None:
    """``ok py float 0.04 0.1 …`` -> ``ok (a Python float at steps 0, 1, …: 0.04, 0.1, …)``; None for
    another value (a tree corner's one value is no schedule's value per step)."""
    from optax_gate.kit.corners.schedules import SCHEDULE_STEPS

    m = _SCHEDULE_OUTCOME.fullmatch(value)
    if not m or len(m[3].split()) != len(SCHEDULE_STEPS):
        return None

    def kind(text: str) -> str:
        if text.startswith("py "):  # a Python number, or NumPy's float64 scalar (a float subclass)
            return "a NumPy float64 scalar" if text == "py float64" else f"a Python {text[3:]}"
        name, weak = text.removesuffix(" weak"), text.endswith(" weak")
        return f"a {'weakly typed ' if weak else ''}{name} array"

    steps = ", ".join(map(str, SCHEDULE_STEPS))
    return f"{m[1]} ({' or '.join(kind(k) for k in m[2].split('/'))} at steps {steps}: {', '.join(m[3].split())})"


#: A sharded corner's record (``optax_gate.kit.surface.sharded.outcome``): update shardings, state counts, comparison.
SHARDED_OUTCOME = re.compile(r"ok u ([\w,]+) s ([\w,]+)(?: (.+))?")


def _sharded_words(value: str) -> str | None:
    """``ok u rep,m,dm s dmx2,repx3 same`` -> ``ok (updates replicated / over
    model / over data x model; state: 2 leaves over data x model and 3 leaves
    replicated; the same values as on one device)`` (each letter the initial
    of a mesh axis, ``surface_sharded.AXIS_LETTERS``); None for another value."""
    from optax_gate.kit.surface.sharded import AXIS_LETTERS

    m = SHARDED_OUTCOME.fullmatch(value)
    if not m:
        return None

    def where(spec: str) -> str:
        if spec == "rep":
            return "replicated"
        if spec == "1dev":
            return "on one device"
        return "over " + " x ".join(AXIS_LETTERS.get(d, "-" if d == "_" else d) for d in spec)

    updates = " / ".join(where(s) for s in m[1].split(",")) if m[1] != "none" else "none"
    counts = [c.rpartition("x") for c in m[2].split(",")] if m[2] != "none" else []
    state = and_join([f"{n} {'leaf' if n == '1' else 'leaves'} {where(spec)}" for spec, _, n in counts]) or "no leaves"
    compared = (
        "the values against one device under /one_device"
        if m[3] is None
        else "the same values as on one device"
        if m[3] == "same"
        else f"{m[3]} than on one device"
        if m[3].startswith("other ")
        else "on one device it raises " + m[3].removeprefix("1dev raises ")
        if m[3].startswith("1dev raises ")
        else m[3]
    )
    return f"ok (updates {updates}; state: {state}; {compared})"


#: A wrapper corner's record (``optax_gate.kit.corners.wrappers.wrapper_outcome``): the params' and the state's dtypes.
_WRAPPER_OUTCOME = re.compile(r"(ok|non-finite) params ([\w,]+) state ([\w,]+|none)")
#: A corner's one value (``optax_gate.kit.corners.outcome.describe``): a 0-d array or a Python number.
_VALUE_OUTCOME = re.compile(rf"(ok|non-finite) (?:(\w+)\[\]|python (\w+)) ({_NUMBER}|True|False|None)")
#: A corner's arrays (``describe``): their dtypes and shapes, and whether all are finite.
_ARRAYS_OUTCOME = re.compile(r"(ok|non-finite) ((?:\w+\[[\d,]*\],?)+|no leaves)( finite)?")


def _value_words(value: str) -> str | None:
    """A wrapper corner, a corner's one value or its arrays in words (``ok params bfloat16 state
    bfloat16,int32`` -> ``ok (params bfloat16; state leaves bfloat16 and int32)``, ``ok float32[] -0.92`` ->
    ``ok (a 0-d float32 array: -0.92)``, ``ok float32[2],float32[0] finite`` -> ``ok (float32 arrays of shapes
    (2,) and (0,), all finite)``); None for another value."""
    m = _WRAPPER_OUTCOME.fullmatch(value)
    if m:
        state = f"state leaves {and_join(m[3].split(','))}" if m[3] != "none" else "no state leaves"
        return f"{m[1]} (params {'/'.join(m[2].split(','))}; {state})"
    m = _VALUE_OUTCOME.fullmatch(value)
    if m:
        return f"{m[1]} ({f'a 0-d {m[2]} array' if m[2] else f'a Python {m[3]}'}: {m[4]})"
    m = _ARRAYS_OUTCOME.fullmatch(value)
    if m:
        if m[2] == "no leaves":
            return f"{m[1]} (no leaves)"
        arrays = re.findall(r"(\w+)\[([\d,]*)\]", m[2])
        by_dtype: dict[str, list[str]] = {}
        for dtype, shape in arrays:
            by_dtype.setdefault(dtype, []).append(f"({shape},)" if shape and "," not in shape else f"({shape})")
        said = and_join(
            [
                f"{dtype} {'arrays of shapes' if len(shapes) > 1 else 'array of shape'} {and_join(shapes)}"
                for dtype, shapes in by_dtype.items()
            ]
        )
        return f"{m[1]} ({said}{', all finite' if m[3] else ''})"
    return None


#: A threshold corner's recorded line (``optax_gate.kit.corners.thresholds``): ``ok value 5 grad 0,0``,
#: ``ok skip True norm_squared 25``, ``ok sum 3,4 clipped 0``.
_THRESHOLD_OUTCOME = re.compile(r"ok (?P<fields>(?:(?:value|grad|skip|norm_squared|sum|clipped) \S+ ?)+)")
#: Its fields in words.
_THRESHOLD_FIELDS = {
    "value": "value",
    "grad": "gradient",
    "skip": "should_skip",
    "norm_squared": "squared norm",
    "sum": "sum",
    "clipped": "clipped count",
}


def _threshold_words(value: str) -> str | None:
    """A threshold corner's line in words (``ok value 5 grad 0,0`` -> ``ok (value 5, gradient [0, 0])``); None for
    another value."""
    m = _THRESHOLD_OUTCOME.fullmatch(value)
    if not m:
        return None
    said = []
    for field, value in re.findall(r"(\w+) (\S+)", m["fields"]):
        elements = value.split(",")
        said.append(f"{_THRESHOLD_FIELDS[field]} {'[' + ', '.join(elements) + ']' if len(elements) > 1 else value}")
    return f"ok ({', '.join(said)})"


def long_dtype(short: str) -> str:
    """A dtype's name from its short form in a corner record (``bf16`` -> ``bfloat16``:
    ``optax_gate.kit.corners.transformations.SHORT_DTYPES``); any other text as it is."""
    from optax_gate.kit.corners.transformations import SHORT_DTYPES

    return next((name for name, s in SHORT_DTYPES.items() if s == short), short)


def outcome_words(value: str) -> str:
    """A corner's recorded shorthand in words. A transformation corner: ``ok
    u f32 |u| 0.03 u0 0.01 s f32x6,i32x1`` -> ``ok (updates float32, norm
    0.03, first entry 0.01; state: 6 float32 and 1 int32 leaves)``, with ``h bf16x5`` (the injected grid's
    hyperparameters) ``...; hyperparameters: 5 bfloat16 leaves)``; a schedule
    corner: ``ok py float64 0.04 0.1 0.28 4e-06 4e-06`` -> ``ok (a NumPy
    float64 scalar at steps 0, 1, 2, 20, 21: 0.04, 0.1, 0.28, 4e-06,
    4e-06)`` (the steps: ``corners.schedules.SCHEDULE_STEPS``); a sharded corner
    as :func:`_sharded_words` says; a wrapper corner, a value or arrays as :func:`_value_words` says; a
    threshold corner as :func:`_threshold_words` says. Any
    other value as it is."""
    m = TRANSFORMATION_OUTCOME.fullmatch(value)
    if not m:
        return (
            _schedule_words(value) or _sharded_words(value) or _value_words(value) or _threshold_words(value) or value
        )

    def dtypes(text: str) -> str:
        return "/".join(long_dtype(d) for d in text.split(","))

    def leaves(text: str) -> str:
        counts = [c.rpartition("x") for c in text.split(",")] if text != "none" else []
        return f"{and_join([f'{n} {long_dtype(d)}' for d, _, n in counts])} leaves" if counts else "no leaves"

    hyper = f"; hyperparameters: {leaves(m[6])}" if m[6] else ""
    return f"{m[1]} (updates {dtypes(m[2])}, norm {m[3]}, first entry {m[4]}; state: {leaves(m[5])}{hyper})"


#: The injected grid's hyperparameter forms in words (``optax_gate.kit.corners.injected.INJECT_CORNERS``).
_INJECT_FORMS = {
    "python": "Python numbers",
    "float32": "0-d float32 arrays",
    "bfloat16": "0-d bfloat16 arrays",
    "float16": "0-d float16 arrays",
    "weak": "weakly typed 0-d arrays",
    "numpy_float32": "NumPy float32 scalars",
}


def corner_gloss(name: str) -> str:
    """What a corner's shorthand name means, where a reader cannot guess it: an injected-grid corner
    (``optax_gate.kit.corners.injected.INJECT_CORNERS``) ``inject=bfloat16`` -> ``built through
    `optax.inject_hyperparams`, its float hyperparameters given as 0-d bfloat16 arrays, float32 params``;
    a threshold point (``optax_gate.kit.corners.thresholds.POINT_WORDS``) ``at`` -> ``the quantity exactly at
    its threshold``; "" for another corner (its name says it: ``empty_leaf``, ``eps=-1e-08``)."""
    from optax_gate.kit.corners.injected import INJECT_CORNERS
    from optax_gate.kit.corners.thresholds import POINT_WORDS

    if name in POINT_WORDS:
        return POINT_WORDS[name]
    if name not in INJECT_CORNERS:
        return ""
    form, params, hyperparam_dtype, jit = INJECT_CORNERS[name]
    words = [
        f"built through `optax.inject_hyperparams`, its float hyperparameters given as {_INJECT_FORMS.get(form, form)}",
        f"{params} params",
    ]
    if hyperparam_dtype:
        words.append(f"`hyperparam_dtype={hyperparam_dtype}`")
    if jit:
        words.append("the update jitted")
    return ", ".join(words)
