#!/usr/bin/env python3
"""Which contract classes reach each public API of Optax's live surface, for ``docs/api-reach.md``.

For each environment given (its interpreter), this collects the contracts there (``pytest --collect-only``,
``tests/contracts`` and ``tests/contracts/multidevice``), reads each contract's ``api`` (its ``contract``
marker), and groups the contract modules into the classes of :data:`CLASSES`; the public callables of the
configured surface (``optax_gate.kit.surface.enumeration``) are the rows, aliases of one object on one row.
Written as Markdown, one column per environment of the classes that reach the API there.

Usage (from the repository root):
    python tests/meta/api_reach.py --python BASELINE_PY --python CANDIDATE_PY [--out docs/api-reach.md]

Not part of the test suite: collecting takes about a minute per environment.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Contract module (its file name without ``test_`` and ``.py``) -> the class of inputs it crosses, as the
#: table names it. A module not listed is a guide's hand-written contracts (``guide``).
CLASSES = {
    "surface_transformations": "protocol",
    "surface_sweep": "sweep",
    "surface_dtypes": "dtypes",
    "surface_x64": "x64",
    "surface_loss_edges": "edges",
    "surface_corners_transformations": "forms",
    "surface_corners_ranges": "ranges",
    "surface_corners_injected": "injected",
    "surface_memory": "memory",
    "surface_corners_wrappers": "wrapper-corners",
    "surface_wrapped": "wrapped",
    "surface_corners_wrapped": "wrapped",
    "surface_corners_trees": "tree-corners",
    "tree_utils": "tree-values",
    "surface_corners_thresholds": "thresholds",
    "surface_corners_losses": "loss-corners",
    "surface_corners_schedules": "schedule-corners",
    "surface_corners_derivatives": "derivatives",
    "surface_sharded": "sharded",
    "skip_functions": "skip-functions",
    "microbatching": "microbatch",
    "microbatching_sharded": "microbatch",
}
#: The classes in the order of the table's legend, with what each crosses.
LEGEND = {
    "protocol": "init/update structure, ranks 0 to 5 and an empty leaf, None leaves, jit = eager, scan carry, no "
    "recompilation, extra arguments",
    "sweep": "every public callable called, its result snapshotted; removed or renamed names",
    "dtypes": "bfloat16, float16 and complex64 params",
    "x64": "float64 under jax_enable_x64",
    "edges": "edge inputs of losses and edge hyperparameters (0, NaN, inf)",
    "forms": (
        "each float hyperparameter as a 0-d float32/bfloat16/float16 array, a weakly typed one and a NumPy "
        "scalar, each flag "
        "flipped, each *_dtype option, value corners held 12 updates, 1-D/2-D/3-D convolution kernels (conv_kernels)"
    ),
    "ranges": "each numeric hyperparameter over its range (0, small, large, negative; 0/0.5/1 for a rate), ints too",
    "injected": "built through inject_hyperparams: hyperparameters as Python numbers, 0-d arrays of each float dtype, "
    "weak and NumPy scalars; bfloat16/float16 params, hyperparam_dtype, jitted",
    "memory": "the compiled update's argument, output and temporary bytes",
    "wrapper-corners": "wrappers over complex64 and mixed-dtype trees, inner dtype options, eager/jit/scan",
    "wrapped": "each transformation inside each wrapper",
    "tree-corners": "empty leaves, no leaves, ranks 0 to 5, int and mixed dtypes",
    "tree-values": "tree utilities' values against float64 references on corner and generated mixed-dtype PyTrees",
    "thresholds": "the quantity exactly at the threshold and one ULP either side: value, gradient, decision",
    "loss-corners": "losses on corner inputs",
    "schedule-corners": "schedules at corner steps and hyperparameters",
    "derivatives": "derivatives with respect to every differentiable argument",
    "sharded": "params sharded over an explicit mesh (8 CPU devices)",
    "skip-functions": "skip functions on each updates corner, alone and in MultiSteps",
    "microbatch": "microbatch in each calling form, an empty batch, a sharded batch",
    "guide": "a guide's hand-written contracts (golden values, trajectories, negative cases)",
}

_PLUGIN = """
import json, os

def pytest_collection_finish(session):
    rows = []
    for item in session.items:
        mark = item.get_closest_marker("contract")
        if mark is not None and mark.kwargs.get("api"):
            rows.append([item.nodeid, mark.kwargs["api"]])
    with open(os.environ["API_REACH_OUT"], "w") as f:
        json.dump(rows, f)
"""

_SURFACE = """
import json, sys
from optax_gate.kit.surface.enumeration import public_callables
import optax
groups = {}
for path, obj in public_callables().items():
    groups.setdefault(id(obj), []).append(path)
json.dump({"optax": optax.__version__, "groups": sorted(groups.values())}, sys.stdout)
"""


#: A contract API that is a dotted name (``optax.microbatching.microbatch``), not a scenario label (``nnx:Optimizer``).
_NAME = re.compile(r"[A-Za-z_][\w.]*")
#: Which of the names given on stdin resolve in the environment (an attribute path of an importable module).
_RESOLVES = """
import importlib, json, sys
out = []
for name in json.load(sys.stdin):
    parts = name.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            break
        out.append(name)
        break
json.dump(out, sys.stdout)
"""


def collect(python: str) -> tuple[str, list[list[str]], dict[str, str]]:
    """(optax version, the public callables grouped by object, contract api -> its row's first name) of one env."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "api_reach_plugin.py").write_text(_PLUGIN)
        out = Path(tmp) / "rows.json"
        env = {
            **os.environ,
            "PYTHONPATH": f"{tmp}:{ROOT / 'src'}",
            "API_REACH_OUT": str(out),
            "XLA_FLAGS": "--xla_force_host_platform_device_count=8",
        }
        rows: list[list[str]] = []
        for folder in ("tests/contracts", "tests/contracts/multidevice"):
            subprocess.run(
                [
                    python,
                    "-m",
                    "pytest",
                    folder,
                    "--collect-only",
                    "-q",
                    "-p",
                    "api_reach_plugin",
                    "-p",
                    "no:cacheprovider",
                ],
                cwd=ROOT,
                env=env,
                capture_output=True,
                check=True,
            )
            rows += json.loads(out.read_text())
        surface = json.loads(
            subprocess.run(
                [python, "-c", _SURFACE], cwd=ROOT, env=env, capture_output=True, text=True, check=True
            ).stdout
        )
        named = sorted({api for _, api in rows if _NAME.fullmatch(api)})
        resolves = set(
            json.loads(
                subprocess.run(
                    [python, "-c", _RESOLVES],
                    cwd=ROOT,
                    env=env,
                    input=json.dumps(named),
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
            )
        )
    reach: dict[str, set[str]] = {}
    for nodeid, api in rows:
        module = nodeid.split("::")[0].rsplit("/", 1)[-1].removeprefix("test_").removesuffix(".py")
        reach.setdefault(api, set()).add(CLASSES.get(module, "guide"))
    by_name = {name: group[0] for group in surface["groups"] for name in group}
    table: dict[str, set[str]] = {}
    for api, classes in reach.items():
        table.setdefault(by_name.get(api, api), set()).update(classes)
    # a class (MultiSteps) has a row of its own; a name that does not resolve here (a module new in a later
    # release, whose contracts are collected and skip) is not in this release
    here = {api for api in table if api in by_name or api in resolves or not _NAME.fullmatch(api)}
    groups = surface["groups"] + sorted([api] for api in here if api not in by_name)
    table = {api: classes for api, classes in table.items() if api in here}
    return surface["optax"], groups, {k: " ".join(c for c in LEGEND if c in v) for k, v in table.items()}


def render(envs: list[tuple[str, list[list[str]], dict[str, str]]]) -> str:
    """The Markdown page: the legend, then one row per API of any environment's surface."""
    names: dict[str, list[str]] = {}
    for _, groups, _ in envs:
        for group in groups:
            names.setdefault(group[0], group)
    versions = [v for v, _, _ in envs]
    lines = [
        "# Which contract classes reach each API",
        "",
        "Generated by `python tests/meta/api_reach.py --python BASELINE_PY --python CANDIDATE_PY` from the contracts",
        "collected in each environment (their `contract` marker's API) and Optax's live surface there",
        "(`optax_gate.kit.surface.enumeration`; aliases of one object on one row). A class is a family of inputs",
        "the contracts cross; an API no class reaches is called by no contract (`—`). Back to the",
        "[contracts catalogue](contracts.md). `tests/meta/kit/test_api_reach.py` checks the first column against the",
        "contracts collected in the tests' environment (the pinned baseline).",
        "",
        "| class | what it crosses |",
        "|---|---|",
        *[f"| `{k}` | {v} |" for k, v in LEGEND.items()],
        "",
        f"{len(names)} APIs (objects) in all; "
        + "; ".join(
            f"optax {v}: {sum(1 for g in groups if g[0] in reach)} of its {len(groups)} reached by a contract"
            for v, groups, reach in envs
        )
        + ".",
        "",
        "| API | " + " | ".join(f"optax {v}" for v in versions) + " |",
        "|---|" + "---|" * len(versions),
    ]
    for first in sorted(names):
        shown = ", ".join(f"`{n}`" for n in names[first][:3]) + (
            f" (+{len(names[first]) - 3})" if len(names[first]) > 3 else ""
        )
        cells = []
        for _, groups, reach in envs:
            # its row there: aliases are keyed by their first name
            found: list[str] | None = next((g for g in groups if first in g), None)
            cells.append("not in this release" if found is None else reach.get(found[0], "—"))
        lines.append(f"| {shown} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--python", action="append", required=True, help="an environment's interpreter (give the baseline first)"
    )
    parser.add_argument("--out", default=str(ROOT / "docs" / "api-reach.md"))
    args = parser.parse_args(argv)
    text = render([collect(p) for p in args.python])
    tmp = Path(args.out).with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
