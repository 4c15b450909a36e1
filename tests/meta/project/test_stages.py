"""The gate half is laid out by stage (``docs/architecture.md``):
a module imports only from its own stage and the stages before it, never from
the flows on top, and ``docs/architecture.md`` lists every module under its
stage, so the tree and its map cannot drift apart."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
GATE = ROOT / "src" / "optax_gate" / "gate"
#: The stages in the order a gate runs; each a subpackage of ``gate/``. The modules at the
#: top of ``gate/`` are the flows, which may import every stage and which no stage imports.
STAGES = (
    "base",
    "inputs",
    "install",
    "run",
    "reuse",
    "judge",
    "surface",
    "team_code",
    "diffs",
    "team_run",
    "speed",
    "upstream",
    "matrix",
    "report",
    "bisect",
)
FLOWS = "flows"


def _stage(module: Path) -> str:
    """The stage of a module file under ``gate/``."""
    parts = module.relative_to(GATE).parts
    return parts[0] if len(parts) > 1 else FLOWS


def _imported(tree: ast.AST, under: Path) -> list[tuple[int, Path]]:
    """(line, file) of every gate module ``tree`` imports, at any depth (a
    function's own import included): ``from optax_gate.gate.run import runner``
    is ``run/runner.py``, ``from optax_gate.gate.run.runner import X`` too."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{under.relative_to(ROOT)}:{node.lineno}: a relative import; name the stage in full")
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("optax_gate.gate"):
            folder = GATE.joinpath(*(node.module or "").split(".")[2:])
            for alias in node.names:
                target = folder / f"{alias.name}.py"
                out.append((node.lineno, target if target.is_file() else folder.with_suffix(".py")))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("optax_gate.gate."):
                    out.append((node.lineno, GATE.joinpath(*alias.name.split(".")[2:]).with_suffix(".py")))
    return out


def upward_imports(gate: Path = GATE) -> list[str]:
    """Each import of a later stage (or of a flow) by an earlier one, as
    ``FILE:LINE: STAGE imports LATER_STAGE (MODULE)``."""
    order = {s: i for i, s in enumerate((*STAGES, FLOWS))}
    found = []
    for path in sorted(gate.rglob("*.py")):
        mine = _stage(path)
        for line, target in _imported(ast.parse(path.read_text(encoding="utf-8")), path):
            theirs = _stage(target) if target.is_relative_to(gate) else FLOWS
            if order[theirs] > order[mine]:
                found.append(f"{path.relative_to(gate)}:{line}: {mine} imports {theirs} ({target.relative_to(gate)})")
    return found


def test_no_module_imports_a_later_stage() -> None:
    """``run`` may use ``install`` but ``install`` never ``run``; a report
    renders what the judging found and the judging never imports a renderer."""
    assert upward_imports() == []


def test_every_subpackage_is_a_stage_with_its_rule() -> None:
    """Every folder of ``gate/`` is a listed stage, and its ``__init__``
    docstring says what it owns and what it may import."""
    folders = sorted(p.name for p in GATE.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert folders == sorted(STAGES)
    for stage in STAGES:
        doc = ast.get_docstring(ast.parse((GATE / stage / "__init__.py").read_text(encoding="utf-8"))) or ""
        assert "May import" in doc, f"gate/{stage}/__init__.py does not say what it may import"


def _architecture_sections() -> dict[str, str]:
    """docs/architecture.md's text under each ``### `gate/STAGE/` `` heading
    (``gate/`` itself for the flows)."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    parts = re.split(r"^### `(gate/(?:\w+/)?)`.*$", text, flags=re.M)
    return {parts[i]: parts[i + 1].split("\n## ")[0] for i in range(1, len(parts) - 1, 2)}


def test_architecture_lists_every_module_under_its_stage() -> None:
    """A module missing from its stage's section of docs/architecture.md (or
    listed under another stage) fails here."""
    sections = _architecture_sections()
    missing = []
    for path in sorted(GATE.rglob("*.py")):
        if path.name == "__init__.py":
            continue
        stage = _stage(path)
        heading = "gate/" if stage == FLOWS else f"gate/{stage}/"
        if not re.search(rf"`{path.stem}`", sections.get(heading, "")):
            missing.append(f"{path.relative_to(GATE)} (under {heading})")
    assert not missing, f"docs/architecture.md does not list: {missing}"


def test_only_the_command_line_sees_the_parsed_namespace() -> None:
    """The command line is parsed once into frozen options
    (``gate/inputs/options.py``, built by ``cli.options`` from what ``cli_parser`` parsed, with the option
    groups of ``cli_options``); every other
    module receives the part it uses and never imports argparse."""
    seen = []
    for path in sorted(GATE.rglob("*.py")):
        if path in (GATE / "cli.py", GATE / "cli_parser.py", GATE / "cli_options.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(name == "argparse" or name.startswith("argparse.") for name in names):
                seen.append(f"{path.relative_to(GATE)}:{getattr(node, 'lineno', 0)}")
    assert seen == [], f"argparse imported outside cli.py, cli_parser.py and cli_options.py: {seen}"


#: The longest parameter list a function of the gate may have, besides its options.
MAX_PARAMETERS = 5


def long_parameter_lists(gate: Path = GATE) -> list[str]:
    """Each function with more than :data:`MAX_PARAMETERS` parameters besides
    ``self``/``cls`` and its options (a parameter annotated with a class of
    ``gate/inputs/options.py`` or another ``...Options``), as ``FILE:LINE NAME (N)``."""
    found = []
    for path in sorted(gate.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            given = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
            plain = [
                a
                for a in given
                if a.arg not in ("self", "cls")
                and "Options" not in (ast.unparse(a.annotation) if a.annotation is not None else "")
            ]
            if len(plain) > MAX_PARAMETERS:
                found.append(f"{path.relative_to(gate)}:{node.lineno} {node.name} ({len(plain)})")
    return found


def test_no_function_takes_more_than_five_parameters_besides_its_options() -> None:
    """What travels from the command line travels typed, as options; what
    belongs together travels as one value (``pytest_process.PytestCall``,
    ``attribution.Known``), not as a long parameter list."""
    assert long_parameter_lists() == []


PACKAGE = ROOT / "src" / "optax_gate"


def _module_name(path: Path, package: Path) -> str:
    """``gate/diffs/unseen.py`` -> ``optax_gate.gate.diffs.unseen`` (a package's ``__init__`` is the package)."""
    parts = (package.name, *path.relative_to(package).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph(package: Path) -> tuple[dict[str, set[str]], list[str]]:
    """Every module of ``package`` -> the modules of ``package`` it imports (at any
    depth: a function's own import too), and each use of another module's private
    name (``from M import _x`` or ``m._x`` where ``m`` is an imported module), as
    ``FILE:LINE: NAME``."""
    modules = {_module_name(p, package): p for p in sorted(package.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    private = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        edges, aliases = graph.setdefault(name, set()), {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == package.name:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    if full in modules:  # ``from package.stage import module``
                        edges.add(full)
                        aliases[alias.asname or alias.name] = full
                    else:
                        edges.add(node.module or "")
                        if alias.name.startswith("_") and not alias.name.startswith("__"):
                            private.append(f"{path.relative_to(package)}:{node.lineno}: {node.module}.{alias.name}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == package.name:
                        edges.add(alias.name)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                private.append(f"{path.relative_to(package)}:{node.lineno}: {aliases[node.value.id]}.{node.attr}")
        edges.discard(name)
    return {k: {m for m in v if m in modules} for k, v in graph.items()}, private


def import_cycles(package: Path = PACKAGE) -> list[list[str]]:
    """Each set of modules of ``package`` that import each other in a circle
    (a strongly connected component of more than one module, Tarjan's
    algorithm), function-level imports included: a circle hidden in a
    function still ties the modules together."""
    graph, _ = _import_graph(package)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def private_names_across_modules(package: Path = PACKAGE) -> list[str]:
    """Each import (or attribute use) of another module's private name: what
    one module shares with another is public, named so."""
    return _import_graph(package)[1]


def test_no_import_circle_anywhere() -> None:
    """No two modules import each other, directly or round a circle, in any
    stage, in ``kit/``, ``mutants/`` or ``recorder/``: a module can be read
    (and moved) after the ones it uses."""
    assert import_cycles() == []


def test_no_module_uses_another_modules_private_name() -> None:
    assert private_names_across_modules() == []


def test_a_planted_circle_and_a_private_name_are_seen(tmp_path: Path) -> None:
    """The two checks above, on a small package with a circle hidden in a
    function's import and a private helper used across modules."""
    pkg = tmp_path / "planted"
    (pkg / "stage").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "stage" / "__init__.py").write_text("")
    (pkg / "stage" / "a.py").write_text("from planted.stage import b\n\ndef f():\n    return b.g()\n")
    (pkg / "stage" / "b.py").write_text("def g():\n    from planted.stage import c\n    return c._helper()\n")
    (pkg / "stage" / "c.py").write_text("from planted.stage.a import f\n\ndef _helper():\n    return 1\n")
    (pkg / "d.py").write_text("from planted.stage.c import _helper\n")
    assert import_cycles(pkg) == [["planted.stage.a", "planted.stage.b", "planted.stage.c"]]
    assert private_names_across_modules(pkg) == [
        "d.py:1: planted.stage.c._helper",
        "stage/b.py:3: planted.stage.c._helper",
    ]


def test_architecture_lists_every_kit_module() -> None:
    """``docs/architecture.md``'s "The kit by purpose" names every module of
    ``kit/``, and of each of its subpackages on the subpackage's line (one added
    without a mention there fails here)."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## The kit by purpose", 1)[1].split("\n## ", 1)[0]
    kit = PACKAGE / "kit"
    entries = section.split("\n- ")
    packages = sorted(p.parent for p in kit.glob("*/__init__.py"))
    # a module of kit/ itself: named on a line of its own, not only among a subpackage's modules (`trees`, `probe`)
    top = "\n".join(e for e in entries if not any(e.startswith(f"`{p.name}/`") for p in packages))
    missing = [p.name for p in sorted(kit.glob("*.py")) if p.name != "__init__.py" and f"`{p.stem}`" not in top]
    # a subpackage: its line names it (`corners/`) and each of its modules
    for package in packages:
        line = next((ln for ln in entries if ln.startswith(f"`{package.name}/`")), "")
        missing += [
            f"{package.name}/{p.name}"
            for p in sorted(package.glob("*.py"))
            if p.name != "__init__.py" and f"`{p.stem}`" not in line
        ]
    assert missing == [], f"docs/architecture.md does not list these kit modules: {missing}"


def kit_modules_no_contract_imports(kit: Path, importers: list[Path]) -> list[str]:
    """The modules at the top of ``kit`` that none of ``importers`` imports (by ``from optax_gate.kit import m``
    or ``optax_gate.kit.m``): the kit's top holds what a contract imports, the rest lives in a subpackage."""
    imported: set[str] = set()
    for path in importers:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "optax_gate.kit":
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("optax_gate.kit."):
                imported.add((node.module or "").split(".")[2])
            elif isinstance(node, ast.Import):
                imported.update(a.name.split(".")[2] for a in node.names if a.name.startswith("optax_gate.kit."))
    return sorted(p.stem for p in kit.glob("*.py") if p.name != "__init__.py" and p.stem not in imported)


def test_the_kits_top_holds_only_what_contracts_import(tmp_path: Path) -> None:
    """Every module at the top of ``kit/`` is imported by a contract (``tests/contracts/``) or by the pytest plugin
    every contract runs under: the helpers a team's own contracts import too stay there, the rest is grouped in a
    subpackage (``docs/architecture.md``, "The kit by purpose"). A planted module nothing imports is seen."""
    importers = [*sorted((ROOT / "tests" / "contracts").rglob("*.py")), PACKAGE / "pytest_plugin.py"]
    assert kit_modules_no_contract_imports(PACKAGE / "kit", importers) == []
    planted = tmp_path / "kit"
    planted.mkdir()
    (planted / "tolerances.py").write_text("")
    (planted / "helper_of_the_gate.py").write_text("")
    contract = tmp_path / "test_x.py"
    contract.write_text("from optax_gate.kit import tolerances\n")
    assert kit_modules_no_contract_imports(planted, [contract]) == ["helper_of_the_gate"]


def verdict_writers(gate: Path = GATE) -> list[str]:
    """Each place outside ``judge/verdict.py`` that sets a report's verdict or
    changes its reasons: ``report["verdict"] = …``, ``report["reasons"] = …``
    (a tuple target too), ``report["reasons"].append/insert/extend(…)`` or
    ``report.setdefault("reasons", …).append(…)``, as ``FILE:LINE``."""

    def is_key(node: ast.AST, keys: tuple[str, ...]) -> bool:
        return (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == "report"
            and isinstance(node.slice, ast.Constant)
            and node.slice.value in keys
        )

    def reasons_list(node: ast.AST) -> bool:
        return is_key(node, ("reasons",)) or (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "setdefault"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "report"
            and bool(node.args)
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value == "reasons"
        )

    found = []
    for path in sorted(gate.rglob("*.py")):
        if path == gate / "judge" / "verdict.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, (ast.AugAssign, ast.AnnAssign))
                else []
            )
            flat = [e for t in targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])]
            mutates = (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("append", "insert", "extend", "remove", "pop", "clear")
                and reasons_list(node.func.value)
            )
            sliced = any(
                isinstance(t, ast.Subscript) and reasons_list(t.value) for t in flat
            )  # report["reasons"][i] = …
            if any(is_key(t, ("verdict", "reasons")) for t in flat) or sliced or mutates:
                found.append(f"{path.relative_to(gate)}:{getattr(node, 'lineno', 0)}")
    return sorted(found, key=lambda at: (at.rsplit(":", 1)[0], int(at.rsplit(":", 1)[1])))


def test_only_the_verdict_module_sets_the_verdict_and_its_reasons() -> None:
    """``judge/verdict.py`` is the one place a report's verdict and reasons
    change (the contracts' verdict, a heavier one, the scoped one): whoever
    changes a rule finds every rule there."""
    assert verdict_writers() == []


def test_a_planted_verdict_writer_is_seen(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    (gate / "judge").mkdir(parents=True)
    (gate / "judge" / "verdict.py").write_text('def f(report):\n    report["verdict"] = "fail"\n')
    (gate / "speed.py").write_text(
        'def f(report):\n    if report["verdict"] == "pass":\n        report["verdict"] = "fail"\n    '
        'report.setdefault("reasons", []).append("slow")\n'
    )
    (gate / "scope.py").write_text(
        'def f(report, rows):\n    report["verdict"], report["reasons"] = "pass", []\n'
        '    report["reasons"].insert(0, "x")\n    rows[0]["verdict"] = "broken"\n'
        '    report["reasons"][0:0] = ["y"]\n'
    )
    assert verdict_writers(gate) == ["scope.py:2", "scope.py:3", "scope.py:5", "speed.py:3", "speed.py:4"]


#: The report's sections that an analysis returns and ``gate/assemble.py`` alone puts in.
SECTIONS = (
    "schema",
    "usage",
    "surface",
    "warnings",
    "dependencies",
    "beyond_contracts_s",
    "speed",
    "upstream_tests",
    "team_run",
    "scope",
    "attribution",
)


def section_writers(gate: Path = GATE) -> list[str]:
    """Each place outside ``gate/assemble.py`` that puts one of :data:`SECTIONS`
    into a report (``report["surface"] = …``, a tuple target too, or
    ``report.setdefault("surface", …)``), as ``FILE:LINE KEY``."""
    found = []
    for path in sorted(gate.rglob("*.py")):
        where = path.relative_to(gate).as_posix()
        if where == "assemble.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, (ast.AugAssign, ast.AnnAssign))
                else []
            )
            keys = [
                e.slice.value
                for t in targets
                for e in (t.elts if isinstance(t, ast.Tuple) else [t])
                if isinstance(e, ast.Subscript)
                and isinstance(e.value, ast.Name)
                and e.value.id == "report"
                and isinstance(e.slice, ast.Constant)
            ]
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "setdefault"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "report"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                keys.append(node.args[0].value)
            found += [f"{where}:{getattr(node, 'lineno', 0)} {key}" for key in keys if key in SECTIONS]
    return found


def test_only_assemble_puts_a_section_into_the_report() -> None:
    """Each analysis returns its section (``unseen.beyond``, ``speed.measure``,
    ``upstream_tests.cross_run``, ``judging.apply``, ``scope.scoped``); ``gate/assemble.py`` is where it enters
    the report, so whoever reads a section finds its one writer there."""
    assert section_writers() == []


def test_a_planted_section_writer_is_seen(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    (gate / "team_run").mkdir(parents=True)
    (gate / "assemble.py").write_text('def f(report, s):\n    report["surface"] = s\n')
    (gate / "team_run" / "judging.py").write_text(
        'def f(report, t):\n    report["team_run"] = t\n    report["speed"] = t\n'
    )
    (gate / "unseen.py").write_text(
        'def f(report, a, b):\n    report["usage"], report["surface"] = a, b\n    '
        'report.setdefault("warnings", {})\n    row = {}\n    row["surface"] = 1\n'
    )
    assert section_writers(gate) == [
        "team_run/judging.py:2 team_run",
        "team_run/judging.py:3 speed",
        "unseen.py:2 usage",
        "unseen.py:2 surface",
        "unseen.py:3 warnings",
    ]
