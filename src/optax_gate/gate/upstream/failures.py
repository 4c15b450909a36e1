"""The failing tests of a cross-run of Optax's own tests, read from pytest's JUnit report and classified (API,
behaviour, could not tell)."""

from __future__ import annotations

import ast
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any, Literal

from optax_gate.gate.base import model
from optax_gate.gate.base.details import normalise
from optax_gate.gate.base.plain_text import shorten

#: Classes of a failure (:func:`classify`).
API: Literal["api"] = "api"
INFRA: Literal["could not tell"] = "could not tell"
BEHAVIOUR: Literal["behaviour"] = "behaviour"
#: A behaviour failure that the candidate's other packages (JAX, NumPy, ...) move and its optax alone does not
#: (``upstream_tests.split_by_cause``): listed in the section, never a finding about optax.
OTHERS: Literal["other packages"] = "other packages"
#: A failure's class (:func:`classify`, ``split``) in the report's words.
KIND_WORDS = {API: "a name on one side only", BEHAVIOUR: "changed", INFRA: "could not tell", OTHERS: "not optax"}
#: What moves a behaviour failure (``Failure.moved_by``), found by the runs with one side's optax on the other's
#: packages.
MOVED_BY = ("optax", "other packages", "both together", "not split")
_NAME_ONE_SIDE = [
    re.compile(r"cannot import name '(?P<name>[\w.]+)' from '(?P<module>optax[\w.]*)'"),
    re.compile(r"module '(?P<module>optax[\w.]*)' has no attribute '(?P<name>\w+)'"),
    re.compile(r"No module named '(?P<module>optax[\w.]*?)\.?(?P<name>\w+)'"),
    re.compile(r"(?P<name>[\w.]+)\(\) got an unexpected keyword argument '(?P<keyword>\w+)'"),
    re.compile(r"(?P<name>[\w.]+)\(\) missing \d+ required (?:positional|keyword-only) arguments?: '(?P<keyword>\w+)'"),
]
_INFRA = [
    re.compile(r"No module named '(?!optax)(?P<module>[\w.]+)'"),
    re.compile(r"cannot import name '\w+' from '(?P<module>[\w.]*(?:_test|test_utils|testing)[\w.]*)'"),
    re.compile(r"cannot import name '(?P<module>\w*(?:_test|test_utils|testing)\w*)'"),  # the helper module itself
    re.compile(r"No module named '(?P<module>optax[\w.]*(?:_test|test_utils|testing)\w*)'"),
    re.compile(r"cannot import name '\w+' from '(?!optax)(?P<module>[\w.]+)'"),
    re.compile(r"fixture '\w+' not found"),
    re.compile(r"UnparsedFlagAccessError|flags\._exceptions"),
]


@dataclass
class Failure:
    """One failing upstream test of one direction."""

    test: str  # module::Class::test, module the file's path under optax/
    text: str  # the error's first line (type: message)
    kind: Literal["api", "could not tell", "behaviour", "other packages"] = INFRA  # API, INFRA, BEHAVIOUR or OTHERS
    subject: str = ""  # the name or keyword (API), the reason (INFRA, OTHERS), the API (BEHAVIOUR)
    change: Literal["", "new", "gone", "changed"] = ""  # new/gone (API), changed (BEHAVIOUR), "" (INFRA, OTHERS)
    #: one of MOVED_BY where the environments differ beyond optax and the failure is behaviour or OTHERS; else ""
    moved_by: Literal["", "optax", "other packages", "both together", "not split"] = ""

    def as_json(self) -> model.UpstreamFailure:
        """The report's form of the failure (``upstream_tests.directions[].failures[]``)."""
        out: model.UpstreamFailure = {
            "test": self.test,
            "text": self.text,
            "kind": self.kind,
            "subject": self.subject,
            "change": self.change,
        }
        if self.moved_by:
            out["moved_by"] = self.moved_by
        return out


@dataclass
class Direction:
    """The run of one direction."""

    label: str
    tests_of: str
    env: str
    files: list[str] = field(default_factory=list)
    ran: int = 0
    failed: list[Failure] = field(default_factory=list)
    seconds: float = 0.0
    overlay: list[str] = field(default_factory=list)
    error: str = ""
    #: the control run in the tests' own environment: failing test ids re-run, files that failed to collect collected
    control_tests: int = 0
    control_files: int = 0
    control_seconds: float = 0.0
    #: the split by cause (``upstream_tests.split_by_cause``): test ids re-run with one side's optax on the
    #: other side's packages, the seconds, and why it could not run ("" when it ran or was not needed)
    split_tests: int = 0
    split_seconds: float = 0.0
    split_error: str = ""


def first_line(text: str) -> str:
    """The error line of a JUnit failure text: the last ``E   `` line naming an
    exception (``E   TypeError: ...``), else the message's first line."""
    errors = [line[1:].strip() for line in (text or "").splitlines() if line.startswith("E ")]
    named = [e for e in errors if re.match(r"[\w.]*(?:Error|Exception|Failed|Warning)\b|[\w.]+Error:", e)]
    pick = (
        named[-1]
        if named
        else errors[0]
        if errors
        else (text or "").strip().splitlines()[0]
        if (text or "").strip()
        else ""
    )
    return " ".join(pick.split())


def read_junit(xml_text: str, files: list[str]) -> tuple[int, list[Failure]]:
    """(tests run, failures) of a pytest JUnit XML report (xunit1) of a run of
    the test ``files`` (relative paths under optax, copied under the run's
    root with the same paths). A collection error counts as one failing test
    named after its file."""
    modules = {f[:-3].replace("/", "."): f for f in files}
    root = ET.fromstring(xml_text)
    ran, failed = 0, []
    for case in root.iter("testcase"):
        if case.find("skipped") is not None:
            continue
        ran += 1
        bad = case.find("failure") if case.find("failure") is not None else case.find("error")
        if bad is None:
            continue
        dotted = case.get("classname") or ""
        file_ = next(
            (
                f
                for m, f in sorted(modules.items(), key=lambda kv: -len(kv[0]))
                if dotted == m or dotted.startswith(m + ".")
            ),
            "",
        )
        if not file_:  # a collection error: its name is the module's
            file_ = modules.get(case.get("name", ""), case.get("name", "?"))
            test = file_
        else:
            cls = dotted[len(file_[:-3]) + 1 :]
            test = "::".join(part for part in (file_, cls, case.get("name", "")) if part)
        failed.append(
            Failure(test=test, text=first_line((bad.text or "") or bad.get("message", "")) or bad.get("message", ""))
        )
    return ran, failed


def classify(failure: Failure, tests_of_side: str) -> Failure:
    """Set ``failure``'s kind, subject and change (see the module docstring).
    ``tests_of_side``: whose tests these are (``baseline``: a name missing in
    the other environment is ``gone``; ``candidate``: ``new``)."""
    text = failure.text
    for pattern in _INFRA:
        m = pattern.search(text)
        if m:
            failure.kind, failure.change = INFRA, ""
            failure.subject = f"test helper or dependency `{m.groupdict().get('module') or m[0]}`"
            return failure
    for pattern in _NAME_ONE_SIDE:
        m = pattern.search(text)
        if m:
            parts = m.groupdict()
            name = ".".join(p for p in (parts.get("module"), parts.get("name")) if p)
            failure.kind = API
            failure.subject = f"{name}(..., {parts['keyword']}=)" if parts.get("keyword") else name
            failure.change = "gone" if tests_of_side == "baseline" else "new"
            return failure
    failure.kind, failure.change = BEHAVIOUR, "changed"
    return failure


def public_names(source: str) -> list[str]:
    """The public top-level function and class names of a module's source."""
    tree = ast.parse(source)
    return [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and not n.name.startswith("_")]


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def api_of(test: str, names: list[str], module: str) -> str:
    """The API a failing upstream test is about: the longest of the tested
    module's public ``names`` that its class or test name spells
    (``ScaleGradientTest::test_scale_gradient_pytree`` -> ``scale_gradient``),
    as ``optax.<module path>.<name>``; the module itself when none does."""
    parts = test.split("::")[1:]
    spelled = "_" + "_".join(_snake(p) for p in parts) + "_"
    hits = [n for n in names if f"_{_snake(n)}_" in spelled or f"_{n.lower()}_" in spelled]
    dotted = "optax." + module[:-3].replace("/", ".")
    return f"{dotted}.{max(hits, key=len)}" if hits else dotted


#: What a behaviour finding says of its split by cause (``split.split_by_cause``), when all its failures agree.
MOVED_WORDS = {
    "optax": "it moves with optax: the candidate's optax alone gives it on the baseline's other packages",
    "both together": "it needs both the candidate's optax and its other packages: neither alone gives it",
}


def findings(directions: list[Direction]) -> list[dict[str, Any]]:
    """The report findings of the classified failures (API and behaviour; the failures that could not be told and
    those that move with the other packages are listed in the section, not here): one per API and change across
    both directions for a changed behaviour (its distinct error lines named, at most two), one per direction,
    change and name for a name on one side; in the report's finding form (section ``upstream-tests``,
    ``contracts`` holding the upstream tests)."""
    groups: dict[tuple[str, str, str, str], list[tuple[str, Failure]]] = {}
    for d in directions:
        for f in d.failed:
            if f.kind in (INFRA, OTHERS):
                continue
            groups.setdefault((f.kind, f.change, f.subject, d.label if f.kind == API else ""), []).append((d.label, f))
    out = []
    order = {"changed": 0, "new": 1, "gone": 2}
    for (kind, change, subject, label), pairs in sorted(
        groups.items(), key=lambda kv: (order[kv[0][1]], -len(kv[1]), kv[0][2])
    ):
        fails = [f for _, f in pairs]
        tests = [f.test for f in fails]
        if kind == API:
            side = "the baseline" if change == "gone" else "the candidate"
            cause = f"upstream tests ({label}): `{subject}` exists in {side} only"
        else:
            errors: dict[str, tuple[str, str]] = {}  # one line per error pattern, with the direction it came from
            for where, f in pairs:
                errors.setdefault(normalise(f.text), (where, f.text))
            said = [f"{shorten(text, 110)} ({where})" for where, text in list(errors.values())[:2]]
            more = f"; and {len(errors) - 2} more errors" if len(errors) > 2 else ""
            cause = "upstream tests fail: " + "; ".join(said) + more
            moved = {f.moved_by for f in fails}
            if len(moved) == 1 and (words := MOVED_WORDS.get(moved.pop())):
                cause += f"; {words}"
        named = ", ".join(f"`{t}`" for t in tests[:3]) + (f" and {len(tests) - 3} more" if len(tests) > 3 else "")
        out.append(
            {
                "section": "upstream-tests",
                "change": change,
                "api": subject if kind == BEHAVIOUR else subject.split("(")[0],
                "apis": [subject if kind == BEHAVIOUR else subject.split("(")[0]],
                "cause": cause,
                "key": f"upstream-{kind}",
                "contracts": tests,
                "tests": [[t, 1] for t in tests],
                "text": f"`{subject}`: {cause} ({len(tests)} upstream test{'s' if len(tests) > 1 else ''}: {named})",
            }
        )
    return out
