"""A fake package index for the matrix's planner, and a small matrix report."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from optax_gate.gate.base import details
from optax_gate.gate.base.run_record import RunRecord
from optax_gate.gate.matrix import plan as matrix
from optax_gate.gate.run import runner
from tests.meta.support.records import record
from tests.meta.support.reports import REAL

INDEX = {
    "optax": ["0.2.5", "0.2.6", "0.2.7", "0.2.8", "0.2.9rc1"],
    "jax": ["0.11.2", "0.12.0", "0.12.0.1"],
    "jaxlib": ["0.11.2", "0.12.0.1"],
    "flax": ["0.12.12", "0.12.13"],
}


YANKED = {"flax-0.12.13"}


REQUIREMENTS_IN = "optax==0.2.6\njax==0.11.2\njaxlib==0.11.2\nflax==0.12.12\nnumpy\n"


def fake_fetch(url: Any) -> Any:
    project = url.rstrip("/").rsplit("/", 1)[-1]
    files = [
        {"filename": f"{project}-{v}-py3-none-any.whl", "yanked": f"{project}-{v}" in YANKED} for v in INDEX[project]
    ]
    return {"meta": {"api-version": "1.1"}, "versions": INDEX[project], "files": files}


def contract_run(outcomes: Mapping[str, str]) -> Callable[..., RunRecord]:
    """A stand-in for ``runner.run``: a side named in ``outcomes`` ran one contract, ``golden_a``, with that
    outcome (its record keeps the fields it was given); any other side could not import."""

    def run(
        python: Any,
        label: Any,
        out_dir: Any,
        env: Any,
        how: Any = None,
        on_progress: Any = None,
        probed: Any = None,
        **extra: Any,
    ) -> RunRecord:
        if label not in outcomes:
            return runner.not_verified(label, "import failed: AttributeError: jax_pmap_shmap_merge", **extra)
        return RunRecord.from_json({**record(golden_a=outcomes[label]), "label": label, **extra})

    return run


OTHER_APIS = [
    "optax.sgd",
    "optax.chain",
    "optax.masked",
    "optax.clip_by_global_norm",
    "optax.incremental_update",
    "optax.per_example_global_norm_clip",
    "nnx:Optimizer",
    "resume:sgd-momentum",
]


def real_matrix() -> Any:
    """A matrix around the real optax 0.2.8 rows (``data/report-optax-0.2.8.json``):
    optax-0.2.8 differs as it did, optax-0.2.7 did not import (as it did not),
    jax-0.12.0.1 passes; plus unchanged contracts of the other APIs."""

    def contract(r: Any, outcome: Any, detail: Any = "") -> Any:
        return {
            "api": r["api"],
            "guide": r["guide"],
            "kind": r["kind"],
            "outcome": outcome,
            "detail": detail,
            "defect": r.get("defect", ""),
        }

    rows = REAL["contracts"] + [
        {
            "id": f"tests/contracts/test_x.py::test_{api.split('.')[-1].replace(':', '_')}_{i}",
            "api": api,
            "guide": "g",
            "kind": "golden",
            "defect": "",
        }
        for api in OTHER_APIS
        for i in range(3)
    ]
    base = {
        "label": "baseline",
        "status": "ran",
        "reason": "",
        "versions": REAL["baseline"]["versions"],
        "contracts": {r["id"]: contract(r, "passed") for r in rows},
    }
    cand = {
        **base,
        "label": "optax-0.2.8",
        "versions": REAL["candidate"]["versions"],
        "contracts": {
            r["id"]: contract(
                r,
                r.get("candidate", "passed"),
                details.defect_parts(r)[2] if details.is_defect_fixed(r) else r.get("detail", ""),
            )
            for r in rows
        },
    }
    envs = [
        {"name": "optax-0.2.7", "specs": ["optax==0.2.7"], "why": "optax 0.2.7"},
        {"name": "optax-0.2.8", "specs": ["optax==0.2.8"], "why": "optax 0.2.8"},
        {"name": "jax-0.12.0.1", "specs": ["jax==0.12.0.1", "jaxlib==0.12.0.1"], "why": "jax 0.12.0.1"},
    ]
    runs = {
        "optax-0.2.7": record(
            "not-verified", "import failed: AttributeError: Unrecognized config option: jax_pmap_shmap_merge"
        ),
        "optax-0.2.8": cand,
        "jax-0.12.0.1": {**base, "label": "jax-0.12.0.1"},
    }
    return matrix.merge(
        RunRecord.from_json(base),
        {name: RunRecord.from_json(run) for name, run in runs.items()},
        {"environments": envs, "discovered": {"optax": ["0.2.7", "0.2.8"], "jax": ["0.12.0.1"], "flax": []}},
    )
