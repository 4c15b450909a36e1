"""Registry of the guides the contracts encode, and of the contracted APIs.

Every contract test carries ``@pytest.mark.contract(api=..., guide=...)`` with
a value from this module, so the report can say, contract by contract, which
API and which guide it pins. The guide texts live outside the project (they are
the source documents, not run-time inputs); ``GUIDES`` records their file names
and what each one pins.
"""

from __future__ import annotations

# The three guides whose text we have (file names as handed to the project).
PER_EXAMPLE_CLIP = "000_1767c3f5f037268a.txt"
SGD_STEP = "001_3de679c23eb4e8d7.txt"
POLYAK = "004_ac3a64a51466adca.txt"
# Two guides known only from their one-line summaries under "Read also".
WEIGHT_DECAY_MASK = "weight-decay-mask (summary: 001_3de679c23eb4e8d7.txt:67-68)"
MULTI_STEPS = "multi-steps (summary: 001_3de679c23eb4e8d7.txt:71-72)"

# The guides' shared sections (the same text in all three guides we have).
NNX_TRANSFER = "shared: transfer into a real model (001_3de679c23eb4e8d7.txt:29-37)"

GUIDES: dict[str, str] = {
    PER_EXAMPLE_CLIP: "optax.per_example_global_norm_clip: clip each example's gradient, return the sum and the count",
    SGD_STEP: "one SGD step: optax.sgd, init, update, optax.apply_updates",
    POLYAK: "Polyak averaging: optax.incremental_update",
    WEIGHT_DECAY_MASK: "the mask of add_decayed_weights decays the kernel and leaves the bias unchanged",
    MULTI_STEPS: "MultiSteps averages two micro-batch gradients and updates SGD only on every second call",
    NNX_TRANSFER: "Flax NNX: batch contract, named RNG streams, train/eval mode, Param vs statistics vs "
    "optimizer state",
}

#: A reader's name of each guide file (the file names are the project's handles, not titles): the
#: report's guide column says ``SGD step guide (001_3de679c23eb4e8d7.txt)``, see :func:`shown`.
TITLES: dict[str, str] = {
    PER_EXAMPLE_CLIP: "per-example clipping guide",
    SGD_STEP: "SGD step guide",
    POLYAK: "Polyak averaging guide",
}


def shown(label: str) -> str:
    """A contract's source label as a report shows it: a guide file with its
    title (``SGD step guide (001_3de679c23eb4e8d7.txt)``), every other label
    (a guide known from a summary, ``paper: ...``) as it is."""
    return f"{TITLES[label]} ({label})" if label in TITLES else label


#: Prefixes of a source label that is not one of the guides above: a contract
#: written from a paper, a formula or the library's documentation (the suite's
#: own contracts beyond the guides, and a team's own contracts) names its
#: source as ``"paper: Kingma & Ba 2015, Algorithm 1"``, ``"formula: ..."``,
#: ``"docs: ..."`` or ``"team: <file of theirs>"`` without editing this module.
SOURCE_PREFIXES = ("paper: ", "formula: ", "docs: ", "team: ")


def is_source(label: str) -> bool:
    """True when ``label`` may be the ``guide=`` of a contract: a guide of
    :data:`GUIDES`, or a free label with one of :data:`SOURCE_PREFIXES` and
    non-empty text after it."""
    if label in GUIDES:
        return True
    return isinstance(label, str) and any(label.startswith(p) and label[len(p) :].strip() for p in SOURCE_PREFIXES)


def paper(citation: str) -> str:
    """The source label of a contract written from a paper, e.g.
    ``paper("Kingma & Ba 2015, Algorithm 1")``."""
    return f"paper: {citation}"


#: Kinds of contract; each contract test carries exactly one as a marker.
#: ``snapshot`` values are recorded from the pinned baseline and measure drift:
#: a candidate that differs from them is reported as ``changed``, not ``broken``.
KINDS: dict[str, str] = {
    "golden": "a numeric example of a guide, compared with the guide's own number",
    "negative": "a negative case of a guide, pinned to the baseline's behaviour",
    "property": "a hypothesis property against an independent float64 NumPy reference",
    "acceptance": "the guides' shared acceptance criteria: shapes, dtypes, finiteness",
    "snapshot": "a value recorded from the pinned baseline (drift, not correctness)",
}
