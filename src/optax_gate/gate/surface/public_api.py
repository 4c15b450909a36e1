"""Static API surface of optax and flax.nnx in one environment, and its diff.

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import ast
import dataclasses
import functools
import logging
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any, cast

import griffe

from optax_gate.gate.surface import default_values, deprecations

DEFAULT_PACKAGES = ("optax", "flax.nnx")

# Parameter kinds in the order Python binds them.
POSITIONAL_ONLY = "positional-only"
POSITIONAL = "positional or keyword"
VAR_POSITIONAL = "variadic positional"
KEYWORD_ONLY = "keyword-only"
VAR_KEYWORD = "variadic keyword"

# Change kinds of a surface row; ``incompatible`` ones can break a caller.
INCOMPATIBLE = (
    "removed",
    "moved",
    "kind-changed",
    "parameter-removed",
    "parameter-renamed",
    "parameter-reordered",
    "keyword-only",
    "positional-only",
    "parameter-kind-changed",
    "new-required-parameter",
    "default-removed",
)
COMPATIBLE = ("default-changed", "parameter-added")
#: New in the candidate: a deprecation read statically (``optax_gate.gate.surface.deprecations``).
DEPRECATED = ("deprecated",)
ADDED = ("added",)
CHANGE_KINDS = INCOMPATIBLE + COMPATIBLE + DEPRECATED + ADDED


@dataclasses.dataclass(frozen=True)
class Param:
    """One parameter: ``name``, ``kind`` (one of the kind constants),
    ``default`` (source text, or None when the parameter has none) and
    ``value``: the default's value as ``repr`` text when it is a literal or a
    named constant resolved statically to one (else None)."""

    name: str
    kind: str
    default: str | None = None
    value: str | None = None

    @property
    def required(self) -> bool:
        """Whether a call must pass the parameter: no default and not ``*args``/``**kwargs``."""
        return self.default is None and self.kind not in (VAR_POSITIONAL, VAR_KEYWORD)

    def text(self) -> str:
        """The parameter as a signature writes it: ``name``, ``name=default``, ``*name`` or ``**name``."""
        prefix = {VAR_POSITIONAL: "*", VAR_KEYWORD: "**"}.get(self.kind, "")
        return prefix + self.name + ("" if self.default is None else f"={self.default}")


@dataclasses.dataclass
class Entry:
    """What a public path names in one environment."""

    path: str
    kind: str
    target: str
    where: str = ""
    params: tuple[Param, ...] | None = None
    deprecated: str | None = None

    def signature(self) -> str:
        """The entry's signature as the report writes it (its kind when it has none)."""
        if self.params is None:
            return self.kind
        out, star = [], False
        for p in self.params:
            if p.kind == KEYWORD_ONLY and not star:
                out.append("*")
                star = True
            star = star or p.kind == VAR_POSITIONAL
            out.append(p.text())
            if p.kind == POSITIONAL_ONLY and (
                p is self.params[-1] or self.params[self.params.index(p) + 1].kind != POSITIONAL_ONLY
            ):
                out.append("/")
        return f"({', '.join(out)})"

    def to_json(self) -> dict[str, Any]:
        """The entry as report.json lists it."""
        return {
            "path": self.path,
            "kind": self.kind,
            "target": self.target,
            "where": self.where,
            "params": None if self.params is None else [dataclasses.asdict(p) for p in self.params],
            "deprecated": self.deprecated,
        }


def configured_packages(pyproject: Path) -> tuple[str, ...]:
    """The modules whose surface is diffed: ``[tool.optax-gate] surface`` of
    ``pyproject`` (a list of dotted module names), else :data:`DEFAULT_PACKAGES`.

    Raises:
      ValueError: when the table's ``surface`` is not a list of strings.
    """
    try:
        table = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("tool", {}).get("optax-gate", {})
    except (OSError, tomllib.TOMLDecodeError):
        return DEFAULT_PACKAGES
    value = table.get("surface", list(DEFAULT_PACKAGES))
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"{pyproject}: [tool.optax-gate] surface must be a list of module names, got {value!r}")
    return tuple(value)


class StaticTree:
    """The Python sources of one ``site-packages`` folder, parsed on demand."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._modules: dict[str, griffe.Module | None] = {}

    def _file(self, dotted: str) -> Path | None:
        base = self.root.joinpath(*dotted.split("."))
        for candidate in (
            base / "__init__.py",
            base.with_suffix(".py"),
            base / "__init__.pyi",
            base.with_suffix(".pyi"),
        ):
            if candidate.is_file():
                return candidate
        return None

    def module(self, dotted: str) -> griffe.Module | None:
        """The parsed module ``dotted`` (None when no such source file)."""
        if dotted not in self._modules:
            path = self._file(dotted)
            module = None
            if path is not None:
                try:
                    module = griffe.visit(dotted, path, path.read_text(encoding="utf-8"))
                except (SyntaxError, UnicodeDecodeError, ValueError, griffe.GriffeError):
                    module = None
            self._modules[dotted] = module
        return self._modules[dotted]

    def lookup(self, dotted: str) -> Any:
        """The object at ``dotted``: a module, or a member of the longest
        module prefix (None when absent)."""
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            module = self.module(".".join(parts[:cut]))
            if module is None:
                continue
            obj: Any = module
            for name in parts[cut:]:
                members = getattr(obj, "members", {})
                if name in members:
                    obj = members[name]
                elif getattr(obj, "is_module", False) and self.module(f"{obj.path}.{name}") is not None:
                    obj = self.module(f"{obj.path}.{name}")
                else:
                    return None
                if obj.is_alias and name != parts[-1]:
                    obj = self.resolve(obj)
                    if obj is None or isinstance(obj, str):
                        return None
            return obj
        return None

    def resolve(self, obj: Any, depth: int = 0) -> Any:
        """Follow an alias to its definition inside the same top-level
        package. Returns the object, the target path (str) when it leaves the
        package, or None when it cannot be found."""
        while obj is not None and obj.is_alias:
            target = obj.target_path
            if target.split(".")[0] != obj.path.split(".")[0]:
                return target
            if depth > 20:
                return None
            depth += 1
            obj = self.lookup(target)
        return obj


def _params(obj: Any, tree: StaticTree | None = None) -> tuple[Param, ...] | None:
    kinds = {
        griffe.ParameterKind.positional_only: POSITIONAL_ONLY,
        griffe.ParameterKind.positional_or_keyword: POSITIONAL,
        griffe.ParameterKind.var_positional: VAR_POSITIONAL,
        griffe.ParameterKind.keyword_only: KEYWORD_ONLY,
        griffe.ParameterKind.var_keyword: VAR_KEYWORD,
    }
    if obj.is_function:
        params = list(obj.parameters)
    elif obj.is_class:
        if "__init__" in obj.members and not obj.members["__init__"].is_alias:
            params = list(obj.members["__init__"].parameters)
        elif any(str(b).split(".")[-1] == "NamedTuple" for b in obj.bases):
            fields = [
                m
                for m in obj.members.values()
                if not m.is_alias and m.is_attribute and m.annotation is not None and not m.name.startswith("_")
            ]
            return tuple(
                Param(
                    f.name,
                    POSITIONAL,
                    None if f.value is None else str(f.value),
                    None if f.value is None else default_values.constant(str(f.value), obj.module, tree),
                )
                for f in sorted(fields, key=lambda f: f.lineno or 0)
            )
        else:
            return None
    else:
        return None
    out = []
    for i, p in enumerate(params):
        if i == 0 and p.name in ("self", "cls") and (obj.is_class or (obj.parent is not None and obj.parent.is_class)):
            continue
        default = None if p.default is None else str(p.default)
        out.append(
            Param(
                p.name,
                kinds[p.kind],
                default,
                None if default is None else default_values.constant(default, obj.module, tree),
            )
        )
    return tuple(out)


def _public_names(module: Any, tree: StaticTree) -> list[str]:
    exports = module.exports
    top = module.path.split(".")[0]
    if exports and all(isinstance(e, str) for e in exports):
        names = set(exports)
    else:
        names = set(e for e in exports or () if isinstance(e, str))
        for name, member in module.members.items():
            if name.startswith("_") or name in names:
                continue
            if member.is_alias:
                target = member.target_path
                if target == name or target.split(".")[0] != top:  # `import x`, re-exported third-party names
                    continue
            names.add(name)
    if module.is_init_module:
        names.update(
            n for n in _submodule_imports(module) if not n.startswith("_") and tree.module(f"{module.path}.{n}")
        )
    return sorted(names)


def _submodule_imports(module: Any) -> set[str]:
    """Names a package binds with ``from <itself> import sub`` or
    ``from . import sub``: griffe leaves its own submodules out of
    ``members``, but ``import optax; optax.losses`` works."""
    try:
        tree = ast.parse(Path(module.filepath).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return set()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and (
            (node.module == module.path and node.level == 0) or (node.level == 1 and not node.module)
        ):
            names.update(a.asname or a.name for a in node.names)
    return names


def _follow_assignment(obj: Any, tree: StaticTree) -> Any:
    """``MultiSteps = transforms.MultiSteps`` in a module: the object the
    right-hand side names, when it is a plain name or attribute chain that
    resolves inside the package; else ``obj`` itself."""
    value = getattr(obj, "value", None)
    text = str(value) if value is not None else ""
    if not obj.is_attribute or not text.replace(".", "").replace("_", "").isalnum() or text[0].isdigit():
        return obj
    module = obj.parent
    head, _, rest = text.partition(".")
    bound = module.members.get(head)
    if bound is not None and bound.is_alias:
        start = bound.target_path
    elif bound is not None:
        start = bound.path
    elif tree.module(f"{module.path}.{head}") is not None:
        start = f"{module.path}.{head}"
    else:
        return obj
    found = tree.lookup(f"{start}.{rest}" if rest else start)
    if found is not None and found.is_alias:
        found = tree.resolve(found)
    return found if found is not None and not isinstance(found, str) and found is not obj else obj


def _entry(path: str, obj: Any, tree: StaticTree) -> Entry:
    final = tree.resolve(obj) if obj is not None and obj.is_alias else obj
    if (
        final is not None
        and not isinstance(final, str)
        and final.is_attribute
        and final.parent is not None
        and final.parent.is_module
    ):
        final = _follow_assignment(final, tree)
    if final is None:
        return Entry(path, "unresolved", getattr(obj, "target_path", path))
    if isinstance(final, str):
        return Entry(path, "external", final)
    where = ""
    if final.filepath and final.lineno is not None:
        try:
            where = f"{Path(final.filepath).relative_to(tree.root)}:{final.lineno}"
        except ValueError:
            where = f"{Path(final.filepath).name}:{final.lineno}"
    elif final.is_module and final.filepath:
        where = f"{Path(final.filepath).relative_to(tree.root)}:1"
    kind = final.kind.value
    callable_ = kind in ("function", "class")
    return Entry(
        path,
        kind,
        final.path,
        where,
        _params(final, tree) if callable_ else None,
        deprecations.reason(final) if callable_ else None,
    )


def surface(site_packages: Path, packages: Iterable[str] = DEFAULT_PACKAGES) -> dict[str, Entry]:
    """``{public path: Entry}`` of ``packages`` as installed in ``site_packages``
    (a start module that is not there is simply absent from the result)."""
    logging.getLogger("griffe").setLevel(logging.ERROR)
    tree = StaticTree(Path(site_packages))
    out: dict[str, Entry] = {}
    seen_modules: set[str] = set()
    queue = [(name, name) for name in packages]
    while queue:
        public, dotted = queue.pop(0)
        module = tree.module(dotted)
        if module is None or dotted in seen_modules:
            continue
        seen_modules.add(dotted)
        filepath = cast(Path, module.filepath)  # griffe.visit of one file (StaticTree.module): never a namespace's list
        out.setdefault(public, Entry(public, "module", dotted, f"{Path(filepath).relative_to(tree.root)}:1"))
        root = public.split(".")[0]
        for name in _public_names(module, tree):
            obj = module.members.get(name) or tree.module(f"{dotted}.{name}")
            path = f"{public}.{name}"
            entry = _entry(path, obj, tree)
            out[path] = entry
            if entry.kind == "module" and entry.target.split(".")[0] == root and entry.target.startswith(dotted + "."):
                queue.append((path, entry.target))
            elif (
                entry.kind == "class" and entry.target.split(".")[0] == root and obj is not None
            ):  # a class entry has an obj (None: unresolved)
                cls = tree.resolve(obj) if obj.is_alias else obj
                for mname, member in sorted(cls.members.items()):
                    if mname.startswith("_") or member.is_alias or not member.is_function:
                        continue
                    out[f"{path}.{mname}"] = _entry(f"{path}.{mname}", member, tree)
    return out


#: :func:`surface`, read once per environment in a gate (the diffs, the call sites of the findings and
#: the attribution of the team's lines all read it).
cached_surface = functools.lru_cache(maxsize=4)(surface)


def _row(subject: tuple[str, str, str], change: str, old: str, new: str, param: str = "") -> dict[str, Any]:
    """One row of the surface diff: ``subject`` is (path, kind, where) of the name it is about."""
    path, kind, where = subject
    return {"path": path, "change": change, "kind": kind, "old": old, "new": new, "where": where, "param": param}


def _positional(params: tuple[Param, ...]) -> list[str]:
    return [p.name for p in params if p.kind in (POSITIONAL_ONLY, POSITIONAL)]


def diff_params(
    path: str, kind: str, old: tuple[Param, ...], new: tuple[Param, ...], where: str
) -> list[dict[str, Any]]:
    """Rows for the parameter changes between two signatures of one callable."""
    rows: list[dict[str, Any]] = []
    o, n = {p.name: p for p in old}, {p.name: p for p in new}
    removed = [p for p in old if p.name not in n and p.kind not in (VAR_POSITIONAL, VAR_KEYWORD)]
    added = [p for p in new if p.name not in o and p.kind not in (VAR_POSITIONAL, VAR_KEYWORD)]
    old_index = {p.name: i for i, p in enumerate(old)}
    new_index = {p.name: i for i, p in enumerate(new)}
    renamed: dict[str, str] = {}
    for p in removed:  # same position, same kind: a rename
        match = [
            q
            for q in added
            if new_index[q.name] == old_index[p.name] and q.kind == p.kind and q.name not in renamed.values()
        ]
        if match:
            renamed[p.name] = match[0].name
    for p in removed:
        if p.name in renamed:
            rows.append(_row((path, kind, where), "parameter-renamed", p.name, renamed[p.name], p.name))
        else:
            rows.append(_row((path, kind, where), "parameter-removed", p.text(), "—", p.name))
    for p in added:
        if p.name in renamed.values():
            continue
        if p.required:
            rows.append(_row((path, kind, where), "new-required-parameter", "—", p.text(), p.name))
        else:
            rows.append(_row((path, kind, where), "parameter-added", "—", p.text(), p.name))
    for p in old:
        q = n.get(p.name)
        if q is None:
            continue
        if p.kind != q.kind:
            change = {KEYWORD_ONLY: "keyword-only", POSITIONAL_ONLY: "positional-only"}.get(
                q.kind, "parameter-kind-changed"
            )
            rows.append(_row((path, kind, where), change, f"{p.name} ({p.kind})", f"{q.name} ({q.kind})", p.name))
        if p.default is not None and q.default is None and q.kind not in (VAR_POSITIONAL, VAR_KEYWORD):
            rows.append(_row((path, kind, where), "default-removed", p.text(), q.text(), p.name))
        elif (
            p.default is not None
            and q.default is not None
            and p.default != q.default
            and not default_values.same_value(p, q)
        ):
            rows.append(_row((path, kind, where), "default-changed", p.text(), q.text(), p.name))
    common_old = [x for x in _positional(old) if x in n and n[x].kind in (POSITIONAL_ONLY, POSITIONAL)]
    common_new = [x for x in _positional(new) if x in o and o[x].kind in (POSITIONAL_ONLY, POSITIONAL)]
    if common_old != common_new:
        rows.append(_row((path, kind, where), "parameter-reordered", ", ".join(common_old), ", ".join(common_new)))
    return rows


def diff(old: dict[str, Entry], new: dict[str, Entry]) -> list[dict[str, Any]]:
    """Surface rows ``{"path", "change", "kind", "old", "new", "where", "param"}``
    between two surfaces, sorted by path then change (``where``: file:line of
    the candidate's definition, or of the baseline's for a removed name)."""
    rows: list[dict[str, Any]] = []
    by_leaf: dict[str, list[str]] = {}
    for path in new:
        by_leaf.setdefault(path.rsplit(".", 1)[-1], []).append(path)
    for path in sorted(set(old) | set(new)):
        a, b = old.get(path), new.get(path)
        if b is None:
            assert a is not None
            elsewhere = [p for p in by_leaf.get(path.rsplit(".", 1)[-1], []) if p not in old and new[p].kind == a.kind]
            if elsewhere:
                rows.append(
                    _row((path, a.kind, new[sorted(elsewhere)[0]].where), "moved", path, ", ".join(sorted(elsewhere)))
                )
            else:
                rows.append(_row((path, a.kind, a.where), "removed", a.signature(), "—"))
            continue
        if a is None:
            rows.append(_row((path, b.kind, b.where), "added", "—", b.signature()))
            continue
        if a.kind != b.kind:
            rows.append(_row((path, b.kind, b.where), "kind-changed", a.kind, b.kind))
        elif a.kind == "external" and a.target != b.target:
            rows.append(_row((path, b.kind, b.where), "kind-changed", a.target, b.target))
        if a.params is not None and b.params is not None:
            rows.extend(diff_params(path, b.kind, a.params, b.params, b.where))
        if b.deprecated and not a.deprecated:
            rows.append(_row((path, b.kind, b.where), "deprecated", "not deprecated", b.deprecated))
    return rows


def signatures(entries: dict[str, Entry]) -> dict[str, tuple[Param, ...] | None]:
    """``{path: params}`` for the call-site matching of ``optax_gate.gate.team_code.usage``."""
    return {p: e.params for p, e in entries.items()}
