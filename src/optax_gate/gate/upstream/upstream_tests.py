"""Optax's own shipped tests, cross-run between the two versions (``gate --upstream-tests``), their failures classified
(``docs/module-notes.md``)."""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from optax_gate.gate.base import model
from optax_gate.gate.base.plain_text import shorten
from optax_gate.gate.install import missing_requirements
from optax_gate.gate.surface import public_api
from optax_gate.gate.upstream import split
from optax_gate.gate.upstream.failures import (
    API,
    BEHAVIOUR,
    INFRA,
    KIND_WORDS,
    Direction,
    Failure,
    api_of,
    classify,
    findings,
    public_names,
    read_junit,
)
from optax_gate.gate.upstream.pytest_run import CrossRunFailure, Pytest, process_env, run_pytest, with_overlay

#: Directions: (label, tests of which side, run in which environment).
DIRECTIONS = (
    ("baseline tests in the candidate", "baseline", "candidate"),
    ("candidate tests in the baseline", "candidate", "baseline"),
)
#: Import name -> distribution name of the test dependencies that differ.
DISTRIBUTIONS = {"absl": "absl-py", "sklearn": "scikit-learn", "yaml": "pyyaml"}


def module_files(pkg: Path) -> dict[str, bytes]:
    """Relative posix path -> SHA-256 of each ``.py`` file of the optax package
    folder ``pkg`` that is neither a test nor a test helper (:data:`HELPER_NAMES`)."""
    return {
        p.relative_to(pkg).as_posix(): hashlib.sha256(p.read_bytes()).digest()
        for p in sorted(pkg.rglob("*.py"))
        if not p.name.endswith("_test.py")
        and "__pycache__" not in p.parts
        and not any(h in p.stem for h in HELPER_NAMES)
    }


def changed_modules(base: Path, cand: Path) -> list[str]:
    """The modules (relative paths) whose source differs between the two package folders, or on one side only."""
    a, b = module_files(base), module_files(cand)
    return sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))


def tests_of(pkg: Path, modules: list[str]) -> list[str]:
    """The shipped test files (relative paths) of ``modules`` in ``pkg``: ``x/y.py`` -> ``x/y_test.py``."""
    return [t for m in modules if (pkg / (t := m[:-3] + "_test.py")).is_file()]


def imports(files: list[Path]) -> set[str]:
    """The top-level module names the files import (read with ``ast``; relative imports left out)."""
    names = set()
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names)


def missing(python: Path, names: set[str], timeout: float = 120) -> list[str]:
    """The names of ``names`` that ``python``'s environment cannot import (``importlib.util.find_spec``)."""
    code = (
        "import importlib.util, json, sys; print(json.dumps(sorted(n for n in json.loads(sys.argv[1]) if "
        "importlib.util.find_spec(n) is None)))"
    )
    proc = subprocess.run(
        [str(python), "-c", code, json.dumps(sorted(names))],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=process_env({}),
    )
    if proc.returncode != 0:
        raise CrossRunFailure(f"the environment's imports cannot be checked: {shorten(proc.stderr, 200)}")
    absent: list[str] = json.loads(proc.stdout.strip().splitlines()[-1])
    return absent


def overlay(python: Path, names: list[str], cache_dir: Path, timeout: float) -> Path | None:
    """A folder with the distributions of ``names`` for ``python``, resolved
    with the environment's versions as constraints and without them (None
    when ``names`` is empty). Never installs into the environment itself.

    Raises:
      CrossRunFailure: uv could not list the environment or install them.
    """
    if not names:
        return None
    wanted = sorted(DISTRIBUTIONS.get(n, n) for n in names)
    try:
        return missing_requirements.install_beside(python, wanted, cache_dir / "upstream-tests-deps", timeout)
    except missing_requirements.ListingFailure as exc:
        raise CrossRunFailure(str(exc)) from None
    except missing_requirements.DepsFailure as exc:
        raise CrossRunFailure(
            f"the test dependencies {', '.join(wanted)} cannot be installed beside the environment: {exc}"
        ) from None


#: Test helper modules shipped beside the tests (``optax/_src/test_utils.py`` in 0.2.8): names containing these.
HELPER_NAMES = ("test_utils", "testing")
#: Written into the run's folder: registers the test side's helper modules
#: under their optax names when the environment's optax lacks them (its own
#: wins), so that a test importing a helper new on its side can still run.
_CONFTEST = """\
import importlib, importlib.util, sys
from pathlib import Path
_HELPERS = Path(__file__).parent / "_optax_helpers"
for path in sorted(_HELPERS.rglob("*.py")):
    name = "optax." + ".".join(path.relative_to(_HELPERS).with_suffix("").parts)
    try:
        importlib.import_module(name)
    except ImportError:
        try:
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
            parent, _, leaf = name.rpartition(".")
            setattr(importlib.import_module(parent), leaf, module)
        except Exception:  # the helper needs what this optax lacks: its tests read could-not-tell
            sys.modules.pop(name, None)
"""


def helpers(pkg: Path) -> list[str]:
    """The test helper modules (relative paths) shipped in the optax package folder ``pkg``."""
    return sorted(
        p.relative_to(pkg).as_posix()
        for p in pkg.rglob("*.py")
        if not p.name.endswith("_test.py") and any(h in p.stem for h in HELPER_NAMES) and "__pycache__" not in p.parts
    )


@dataclass(frozen=True)
class CrossRunOptions:
    """How the cross-run runs: ``cache_dir``, where the overlays of missing
    test dependencies are kept; ``timeout``, seconds of each pytest run;
    ``extra_env``, per side (``baseline``, ``candidate``), the environment
    variables of its processes (its compilation cache); ``workers``,
    pytest-xdist processes of a run."""

    cache_dir: Path
    timeout: float = 1800
    extra_env: dict[str, dict[str, str]] = field(default_factory=dict)
    workers: int = 2


def control(
    python: Path, root: Path, d: Direction, suspects: list[Failure], env: dict[str, str], options: CrossRunOptions
) -> set[str]:
    """The control run of ``suspects`` (failures of the cross-run) with
    ``python``, their own environment, in the run's folder ``root``: the
    failing test ids re-run (``file::Class::test``; nothing else of their
    files), and each file that failed to collect (a failure named after its
    file) only collected (``--collect-only``: whether it imports there; its
    tests are not run, so optax's ``alias_test.py`` costs its import, not its
    thousands of tests). Returns the names (test ids, files) that fail there
    too; records in ``d`` (whose ``files`` were copied into ``root``) how
    many tests re-ran and files were collected. ``env``: the variables of
    the suspects' own environment (its overlay on ``PYTHONPATH``).

    Raises:
      CrossRunFailure: pytest wrote no report.
    """
    ids = sorted({f.test for f in suspects if "::" in f.test})
    files = sorted({f.test for f in suspects if "::" not in f.test})
    failing: set[str] = set()
    for names, xml, collect in ((ids, "control.xml", False), (files, "control-collect.xml", True)):
        if not names:
            continue
        run_pytest(
            python,
            root,
            names,
            root / xml,
            Pytest(env, 1 if collect else min(options.workers, len(names)), options.timeout, collect_only=collect),
        )
        if not (root / xml).is_file():
            raise CrossRunFailure(
                f"pytest wrote no report for the control run of {len(names)} "
                f"{'file' if collect else 'test'}{'s' if len(names) > 1 else ''}"
            )
        failing |= {f.test for f in read_junit((root / xml).read_text(encoding="utf-8"), d.files)[1]}
    d.control_tests, d.control_files = len(ids), len(files)
    return failing


def public_surface(site: Path) -> dict[str, public_api.Entry]:
    """optax's public API in ``site`` (``gate.surface.public_api``), read without importing it; {} when it cannot
    be read (the private names are then said as they are)."""
    try:
        return public_api.surface(site, ("optax",))
    except Exception:  # a surface that cannot be read costs the names their public form, never the cross-run
        return {}


def public_paths(site: Path) -> dict[str, str]:
    """Each object of optax's public API in ``site`` by where it is defined -> its shortest public path
    (``optax.tree_utils._tree_math.tree_max`` -> ``optax.tree.max``)."""
    return shortest_paths(public_surface(site))


def shortest_paths(entries: dict[str, public_api.Entry]) -> dict[str, str]:
    """:func:`public_paths` of a surface already read."""
    best: dict[str, str] = {}
    for path, entry in entries.items():
        target = entry.target or path
        if target not in best or (path.count("."), len(path)) < (best[target].count("."), len(best[target])):
            best[target] = path
    return best


def run_direction(
    d: Direction,
    pkg: dict[str, Path],
    pythons: dict[str, Path],
    options: CrossRunOptions,
    others: list[str] | None = None,
    say: Callable[[str], None] = print,
) -> Direction:
    """Run ``d``'s test files (already chosen in ``d.files``) of ``pkg[d.tests_of]``
    with ``pythons[d.env]``; a control run of the failures with
    ``pythons[d.tests_of]``, their own environment (:func:`control`: the
    failing test ids re-run, the files that failed to collect only
    collected), turns those that fail there too into ``could not tell``;
    where the environments differ beyond optax (``others``), the behaviour
    failures left are split by cause (:func:`split.split_by_cause`). Fills ``d`` in place; ``say``:
    a console line as each of the three runs starts.

    Raises:
      CrossRunFailure: no JUnit report came back, or the overlay cannot be installed.
    """
    start = time.monotonic()
    workers, cache_dir, timeout, extra_env = options.workers, options.cache_dir, options.timeout, options.extra_env
    with tempfile.TemporaryDirectory(prefix="optax-upstream-tests-") as tmp:
        root = Path(tmp)
        (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        (root / "conftest.py").write_text(_CONFTEST, encoding="utf-8")
        for rel in helpers(pkg[d.tests_of]):
            (root / "_optax_helpers" / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(pkg[d.tests_of] / rel, root / "_optax_helpers" / rel)
        for rel in d.files:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(pkg[d.tests_of] / rel, root / rel)
        needed = imports([root / rel for rel in d.files]) - {"optax"}
        lacking = missing(pythons[d.env], needed | {"xdist"})
        if "xdist" in lacking:  # pytest-xdist is the environment's; without it the run is serial
            lacking.remove("xdist")
            workers = 1
        d.overlay = sorted(DISTRIBUTIONS.get(n, n) for n in lacking)
        folder = overlay(pythons[d.env], lacking, cache_dir, timeout)
        env = with_overlay(extra_env.get(d.env, {}), folder)
        xml = root / "junit.xml"
        say(f"upstream tests: {d.label}: running {len(d.files)} test files")
        run_pytest(pythons[d.env], root, d.files, xml, Pytest(env, workers, timeout))
        if not xml.is_file():
            raise CrossRunFailure(f"pytest wrote no report for the {d.label}")
        d.ran, d.failed = read_junit(xml.read_text(encoding="utf-8"), d.files)
        for f in d.failed:
            classify(f, d.tests_of)
        suspects = [f for f in d.failed if f.kind != INFRA]
        if suspects:  # the control: do they pass (or collect) in their own environment?
            say(f"upstream tests: {d.label}: {len(suspects)} failures re-run in their own environment (the control)")
            control_start = time.monotonic()
            home_lacking = missing(pythons[d.tests_of], needed)
            home = overlay(pythons[d.tests_of], home_lacking, cache_dir, timeout)
            at_home = control(
                pythons[d.tests_of],
                root,
                d,
                suspects,
                with_overlay(extra_env.get(d.tests_of, {}), home),
                dataclasses.replace(options, workers=workers),
            )
            for f in suspects:
                if f.test in at_home or f.test.split("::")[0] in at_home:
                    f.kind, f.change, f.subject = INFRA, "", f"fails in its own environment ({d.tests_of}) too"
            d.control_seconds = round(time.monotonic() - control_start, 1)
            deps = {d.env: folder, d.tests_of: home}
            envs = {side: extra_env.get(side, {}) for side in ("baseline", "candidate")}
            if others and any(f.kind == BEHAVIOUR for f in d.failed):
                say(
                    f"upstream tests: {d.label}: splitting the changed behaviours by cause (optax or the "
                    "other packages)"
                )
            split.split_by_cause(split.Split(root, d, pkg, pythons, deps, envs, timeout), others or [])
    d.seconds = round(time.monotonic() - start, 1)
    return d


def cross_run(
    sites: dict[str, Path], pythons: dict[str, Path], options: CrossRunOptions, say: Callable[[str], None] = print
) -> model.UpstreamTests:
    """The report's ``upstream_tests`` section: both directions run and classified.

    Args:
      sites: ``{"baseline": site-packages, "candidate": site-packages}`` (each holding ``optax/``).
      pythons: the two environments' interpreters, by the same keys.
      options: the overlays' folder, each run's timeout, the sides' variables, the workers (:class:`CrossRunOptions`).
      say: progress lines.

    Returns:
      ``{"changed_modules", "other_packages", "directions": [{"label", "files", "ran", "failed", "seconds", "overlay",
      "control": {"tests", "files", "seconds"}, "split": {"tests", "seconds", "error"},
      "failures": [{"test", "text", "kind", "subject", "change", "moved_by"?}]}], "findings", "seconds"}``;
      ``control``: the control run's re-run test ids, collected files and seconds; ``split``: the split by cause
      (:func:`split.split_by_cause`); ``other_packages``: what differs besides optax (:func:`split.other_packages`).

    Raises:
      CrossRunFailure: an optax package folder is missing, or a run gave no report.
    """
    start = time.monotonic()
    pkg = {side: Path(site) / "optax" for side, site in sites.items()}
    for side, folder in pkg.items():
        if not (folder / "__init__.py").is_file():
            raise CrossRunFailure(f"the {side} has no installed optax package at {folder}")
    changed = changed_modules(pkg["baseline"], pkg["candidate"])
    say(f"upstream tests: {len(changed)} optax modules differ")
    others = split.other_packages(pythons, options.extra_env)
    if others:
        say(
            f"upstream tests: besides optax, {len(others)} distributions differ "
            f"({', '.join(others[:3])}{' ...' if len(others) > 3 else ''})"
        )
    directions = []
    for label, tests_side, env_side in DIRECTIONS:
        d = Direction(label, tests_side, env_side, files=tests_of(pkg[tests_side], changed))
        say(f"upstream tests: {label}: {len(d.files)} test files")
        if d.files:
            run_direction(d, pkg, pythons, options, others, say)
        say(f"upstream tests: {label}: {d.ran} run, {len(d.failed)} failed ({d.seconds:.0f} s)")
        directions.append(d)
    names: dict[str, list[str]] = {}
    for d in directions:
        for f in d.failed:
            if f.kind == BEHAVIOUR:
                module = f.test.split("::")[0].replace("_test.py", ".py")
                src = pkg[d.tests_of] / module
                if module not in names:
                    names[module] = public_names(src.read_text(encoding="utf-8")) if src.is_file() else []
                f.subject = api_of(f.test, names[module], module)
    surfaces = {side: public_surface(Path(site)) for side, site in sites.items()}
    public = {side: shortest_paths(entries) for side, entries in surfaces.items()}
    for d in directions:
        for f in d.failed:  # a name on one side is that side's; a behaviour, the tested module's side
            if f.kind in (BEHAVIOUR, API):
                owner = d.tests_of if f.kind == BEHAVIOUR else ("baseline" if f.change == "gone" else "candidate")
                name, paren, rest = f.subject.partition("(")
                shown = public[owner].get(name, name)
                other = "candidate" if owner == "baseline" else "baseline"
                if f.kind == API and not paren and shown != name and shown in surfaces[other]:
                    f.kind, f.change = INFRA, ""  # a private path on one side; what it names is public on both
                    f.subject = (
                        f"the test imports the private `{name}`, on one side only; what it names is public on both "
                        f"sides as `{shown}`"
                    )
                    continue
                f.subject = shown + paren + rest
    return {
        "changed_modules": changed,
        "directions": [
            {
                "label": d.label,
                "files": d.files,
                "ran": d.ran,
                "failed": len(d.failed),
                "seconds": d.seconds,
                "overlay": d.overlay,
                "control": {"tests": d.control_tests, "files": d.control_files, "seconds": d.control_seconds},
                "split": {"tests": d.split_tests, "seconds": d.split_seconds, "error": d.split_error},
                "failures": [f.as_json() for f in d.failed],
            }
            for d in directions
        ],
        "other_packages": others,
        "findings": findings(directions),
        "seconds": round(time.monotonic() - start, 1),
    }


def note(section: model.UpstreamTests) -> str:
    """The report's one note on a cross-run: its time, the modules that differ, each direction's counts and its
    failures per class in the report's words; its findings are listed (``section["findings"]``) and do not change
    the verdict."""
    runs = []
    for d in section["directions"]:
        counts: dict[str, int] = {}
        for f in d["failures"]:
            counts[f["kind"]] = counts.get(f["kind"], 0) + 1
        words = ", ".join(f"{n} {KIND_WORDS.get(k, k)}" for k, n in sorted(counts.items()))
        runs.append(f"{d['label']}: {d['ran']} run, {d['failed']} failed" + (f" ({words})" if words else ""))
    return (
        f"upstream tests cross-run ({section['seconds']:.0f} s; {len(section['changed_modules'])} modules differ): "
        f"{'; '.join(runs)}; its {len(section['findings'])} finding(s) are listed, they do not change the verdict"
    )
