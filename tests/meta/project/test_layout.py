"""The package layout is the architecture: the gate half never imports the
libraries under test, and every contract module has its mutants family."""

import subprocess
import sys
from pathlib import Path
from typing import Any

from optax_gate import mutants
from optax_gate.gate.run import devices

ROOT = Path(__file__).resolve().parents[3]
GATE = ROOT / "src" / "optax_gate" / "gate"
UNDER_TEST = ("jax", "jaxlib", "optax", "flax", "orbax", "numpy")


def test_importing_every_gate_module_imports_no_library_under_test() -> None:
    """A gate that imports JAX could not judge a candidate whose JAX does not
    import; nor should the tool environment need JAX at all."""
    modules = [
        ".".join(("optax_gate", "gate", *p.relative_to(GATE).with_suffix("").parts)).removesuffix(".__init__")
        for p in sorted(GATE.rglob("*.py"))
    ]
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in modules)
        + f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({UNDER_TEST!r})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", f"the gate half imports {out.strip()} (modules: {modules})"


def test_the_mutants_entry_point_starts_without_the_report_tools() -> None:
    """The mutants session's environment holds the baseline lock and this project only, not the report
    tools the tests session adds (griffe, jsonschema, matplotlib): its entry point, ``--contracts``
    parsing included, must start without them (importing the --usage checks, for example, would crash
    it)."""
    code = (
        "import runpy, sys\n"
        "for name in ('griffe', 'jsonschema', 'matplotlib'):\n"
        "    sys.modules[name] = None  # import of it raises ImportError\n"
        "sys.argv = ['optax_gate.mutants', '--help']\n"
        "runpy.run_module('optax_gate.mutants', run_name='__main__')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0 and "--contracts" in done.stdout, done.stderr[-2000:]


def test_every_contract_module_has_a_mutant_family_and_back() -> None:
    """Built-in contract modules (``tests/contracts/test_*.py`` and
    ``tests/contracts/multidevice/test_*.py``) have a mirroring
    ``src/optax_gate/mutants/families/<name>.py``; modules in sub-folders (a team's own)
    have a ``*_mutants.py`` beside them; no family names a missing module."""
    mutants.load(ROOT)
    contracts = ROOT / "tests" / "contracts"
    contract_modules = {str(p.relative_to(ROOT)) for p in contracts.rglob("test_*.py")}
    families = set(mutants.AREAS.values())
    assert families <= contract_modules, f"mutant families name missing modules: {sorted(families - contract_modules)}"
    assert contract_modules <= families, f"contract modules without mutants: {sorted(contract_modules - families)}"
    for module in families:
        path = ROOT / module
        if path.parent == contracts or devices.is_multidevice(module):  # built-in, mirrored in the package
            stem = path.stem.removeprefix("test_")
            assert (ROOT / "src" / "optax_gate" / "mutants" / "families" / f"{stem}.py").exists(), (
                f"no mutants module mirrors {module}"
            )


def _global_names(code: Any) -> Any:
    """Names a function (and the functions nested in it) may load as globals:
    its names less its local variables (a local ``from ... import`` binds one)."""
    import types

    names, local = set(code.co_names), set(code.co_varnames) | set(code.co_cellvars) | set(code.co_freevars)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names - local


def test_every_mutant_names_only_globals_its_module_defines() -> None:
    """A mutant module split from another must import every helper it uses
    (``upcast``, ``perturbed_under_jit``...): checked here without running
    JAX, where the mutants session would find it only after minutes."""
    import builtins
    import sys

    for m in mutants.load(ROOT).values():
        module = sys.modules[m.patch.__module__]
        code = m.patch.__code__
        defined = set(vars(module)) | set(vars(builtins))
        # attribute names also appear in co_names; only bare names that look like our helpers matter
        missing = {n for n in _global_names(code) - defined if n in vars(sys.modules["optax_gate.mutants.patches"])}
        assert not missing, f"mutant {m.name} ({module.__name__}) uses {sorted(missing)} without importing them"


def test_every_row_of_a_mutant_shape_table_is_registered_by_the_module_its_comment_names() -> None:
    """A row of ``mutants/shapes.py``'s tables is a mutant only once a family registers it (``jit_differs``,
    ``jit_differs_value``): a row without its line would be a shape no contract is checked against. Each row's
    comment names the family module that registers it; that module's contracts are the ones it runs against."""
    import re

    from optax_gate.mutants import shapes

    registry = mutants.load(ROOT)
    source = (ROOT / "src" / "optax_gate" / "mutants" / "shapes.py").read_text(encoding="utf-8")
    rows = [*shapes.JIT_DIFFERS, *shapes.VALUE_JIT_DIFFERS]
    assert len(rows) == len(set(rows)) and rows
    for name in rows:
        assert name in registry, f"{name}: in a table of shapes.py, registered by no family"
        comment = re.search(rf'"{re.escape(name)}": .*#\s*(\w+)\.py$', source, re.M)
        assert comment, f"{name}: its row names no module"
        assert mutants.AREAS[registry[name].area] == f"tests/contracts/test_{comment[1]}.py", (
            name,
            registry[name].area,
        )
