"""What the literal form of a call's argument decides (``--usage``): a literal, a call of a named API, a
function, or a name bound once to one of these, followed through the file's scopes; else what would decide it.

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable, Iterable

from optax_gate.gate.inputs.usage_files import CELL

#: What an argument's form is: a Python literal (``value``: its ``repr``), a call of a dotted path of a
#: tracked package (``value``: the path), a dotted path itself (``jnp.bfloat16``, ``optax.adam`` passed on),
#: a function (a ``lambda`` or a ``def`` of the file), or known at run time only.
KINDS = ("literal", "call", "path", "callable", "unknown")

_SCOPES = (
    ast.Module,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.Lambda,
    ast.ClassDef,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)
_NONFINITE = {"nan": "nan", "NaN": "nan", "NAN": "nan", "inf": "inf", "Inf": "inf", "infty": "inf", "PINF": "inf"}
_DEPTH = 8


@dataclasses.dataclass(frozen=True)
class Arg:
    """One argument as the code decides it. ``text``: its source text as written; ``kind``: one of
    :data:`KINDS`; ``value``: a literal's ``repr`` (``'0.1'``, ``"'bfloat16'"``, ``'nan'``) or a dotted path;
    ``via``: the name followed to get there (``wd = 0.0 (line 12)``); ``why``: for ``unknown``, what would
    decide it (``wd is a parameter of make_opt``)."""

    text: str
    kind: str
    value: str = ""
    via: str = ""
    why: str = ""

    def said(self) -> str:
        """The argument in a reader's words: ``wd`` followed to its value (``wd = 0.0, line 12``)."""
        return f"{self.text} ({self.via})" if self.via else self.text


def _defaults(args: ast.arguments) -> list[ast.expr]:
    """A def's or lambda's default values: evaluated in the scope around it."""
    return [*args.defaults, *(d for d in args.kw_defaults if d is not None)]


@dataclasses.dataclass
class _Binding:
    node: ast.AST | None  # the value bound (an expression or a def), None where it is not followed
    how: str  # "assign", "def", "parameter", "loop", "import", "global", ...
    line: str
    scope: ast.AST


class Scopes:
    """The names each scope of one file (or notebook) binds, to follow an argument to its value.

    Args:
      trees: the file's parsed trees with their ``file:`` line labels (one per notebook cell).
      dotted: the scanner's reading of an ``ast.Name``/``ast.Attribute`` as a tracked dotted path, or None.
    """

    def __init__(self, trees: Iterable[tuple[ast.AST, str]], dotted: Callable[[ast.AST], str | None]) -> None:
        self._dotted = dotted
        self._module = ast.Module(body=[], type_ignores=[])
        self.scope_of: dict[int, ast.AST] = {}
        self._parent: dict[int, ast.AST | None] = {id(self._module): None}
        self._bindings: dict[int, dict[str, list[_Binding]]] = {id(self._module): {}}
        self._names: dict[int, str] = {id(self._module): "the module"}
        self._label: dict[int, str] = {}
        self._all: list[ast.AST] = []
        self._reads: dict[int, list[ast.Name]] | None = None  # built on the first call of loads()
        declared: list[tuple[ast.AST, str, str]] = []
        for tree, label in trees:
            for node in ast.walk(tree):
                self._label[id(node)] = label
                self._all.append(node)
            for stmt in getattr(tree, "body", []):
                self._visit(stmt, self._module, declared)
        for scope, name, line in declared:  # global/nonlocal: one more binding where it lands
            target = self._module if isinstance(scope, ast.Global) else self._enclosing_binder(scope, name)
            if target is not None:
                self._bindings[id(target)].setdefault(name, []).append(_Binding(None, "global", line, target))

    # -- building ---------------------------------------------------------------------------------------
    def _line(self, node: ast.AST) -> str:
        """``line 12``; in a notebook, ``code cell 2 (cell 3 of the notebook):4``."""
        cell = self._label.get(id(node), "").partition(CELL)[2]
        return f"{CELL[1:]}{cell}{getattr(node, 'lineno', '?')}" if cell else f"line {getattr(node, 'lineno', '?')}"

    def _bind(self, scope: ast.AST, name: str, node: ast.AST | None, how: str, at: ast.AST) -> None:
        self._bindings[id(scope)].setdefault(name, []).append(_Binding(node, how, self._line(at), scope))

    def _open(self, node: ast.AST, parent: ast.AST, name: str) -> None:
        self._parent[id(node)] = parent
        self._bindings[id(node)] = {}
        self._names[id(node)] = name

    def _targets(self, target: ast.AST, scope: ast.AST, how: str, value: ast.AST | None, at: ast.AST) -> None:
        if isinstance(target, ast.Name):
            self._bind(scope, target.id, value, how, at)
        elif isinstance(target, (ast.Tuple, ast.List)):
            pairs = (
                value.elts
                if isinstance(value, (ast.Tuple, ast.List))
                and len(value.elts) == len(target.elts)
                and not any(isinstance(x, ast.Starred) for x in (*target.elts, *value.elts))
                else None
            )
            for i, t in enumerate(target.elts):  # LR, WD = 1e-3, 0.0: each name bound to its element
                self._targets(
                    t, scope, how if pairs is not None else "unpacking", pairs[i] if pairs is not None else None, at
                )
        elif isinstance(target, ast.Starred):
            self._targets(target.value, scope, "unpacking", None, at)

    def _visit(self, node: ast.AST, scope: ast.AST, declared: list[tuple[ast.AST, str, str]]) -> None:
        self.scope_of[id(node)] = scope
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self._bind(
                scope,
                node.name,
                node if not isinstance(node, ast.ClassDef) else None,
                "def" if not isinstance(node, ast.ClassDef) else "class",
                node,
            )
            for d in [
                *node.decorator_list,
                *getattr(node, "bases", []),
                *(k.value for k in getattr(node, "keywords", [])),
            ]:
                self._visit(d, scope, declared)
            if not isinstance(node, ast.ClassDef):
                for d in _defaults(node.args):
                    self._visit(d, scope, declared)
            self._open(node, scope, f"`{node.name}`")
            if not isinstance(node, ast.ClassDef):
                self._parameters(node.args, node)
            for stmt in node.body:
                self._visit(stmt, node, declared)
            return
        if isinstance(node, ast.Lambda):
            for d in _defaults(node.args):
                self._visit(d, scope, declared)
            self._open(node, scope, "a lambda")
            self._parameters(node.args, node)
            self._visit(node.body, node, declared)
            return
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            self._open(node, scope, "a comprehension")
            for gen in node.generators:
                self._visit(gen.iter, scope if gen is node.generators[0] else node, declared)
                self._targets(gen.target, node, "loop", None, node)
                for cond in gen.ifs:
                    self._visit(cond, node, declared)
            for part in [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]:
                self._visit(part, node, declared)
            return
        if isinstance(node, ast.Assign):
            for t in node.targets:
                self._targets(t, scope, "assign", node.value if len(node.targets) == 1 else None, node)
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            self._targets(node.target, scope, "assign", node.value, node)
        elif isinstance(node, ast.AugAssign):
            self._targets(node.target, scope, "augmented assignment", None, node)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            self._targets(node.target, scope, "loop", None, node)
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            self._targets(node.optional_vars, scope, "with", None, node.context_expr)
        elif isinstance(node, ast.NamedExpr):
            self._targets(node.target, scope, "assignment expression", None, node)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            self._bind(scope, node.name, None, "except", node)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                self._bind(scope, (a.asname or a.name).split(".")[0], None, "import", node)
        elif isinstance(node, ast.Delete):
            for t in node.targets:
                self._targets(t, scope, "del", None, node)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            declared += [(node if isinstance(node, ast.Global) else scope, n, self._line(node)) for n in node.names]
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            self._bind(scope, node.name, None, "match", node)
        for child in ast.iter_child_nodes(node):
            self._visit(child, scope, declared)

    def _parameters(self, args: ast.arguments, scope: ast.AST) -> None:
        for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
            if a is not None:
                self._bind(scope, a.arg, None, "parameter", a)

    def _enclosing_binder(self, scope: ast.AST, name: str) -> ast.AST | None:
        s = self._parent.get(id(scope))
        while s is not None:
            if name in self._bindings.get(id(s), {}) and not isinstance(s, ast.ClassDef):
                return s
            s = self._parent.get(id(s))
        return None

    # -- reading ----------------------------------------------------------------------------------------
    def binding(self, name: ast.Name) -> tuple[_Binding | None, str]:
        """The one binding a name refers to (None when it is not exactly one that can be followed), and
        why not."""
        scope: ast.AST | None = self.scope_of.get(id(name), self._module)
        first = True
        while scope is not None:
            if first or not isinstance(scope, ast.ClassDef):
                found = self._bindings.get(id(scope), {}).get(name.id)
                if found:
                    if len(found) == 1 and found[0].node is not None:
                        return found[0], ""
                    return None, self._why(name.id, found)
            first = False
            scope = self._parent.get(id(scope))
        return None, f"`{name.id}` is not bound in this file"

    def _why(self, name: str, found: list[_Binding]) -> str:
        if len(found) > 1:
            return f"`{name}` is bound {len(found)} times ({', '.join(b.line for b in found[:3])})"
        b = found[0]
        if b.how == "parameter":
            return f"`{name}` is a parameter of {self._names.get(id(b.scope), 'a function')}"
        return f"`{name}` is bound by {'an' if b.how[0] in 'aeiou' else 'a'} {b.how} ({b.line})"

    def read(self, node: ast.AST, depth: int = 0, via: str = "") -> Arg:
        """What the argument expression ``node`` is, following names bound once (at most 8 deep)."""
        text = ast.unparse(node)
        if isinstance(node, ast.Constant) and not isinstance(node.value, bytes):
            return Arg(text, "literal", repr(node.value), via)
        if (
            isinstance(node, ast.UnaryOp)
            and isinstance(node.op, (ast.USub, ast.UAdd))
            and isinstance(node.operand, ast.Constant)
            and isinstance(node.operand.value, (int, float))
        ):
            return Arg(
                text, "literal", repr(-node.operand.value if isinstance(node.op, ast.USub) else node.operand.value), via
            )
        if isinstance(node, ast.Attribute) and node.attr in _NONFINITE and isinstance(node.value, ast.Name):
            return Arg(text, "literal", _NONFINITE[node.attr], via)  # jnp.nan, np.inf, math.inf
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "float"
            and len(node.args) == 1
            and isinstance(node.args[0], ast.Constant)
            and str(node.args[0].value).strip().lower() in ("nan", "inf", "-inf")
        ):
            return Arg(text, "literal", str(node.args[0].value).strip().lower(), via)
        if isinstance(node, ast.Lambda):
            return Arg(text, "callable", "lambda", via)
        if isinstance(node, ast.Call):
            path = self.path(node.func, depth)
            return (
                Arg(text, "call", path, via)
                if path
                else Arg(text, "unknown", via=via, why=f"`{text}` is known at run time")
            )
        if isinstance(node, (ast.Attribute, ast.Name)):
            path = self._dotted(node)
            if path:
                return Arg(text, "path", path, via)
        if isinstance(node, ast.Name) and depth < _DEPTH:
            bound, why = self.binding(node)
            if bound is None:
                return Arg(text, "unknown", via=via, why=why)
            if bound.node is None:
                raise AssertionError("binding() returns a binding only when its node is followed")
            if isinstance(bound.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return Arg(text, "callable", f"def {bound.node.name}", via or f"`def {node.id}` ({bound.line})")
            got = self.read(bound.node, depth + 1)
            where = via or f"`{node.id} = {ast.unparse(bound.node)}` ({bound.line})"
            return dataclasses.replace(got, text=text, via=where)
        return Arg(text, "unknown", via=via, why=f"`{text}` is known at run time")

    def loads(self, value: ast.AST) -> list[ast.Name]:
        """Every read of a name whose one binding is ``value`` (``adam = optax.adam``: each ``adam`` read)."""
        if self._reads is None:
            self._reads = {}
            for node in self._all:
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                    bound, _ = self.binding(node)
                    if bound is not None and bound.node is not None:
                        self._reads.setdefault(id(bound.node), []).append(node)
        return self._reads.get(id(value), [])

    def path(self, node: ast.AST, depth: int = 0) -> str | None:
        """The tracked dotted path ``node`` names, through names bound once (``adam = optax.adam``)."""
        path = self._dotted(node)
        if path or not isinstance(node, ast.Name) or depth >= _DEPTH:
            return path
        bound, _ = self.binding(node)
        if bound is None or not isinstance(bound.node, (ast.Name, ast.Attribute)):
            return None
        return self.path(bound.node, depth + 1)
