"""What the team's own code uses of optax, flax and jax (``--usage PATH...``);
``optax_gate.gate.team_code.binding`` judges each use.

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from optax_gate.gate.base import model
from optax_gate.gate.inputs import usage_files
from optax_gate.gate.team_code.arguments import Arg, Scopes

TRACKED = ("optax", "flax", "jax")


@dataclasses.dataclass(frozen=True)
class Use:
    """One use of a tracked name in the team's code.

    ``where`` is ``file:line`` (``notebook.ipynb:code cell N (cell M of the notebook):line`` for a
    notebook), relative to the folder the user started the gate from; ``how`` is ``import``,
    ``attribute``, ``annotation`` (inside a type annotation: names the API,
    runs none of it) or ``call`` (``catch``: an ``except`` clause); for a call, ``positional`` is the number of
    positional arguments (None with ``*args``), ``keywords`` their names and
    ``star_kwargs`` whether ``**kwargs`` is passed."""

    where: str
    path: str
    how: str
    positional: int | None = None
    keywords: tuple[str, ...] = ()
    star_kwargs: bool = False
    #: a call's arguments as source text, positional ones by index (``"0"``)
    #: and keywords by name: ``(("0", "1e-3"), ("weight_decay", "0.1"))``;
    #: read by ``optax_gate.gate.team_code.attribution`` (literal values, dtype names).
    arguments: tuple[tuple[str, str], ...] = ()
    #: the same arguments as the code decides them (``arguments.Arg``: a literal, a call of a named API,
    #: a name followed to its one binding, or what would decide it), keyed as ``arguments``.
    args: tuple[tuple[str, Arg], ...] = ()
    #: a ``functools.partial`` of the API: the later call may pass what this one does not.
    partial: bool = False
    #: the call goes through a name bound once to the API (``adam = optax.adam``; ``adam(1e-3)``).
    via: str = ""
    #: an import inside ``try:`` whose ``except`` catches ImportError (or a parent of it): a removed
    #: module runs the team's fallback, it does not break the import.
    guarded: bool = False


class Scanner:
    """What one pass over the team's files finds: the names Optax goes by (aliases, partials, guarded imports)
    and each use of a public API."""

    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}
        self.partials: set[str] = set()  # the names functools.partial goes by in this file
        self.guarded: set[str] = set()  # names imported under try/except ImportError
        self.uses: list[Use] = []
        self.scopes: Scopes | None = None

    def imports(self, tree: ast.AST, label: str) -> None:
        """Record the names Optax goes by in ``tree`` (file ``label``): its imports, aliases and partials."""
        guarded = _guarded_imports(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import) and any(a.name == "functools" for a in node.names):
                self.partials |= {f"{a.asname or a.name}.partial" for a in node.names if a.name == "functools"}
            elif isinstance(node, ast.ImportFrom) and node.module == "functools":
                self.partials |= {a.asname or a.name for a in node.names if a.name == "partial"}
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] not in TRACKED:  # kept for the dependency diff
                        self.uses.append(Use(f"{label}{node.lineno}", a.name, "import"))
                        continue
                    if a.asname:
                        self.aliases[a.asname] = a.name
                    else:
                        top = a.name.split(".")[0]
                        self.aliases[top] = top
                    if id(node) in guarded and a.asname:
                        self.guarded.add(a.asname)
                    self.uses.append(Use(f"{label}{node.lineno}", a.name, "import", guarded=id(node) in guarded))
            elif (
                isinstance(node, ast.ImportFrom)
                and node.level == 0
                and node.module
                and node.module.split(".")[0] not in TRACKED
            ):
                self.uses.append(Use(f"{label}{node.lineno}", node.module, "import"))
            elif (
                isinstance(node, ast.ImportFrom)
                and node.level == 0
                and node.module
                and node.module.split(".")[0] in TRACKED
            ):
                for a in node.names:
                    if a.name == "*":
                        continue
                    full = f"{node.module}.{a.name}"
                    self.aliases[a.asname or a.name] = full
                    if id(node) in guarded:
                        self.guarded.add(a.asname or a.name)
                    self.uses.append(Use(f"{label}{node.lineno}", full, "import", guarded=id(node) in guarded))

    def _dotted(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self._dotted(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def catches(self, tree: ast.AST, label: str) -> None:
        """``except T`` clauses and ``pytest.raises(T)`` / ``raises(T)`` calls,
        as uses ``how="catch"`` whose ``path`` is ``T``'s source text
        (``optax_gate.gate.team_code.attribution``: does the team's code catch an
        exception type a finding changes?)."""
        for node in ast.walk(tree):
            if isinstance(node, ast.ExceptHandler):
                self.uses.append(
                    Use(f"{label}{node.lineno}", ast.unparse(node.type) if node.type else "BaseException", "catch")
                )
            elif (
                isinstance(node, ast.Call)
                and node.args
                and isinstance(node.func, (ast.Name, ast.Attribute))
                and (node.func.id if isinstance(node.func, ast.Name) else node.func.attr) == "raises"
            ):
                self.uses.append(Use(f"{label}{node.lineno}", ast.unparse(node.args[0]), "catch"))

    def _is_partial(self, func: ast.AST) -> bool:
        text = ast.unparse(func)
        return text in self.partials

    def _partial_of(self, func: ast.AST) -> ast.Call | None:
        """The ``functools.partial(optax.X, ...)`` call a called name is bound to once, if it is one."""
        if self.scopes is None or not isinstance(func, ast.Name):
            return None
        bound, _ = self.scopes.binding(func)
        node = bound.node if bound is not None else None
        if (
            isinstance(node, ast.Call)
            and self._is_partial(node.func)
            and node.args
            and not isinstance(node.args[0], ast.Starred)
        ):
            return node
        return None

    def _aliases_only_called(self, node: ast.AST, parents: dict[int, ast.AST]) -> bool:
        """``adam = optax.adam`` (or ``f = functools.partial(optax.adamw, b1=0.8)``) whose every read is a
        call (each is then a call of the API itself, named at its own line, with the partial's arguments and
        its own): the assignment's line is no use of its own."""
        parent = parents.get(id(node))
        if self.scopes is None or not (
            isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name)
        ):
            return False
        bound, _ = self.scopes.binding(parent.targets[0])
        reads = self.scopes.loads(node)
        return (
            bound is not None
            and bound.node is node
            and bool(reads)
            and all(isinstance(call := parents.get(id(r)), ast.Call) and call.func is r for r in reads)
        )

    def _call(
        self, node: ast.Call, label: str, path: str, args: list[ast.expr], keywords: list[ast.keyword] | None = None
    ) -> Use:
        """A call of ``path`` at ``node`` with the positional arguments ``args`` (a partial's: after the
        function) and ``keywords`` (default: the node's)."""
        keywords = node.keywords if keywords is None else keywords
        star = any(isinstance(a, ast.Starred) for a in args)
        return Use(
            f"{label}{node.lineno}",
            path,
            "call",
            None if star else len(args),
            tuple(k.arg for k in keywords if k.arg is not None),
            any(k.arg is None for k in keywords),
            _arguments(args, keywords),
            _resolved(args, keywords, self.scopes),
        )

    def expressions(self, tree: ast.AST, label: str) -> None:
        """Record each use of a public API in ``tree`` (file ``label``), through the names :meth:`imports` found."""
        start = len(self.uses)
        self._expressions(tree, label)
        if self.guarded:  # a use through a name imported under try/except ImportError: the fallback guards it too
            self.uses[start:] = [
                dataclasses.replace(u, guarded=True) if u.how != "import" and self._guarded_use(u) else u
                for u in self.uses[start:]
            ]

    def _guarded_use(self, use: Use) -> bool:
        return any(
            self.aliases.get(name) and (use.path == self.aliases[name] or use.path.startswith(self.aliases[name] + "."))
            for name in self.guarded
        )

    def _expressions(self, tree: ast.AST, label: str) -> None:
        covered: set[int] = set()
        annotations = _annotation_nodes(tree)
        parents = {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
        nodes = sorted(
            (n for n in ast.walk(tree) if isinstance(n, (ast.Call, ast.Attribute, ast.Name))),
            key=lambda n: (
                n.lineno,
                n.col_offset,
                -(getattr(n, "end_lineno", 0) or 0),
                -getattr(n, "end_col_offset", 0),
            ),
        )
        for node in nodes:
            if isinstance(node, ast.Call) and self._is_partial(node.func) and node.args:
                inner = self._dotted(node.args[0]) or (self.scopes.path(node.args[0]) if self.scopes else None)
                if inner is not None and not isinstance(node.args[0], ast.Starred):
                    covered.add(id(node.args[0]))
                    if not self._aliases_only_called(node, parents):
                        self.uses.append(
                            dataclasses.replace(self._call(node, label, inner, node.args[1:]), partial=True)
                        )
                continue
            partial = self._partial_of(node.func) if isinstance(node, ast.Call) else None
            # a partial is found only for a call of a name: the isinstance checks only tell the type checker
            if partial is not None and isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                # f = functools.partial(optax.adamw, b1=0.8); f(1e-3, weight_decay=0.0)
                inner = self._dotted(partial.args[0]) or (self.scopes.path(partial.args[0]) if self.scopes else None)
                if inner is not None:
                    covered.add(id(node.func))
                    use = self._call(
                        node, label, inner, [*partial.args[1:], *node.args], [*partial.keywords, *node.keywords]
                    )
                    self.uses.append(
                        dataclasses.replace(
                            use, via=f"`{node.func.id}` is functools.partial({ast.unparse(partial.args[0])}, ...)"
                        )
                    )
                    continue
            if isinstance(node, ast.Call):
                path = self._dotted(node.func)
                via = ""
                if path is None and isinstance(node.func, ast.Name) and self.scopes is not None:
                    path = self.scopes.path(node.func)
                    via = f"`{node.func.id}` is bound once to {path}" if path else ""
                if path is None:
                    continue
                covered.add(id(node.func))
                self.uses.append(dataclasses.replace(self._call(node, label, path, node.args), via=via))
            if isinstance(node, ast.Attribute) and id(node) not in covered and self._aliases_only_called(node, parents):
                covered.add(id(node))
            if isinstance(node, ast.Attribute) and id(node) not in covered:
                path = self._dotted(node)
                if path is not None:
                    how = "annotation" if id(node) in annotations else "attribute"
                    self.uses.append(Use(f"{label}{node.lineno}", path, how))
            if isinstance(node, (ast.Attribute, ast.Call)):
                chain = node.value if isinstance(node, ast.Attribute) else node.func
                while isinstance(chain, ast.Attribute):  # only the longest chain counts
                    covered.add(id(chain))
                    chain = chain.value


_IMPORT_ERRORS = ("ImportError", "ModuleNotFoundError", "Exception", "BaseException")


def _guarded_imports(tree: ast.AST) -> set[int]:
    """ids of the import statements inside a ``try:`` body one of whose handlers catches ImportError
    (a bare ``except``, ``ImportError``, ``ModuleNotFoundError``, ``Exception``, ``BaseException``)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Try, ast.TryStar)):  # ast.TryStar: Python >= 3.11, always here (>= 3.12)
            continue
        catches = any(
            h.type is None
            or any(
                isinstance(n, (ast.Name, ast.Attribute))
                and (n.id if isinstance(n, ast.Name) else n.attr) in _IMPORT_ERRORS
                for n in ast.walk(h.type)
            )
            for h in node.handlers
        )
        if catches:
            out |= {id(n) for stmt in node.body for n in ast.walk(stmt) if isinstance(n, (ast.Import, ast.ImportFrom))}
    return out


def _annotation_nodes(tree: ast.AST) -> set[int]:
    """ids of the nodes inside type annotations (a function's return and
    parameters, an annotated assignment): ``-> optax.MultiSteps`` names the
    API but runs none of it (``Use.how == "annotation"``)."""
    roots: list[ast.AST | None] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            roots.append(node.returns)
            a = node.args
            roots += [
                x.annotation for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if x is not None
            ]
        elif isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
    return {id(n) for root in roots if root is not None for n in ast.walk(root)}


def _keyed(
    args: list[ast.expr], keywords: list[ast.keyword], read: Callable[[ast.expr], Any]
) -> tuple[tuple[str, Any], ...]:
    """A call's arguments, each as ``read`` gives it: positional ones by index, up to the first ``*args``;
    keywords by name."""
    out = []
    for i, a in enumerate(args):
        if isinstance(a, ast.Starred):
            break
        out.append((str(i), read(a)))
    out += [(k.arg, read(k.value)) for k in keywords if k.arg is not None]
    return tuple(out)


def _arguments(args: list[ast.expr], keywords: list[ast.keyword]) -> tuple[tuple[str, str], ...]:
    """A call's arguments as source text (``ast.unparse``), keyed as :func:`_keyed` says."""
    return _keyed(args, keywords, ast.unparse)


def _resolved(args: list[ast.expr], keywords: list[ast.keyword], scopes: Scopes | None) -> tuple[tuple[str, Arg], ...]:
    """The arguments of :func:`_arguments`, each as the code decides it (``arguments.Scopes.read``)."""
    return () if scopes is None else _keyed(args, keywords, scopes.read)


@dataclasses.dataclass
class Scan:
    """The uses found under the ``--usage`` paths, how many files were found
    and scanned, and the files (or notebook cells) not scanned with their
    reasons (``optax_gate.gate.inputs.usage_files``)."""

    paths: list[str]
    uses: list[Use]
    found: int
    scanned: int
    not_scanned: list[usage_files.NotScanned]

    def may_use(self, public_path: str) -> list[usage_files.NotScanned]:
        """The files not scanned that can hold a use of ``public_path``."""
        return [n for n in self.not_scanned if usage_files.may_use(n, public_path)]

    def to_json(self) -> model.Usage:
        """The scan as report.json lists it."""
        return {
            "paths": self.paths,
            "files": self.found,
            "scanned": self.scanned,
            "not_scanned": [n.to_json() for n in self.not_scanned],
            "uses": len(self.uses),
        }


def scan(paths: Iterable[Path], base: Path | None = None) -> Scan:
    """Every use of optax / flax / jax in the ``.py`` and ``.ipynb`` files
    under ``paths``, and every import of any other module (for the dependency
    diff). A file that cannot be read or parsed is never dropped silently:
    it is in ``Scan.not_scanned`` with its reason. Files are named relative to
    ``base`` (default: the folder the user started the gate from,
    ``usage_files.user_folder``)."""
    paths = [Path(p) for p in paths]
    parsed = usage_files.parse(paths, base)
    uses: list[Use] = []
    for trees in parsed.trees.values():
        scanner = Scanner()
        for tree, label in trees:  # a notebook's imports hold in every later cell; be generous: in all cells
            scanner.imports(tree, label)
        scanner.scopes = Scopes(trees, scanner._dotted)  # a notebook's cells are one module
        for tree, label in trees:
            scanner.expressions(tree, label)
            scanner.catches(tree, label)
        uses.extend(scanner.uses)
    return Scan([str(p) for p in paths], uses, parsed.found, parsed.scanned, parsed.not_scanned)


def imported_modules(uses: Iterable[Use]) -> dict[str, list[str]]:
    """``{top-level module: [where, ...]}`` of the import lines (for the
    dependency diff: a package that disappears and is imported breaks)."""
    out: dict[str, list[str]] = {}
    for u in uses:
        if u.how == "import":
            out.setdefault(u.path.split(".")[0], []).append(u.where)
    return out
