"""Running the gate's command line in a subprocess, a fake gate that stands in for pytest, and reading what it wrote."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from optax_gate.gate.install import environments
from optax_gate.gate.reuse import results_cache
from optax_gate.gate.run import evidence
from tests.meta.support.paths import LOCK, ROOT


def write_run(path: Any, rec: Any) -> Any:
    path.write_text(json.dumps(rec))
    return str(path)


def gate_cli(*args: Any, out: Any, env: Any = None, timeout: Any = 60) -> Any:
    """``python -m optax_gate gate ARGS --out OUT`` from the project root: (exit status, stdout, stderr, seconds)."""
    start = time.monotonic()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "optax_gate",
            "gate",
            *args,
            "--out",
            str(out),
            "--cache-dir",
            str(Path(out).parent / "cache"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    return proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start


def latest_report(out: Any) -> Any:
    """The report of the newest run that judged both sides (``report.json``)."""
    return json.loads((out / "report.json").read_text())


def not_judged_report(out: Any) -> Any:
    """The report of the newest run that judged nothing: refused or stopped before both sides ran
    (``not-judged.json``)."""
    return json.loads((out / "not-judged.json").read_text())


def newest_run(out: Any) -> Path:
    """The newest complete run folder, judged or not."""
    return max(
        ((out / name).resolve() for name in (evidence.LATEST, evidence.NOT_JUDGED_LINK) if (out / name).exists()),
        key=lambda p: p.name,
    )


def uv_env() -> dict[str, str] | None:
    """Extra environment for a test that needs uv: none (``{}``) when the gate
    finds uv (``environments.uv``: on PATH, or the one ``./noxw`` installed into
    ``.noxw/``), the same way the gate's own builds find it, in this process and
    in the gate's; None when it finds none (the test is skipped)."""
    try:
        environments.uv()
    except environments.EnvironmentFailure:
        return None
    return {}


# --- a fake environment: the gate end to end without building anything -----------------------------
FAKE_PYTHON = '''#!{python}
"""Stands in for an environment's interpreter: probe, resume writer, slow pytest."""
import json, os, sys, time
args = sys.argv[1:]
if args[:2] == ["-m", "optax_gate.kit.environment.probe"]:
    print(json.dumps({{"versions": {{"python": "3.12", "optax": "0.2.6"}}, "import_error": None}}))
elif args[:2] == ["-m", "optax_gate.kit.training.resume"]:
    os.makedirs(args[3], exist_ok=True)
    time.sleep({pause})
    open(os.path.join(args[3], "meta.json"), "w").write("{{}}")
else:
    log = next(a.split("=", 1)[1] for a in args if a.startswith("--report-log="))
    open(os.path.join(os.path.dirname(sys.argv[0]), "pytest-runs"), "a").write(os.path.basename(log) + "\\n")
    junit = next(a.split("=", 1)[1] for a in args if a.startswith("--junitxml="))
    valued = ("-c", "--rootdir", "-p", "-n", "--dist", "--deselect")  # the paths given: {tests} contracts in each module found there
    modules = []
    for i, a in enumerate(args[2:], 2):
        if a.startswith("-") or args[i - 1] in valued:
            continue
        if os.path.isabs(a):  # a team folder: pytest names its modules by their path inside it
            modules += sorted(os.path.relpath(os.path.join(d, f), a) for d, _, fs in os.walk(a) for f in fs
                              if f.startswith("test_") and f.endswith(".py"))
        elif os.path.isdir(a):
            modules += sorted(os.path.join(d, f) for d, _, fs in os.walk(a) for f in fs if f.startswith("test_")
                              and f.endswith(".py") and (a.endswith("multidevice") or "multidevice" not in d))
        else:
            modules.append(a)
    deselected = {{args[i + 1] for i, a in enumerate(args) if a == "--deselect"}}
    if "tests/contracts/test_nnx.py" in modules:  # collecting it imports flax, which warns (as the real module does)
        open(os.environ["OPTAX_GATE_WARNINGS"], "w").write(json.dumps([{{"when": "collect", "category": "DeprecationWarning",
            "message": "Traversal will be deprecated", "module": "flax.traverse_util", "nodeid": ""}}]))
    modules = [m for m in modules if m not in deselected]
    n = {tests}
    # a module named for adam pins two APIs, adam (even tests) and sgd (odd ones); every other module one, optax.x
    api_of = lambda m, i: ("optax.adam" if i % 2 == 0 else "optax.sgd") if "test_adam" in m else "optax.x"
    select = json.load(open(os.environ["OPTAX_GATE_SELECT_APIS"])) if os.environ.get("OPTAX_GATE_SELECT_APIS") else {{}}
    run = {{m: [i for i in range(n) if m not in select or api_of(m, i) in select[m]] for m in modules}}
    with open(os.path.join(os.path.dirname(sys.argv[0]), "pytest-modules"), "a") as ran:
        ran.write(json.dumps([os.path.basename(log), modules]) + "\\n")
    with open(os.path.join(os.path.dirname(sys.argv[0]), "pytest-apis"), "a") as ran:  # per module run in part: tests run
        ran.write(json.dumps({{m: len(run[m]) for m in select if m in run}}) + "\\n")
    open(os.environ["OPTAX_GATE_PROGRESS"], "w").write(str(sum(map(len, run.values()))))
    while os.environ.get("OPTAX_GATE_GO") and not os.path.exists(os.environ["OPTAX_GATE_GO"]):  # as the plugin does
        time.sleep(0.01)
    with open(log, "w") as f:
        for m in modules:
            f.write(json.dumps({{"$report_type": "CollectReport", "nodeid": m, "outcome": "passed",
                                 "result": [{{"nodeid": f"{{m}}::test_{{i}}", "type": "Function"}} for i in range(n)]}}) + "\\n")
        for i in range(n):
            time.sleep({pause})
            for m in modules:
                if i not in run[m]:
                    continue
                props = [["contract_api", api_of(m, i)], ["contract_guide", "g"], ["contract_kind", "golden"]]
                for when in ("setup", "call", "teardown"):
                    f.write(json.dumps({{"$report_type": "TestReport", "nodeid": f"{{m}}::test_{{i}}",
                                         "when": when, "outcome": "passed", "user_properties": props}}) + "\\n")
            f.flush()
        f.write(json.dumps({{"$report_type": "SessionFinish", "exitstatus": 0 if modules else 5}}) + "\\n")
    open(junit, "w").write("<testsuites/>")
    if os.environ.get("OPTAX_GATE_REACH"):  # what each module executes (kit.environment.reach): a module named for adam runs adam
        # (per API: adam runs adam and its sgd contracts sgd; the other modules' one API runs sgd)
        fn = lambda api: ["optax/alias.py::adam"] if api == "optax.adam" else ["optax/alias.py::sgd"]
        apis = {{m: {{api_of(m, i): fn(api_of(m, i)) for i in run[m]}} for m in modules}}
        reach = {{m: sorted({{f for found in apis[m].values() for f in found}}) for m in modules}}
        open(os.environ["OPTAX_GATE_REACH"], "w").write(json.dumps({{"format": "reach-v1", "session": ["optax/__init__.py::<module>"],
            "modules": reach, "common": {{m: [] for m in modules}}, "apis": apis}}))
    sys.exit(0 if modules else 5)
'''  # noqa: E501 (a script or page written out as it runs)


DRIVER = """
import sys
from pathlib import Path
from optax_gate.gate.install import environments
from optax_gate.gate import cli, cli_parser
environments.ensure = lambda *a, **k: Path({fake!r})
cli.entry(["gate", "--candidate-lock", {lock!r}, "--out", {out!r}, "--keep", "3", "--cache-dir", {cache!r}, *{extra!r}])
"""


#: What the fake gate's contract runs give: 8 contracts in each contract module of this project.
FAKE_CONTRACTS = 8 * len(results_cache.units(ROOT))


FAKE_ID = f"{results_cache.units(ROOT)[0].name}::test_7"


def fake_gate(tmp_path: Path, pause: Any = 0.05, tests: Any = 8, extra: Any = (), lock: Any = LOCK) -> Any:
    """The gate's command line with every environment replaced by a fake
    interpreter (its own cache folder: fake results never reach the real cache)."""
    fake = tmp_path / "fake-python"
    fake.write_text(FAKE_PYTHON.format(python=sys.executable, pause=pause, tests=tests))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    driver = DRIVER.format(
        fake=str(fake), lock=str(lock), out=str(tmp_path / "out"), cache=str(tmp_path / "cache"), extra=list(extra)
    )
    return [sys.executable, "-c", driver]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
