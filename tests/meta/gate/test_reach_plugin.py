"""The recorder of what each contract module executes (``optax_gate.kit.environment.reach``),
run in a real pytest process over real Optax: every function that starts is seen, at trace
time too, attributed to its module, and no module borrows another's cached work."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from optax_gate.kit.environment import reach_names

SHARED = """
import functools
import jax
import jax.numpy as jnp
import optax

AT_IMPORT = optax.scale(2.0)  # runs before any module: the session's


@functools.cache
def built():
    return optax.sgd(0.1)


@jax.jit
def norm(x):
    return optax.tree.norm(x)
"""

TESTS = {
    "test_a.py": "import jax.numpy as jnp\nfrom shared import built, norm\n\ndef test_a():\n    built()\n    "
    "norm(jnp.ones(3))\n",
    "test_b.py": "from shared import built\n\ndef test_b():\n    built()\n",
    "test_c.py": "import jax.numpy as jnp\nfrom shared import norm\n\ndef test_c():\n    norm(jnp.ones(3))\n",
    "test_d.py": "import optax\n\nLION = optax.lion(0.1)  # at collection: the module's\n\ndef test_d():\n    assert "
    "LION.init({}) is not None\n",
}


def _run(tmp_path: Path, *args: Any) -> Any:
    for name, text in {"shared.py": SHARED, **TESTS}.items():
        (tmp_path / name).write_text(text)
    out = tmp_path / "out" / "r.reach.json"
    env = {
        **os.environ,
        reach_names.VARIABLE: str(out),
        "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path]),
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "optax_gate.kit.environment.reach",
        *args,
        *sorted(TESTS),
    ]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return [json.loads(p.read_text()) for p in sorted(out.parent.glob("r.reach.json*"))]


def _one(records: Any) -> Any:
    session = set().union(*(r["session"] for r in records))
    modules: dict[str, set[str]] = {}
    for r in records:
        assert r["format"] == reach_names.FORMAT and r["packages"] == ["optax", "flax"]
        for m, found in r["modules"].items():
            modules.setdefault(m, set()).update(found)
    return session, modules


@pytest.mark.parametrize("xdist", [(), ("-p", "xdist.plugin", "-n", "2")], ids=["one-process", "two-workers"])
def test_each_module_records_what_it_executes_even_when_another_module_cached_it(tmp_path: Path, xdist: Any) -> None:
    session, modules = _one(_run(tmp_path, *xdist))
    sgd, norm, lion = (
        "optax/_src/alias.py::sgd",
        "optax/tree_utils/_tree_math.py::tree_norm",
        "optax/_src/alias.py::lion",
    )
    # the functools cache of built() and JAX's cache of the jitted norm are cleared between modules
    assert sgd in modules["test_a.py"] and sgd in modules["test_b.py"]
    assert norm in modules["test_a.py"] and norm in modules["test_c.py"], (
        "a traced function is seen in each module that traces it"
    )
    assert norm not in modules["test_b.py"] and sgd not in modules["test_c.py"]
    assert lion in modules["test_d.py"] and lion not in modules["test_a.py"], (
        "what a module runs at collection is its own"
    )
    # a nested function counts as its top-level function: lion's init_fn is scale_by_lion's
    assert "optax/_src/transform.py::scale_by_lion" in modules["test_d.py"]
    assert not any("<locals>" in f for found in modules.values() for f in found)
    assert "optax/_src/transform.py::scale" in session, "what runs at import is the session's"


def test_without_the_variable_the_plugin_records_nothing(tmp_path: Path) -> None:
    for name, text in {"shared.py": SHARED, **TESTS}.items():
        (tmp_path / name).write_text(text)
    env = {k: v for k, v in os.environ.items() if k != reach_names.VARIABLE}
    env |= {"PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path]), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "optax_gate.kit.environment.reach",
        "test_b.py",
    ]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout
    assert not list(tmp_path.rglob("*.reach.json*"))


@pytest.mark.parametrize(
    "qualname, unit",
    [
        ("lion", "lion"),
        ("scale_by_lion.<locals>.init_fn", "scale_by_lion"),
        ("A.f.<locals>.g.<locals>.<lambda>", "A.f"),
    ],
)
def test_a_code_object_counts_as_the_function_it_is_written_in(qualname: Any, unit: Any) -> None:
    assert reach_names.unit_of(qualname) == unit


def test_the_speed_worker_records_what_its_timed_steps_execute(tmp_path: Path) -> None:
    """``python -m optax_gate.kit.environment.speed --serve`` with ``$OPTAX_GATE_REACH`` set writes, before it
    says ready, the functions its set-ups execute (``adamw`` in MultiSteps, ``sgd`` through ``nnx.Optimizer``),
    and none they do not (``lion``); without the variable it writes nothing."""
    target = tmp_path / "speed.reach.json"
    env = {**os.environ, reach_names.VARIABLE: str(target)}
    proc = subprocess.run(
        [sys.executable, "-m", "optax_gate.kit.environment.speed", "--serve"],
        input="quit\n",
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert '@speed {"ready"' in proc.stdout
    [written] = list(tmp_path.glob("speed.reach.json.*"))
    record = json.loads(written.read_text())
    assert record["modules"] == {}
    found = set(record["session"])
    assert {
        "optax/_src/alias.py::adamw",
        "optax/_src/alias.py::sgd",
        "optax/transforms/_accumulation.py::MultiSteps.update",
    } <= found
    assert any(f.startswith("flax/nnx/training/optimizer.py::Optimizer.update") for f in found)
    assert "optax/_src/alias.py::lion" not in found
    quiet = subprocess.run(
        [sys.executable, "-m", "optax_gate.kit.environment.speed", "--serve"],
        input="quit\n",
        env={k: v for k, v in env.items() if k != reach_names.VARIABLE},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert quiet.returncode == 0 and len(list(tmp_path.glob("speed.reach.json.*"))) == 1


# ------------------------------------------------------------------ per API

PER_API = """
import jax
import jax.numpy as jnp
import optax
import pytest


@jax.jit
def norm(x):  # one trace serves every API that calls it with the same shapes
    return optax.tree.norm(x)


@pytest.fixture(scope="module")
def shared():  # set up once, then serves every API after it: the module's own
    return optax.sgd(0.1)


APIS = [pytest.param(api, marks=pytest.mark.contract(api=api), id=api) for api in ("optax.adam", "optax.lion")]


@pytest.mark.parametrize("api", APIS)
def test_first(api):
    norm(jnp.ones(3))


@pytest.mark.parametrize("api", APIS)
def test_second(api, shared):
    getattr(optax, api.split(".")[1])(0.1)


def test_without_an_api():
    optax.scale(2.0)
"""


def _per_api(tmp_path: Path, *args: Any, asked: Any = True) -> Any:
    (tmp_path / "test_apis.py").write_text(PER_API)
    out = tmp_path / "out" / "r.reach.json"
    env = {
        **os.environ,
        reach_names.VARIABLE: str(out),
        "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path]),
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }
    if asked:
        env[reach_names.PER_API_VARIABLE] = "1"
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "optax_gate.kit.environment.reach"]
    proc = subprocess.run(
        [*cmd, *args, "-v", "-v", "-W", "ignore::pytest.PytestUnknownMarkWarning", "test_apis.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [record] = [json.loads(p.read_text()) for p in out.parent.glob("r.reach.json*")]
    return record, proc.stdout


def test_each_api_of_a_module_records_what_it_executes_even_when_another_api_traced_it_first(tmp_path: Path) -> None:
    record, stdout = _per_api(tmp_path)
    apis, common = record["apis"]["test_apis.py"], set(record["common"]["test_apis.py"])
    norm, sgd, adam, lion = (
        "optax/tree_utils/_tree_math.py::tree_norm",
        "optax/_src/alias.py::sgd",
        "optax/_src/alias.py::adam",
        "optax/_src/alias.py::lion",
    )
    # the jitted norm's trace, made under adam, is evicted before lion's tests: lion traces it again
    assert norm in apis["optax.adam"] and norm in apis["optax.lion"]
    assert adam in apis["optax.adam"] and adam not in apis["optax.lion"] and lion in apis["optax.lion"]
    # the module-scoped fixture and the contract without an API: the module's own, in no API's record
    assert sgd in common and "optax/_src/transform.py::scale" in common
    assert sgd not in apis["optax.adam"] and sgd not in apis["optax.lion"]
    assert set(record["modules"]["test_apis.py"]) == common | {f for found in apis.values() for f in found}
    ran = [line.split(" ")[0] for line in stdout.splitlines() if line.startswith("test_apis.py::")]
    assert ran == [
        "test_apis.py::test_first[optax.adam]",
        "test_apis.py::test_second[optax.adam]",
        "test_apis.py::test_first[optax.lion]",
        "test_apis.py::test_second[optax.lion]",
        "test_apis.py::test_without_an_api",
    ], "each API's contracts run one after the other"


def test_without_being_asked_the_recorder_keeps_one_record_per_module(tmp_path: Path) -> None:
    record, stdout = _per_api(tmp_path, asked=False)
    assert "apis" not in record and record["per_api"] == f"not asked for (${reach_names.PER_API_VARIABLE})"
    ran = [line.split(" ")[0] for line in stdout.splitlines() if line.startswith("test_apis.py::")]
    assert ran[1] == "test_apis.py::test_first[optax.lion]", "the collected order"
