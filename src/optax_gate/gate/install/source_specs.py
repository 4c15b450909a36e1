"""Source candidates: a pure-Python package (optax, flax) built from a git commit instead of taken from the
package index.

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

import contextlib
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, cast

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from optax_gate.gate.base import model
from optax_gate.gate.inputs.requirements import canonical_name
from optax_gate.gate.inputs.typed_path import user_path
from optax_gate.gate.inputs.validate import InvalidInput
from optax_gate.gate.install import source_build

#: Packages the gate builds from source: pure Python, a wheel in seconds.
FROM_SOURCE = ("optax", "flax")
COMPILED = ("jax", "jaxlib")


@dataclass(frozen=True)
class SourceSpec:
    """One package to build from source: ``repo`` (a local path or a URL) at
    ``ref`` (``HEAD`` when none was given: a checkout's current commit, a
    remote's default branch); ``given`` is the spec as typed."""

    name: str
    repo: str
    ref: str
    given: str


class SourceFailure(Exception):
    """A source candidate could not be built; ``record`` describes it for the report."""

    def __init__(self, message: str, record: model.SourceBuild):
        super().__init__(message)
        self.record = record


def _split_ref(location: str) -> tuple[str, str]:
    """``(repository, ref)`` of ``LOCATION[@REF]``: the text after the last
    ``@`` is a ref unless it is empty, holds ``:`` (``git@host:path``) or
    the ``@`` ends a URL's user name (``ssh://git@host/path``)."""
    head, at, ref = location.rpartition("@")
    userinfo = "://" in head and "/" not in head.split("://", 1)[1]  # ssh://git@host/path: no ref
    if not at or not head or not ref or ":" in ref or head.endswith(("://", "/")) or userinfo:
        return location, "HEAD"
    return head, ref


def _check_name(name: str, given: str) -> str:
    name = canonicalize_name(name)
    if name in COMPILED:
        raise InvalidInput(
            f"{given!r}: {name} cannot be built from source by the gate: it is compiled (C++ and XLA; a build takes "
            "hours and a toolchain), not pure Python; use a published release or pre-release instead "
            f"({name}==VERSION; pre-releases are on the package index)"
        )
    if name not in FROM_SOURCE:
        raise InvalidInput(
            f"{given!r}: only {' and '.join(FROM_SOURCE)} (pure Python) can be built from source, not {name}"
        )
    return name


def _check_checkout(folder: str, spec: str) -> None:
    """Refuse a ``file://`` SPEC that names no folder, a ``PATH@REF`` (that form
    takes no ref), or a folder inside a git checkout rather than its top.

    Raises:
      InvalidInput: saying which, and the form to use instead.
    """
    path = Path(folder)
    if not path.exists():
        base, at, ref = folder.rpartition("@")
        if at and Path(base).is_dir():
            raise InvalidInput(
                f"{spec!r}: a file:// SPEC builds the checkout's current commit and takes no @REF; "
                f"name the commit with --source NAME={base}@{ref} or 'NAME @ git+file://{base}@{ref}'"
            )
        raise InvalidInput(f"{spec!r}: no such file or folder: {folder}")
    try:
        top = source_build.git_output(["-C", folder, "rev-parse", "--show-toplevel"]).strip()
    except source_build.SourceBuildError:
        return  # not a checkout (a bare repository, or no repository: the build says which)
    if top and Path(top).resolve() != path.resolve():
        raise InvalidInput(
            f"{spec!r}: {folder} is a folder inside the git checkout {top}, not its top; name the checkout "
            f"itself: file://{top}"
        )


def from_spec(spec: str) -> SourceSpec | None:
    """The source candidate a SPEC asks for, or None for an ordinary requirement
    (a version, or a URL of a wheel or sdist file).

    Raises:
      InvalidInput: a source spec for a package other than optax or flax.
    """
    try:
        req = Requirement(spec)
    except InvalidRequirement:
        return None  # validate.parse_specs says why
    if not req.url:
        return None
    url = req.url.split("#", 1)[0]
    if url.startswith("git+"):
        repo, ref = _split_ref(url[len("git+") :])
        if repo.startswith("file://"):
            repo = urllib.request.url2pathname(urllib.parse.urlparse(repo).path)
    elif url.startswith("file:"):
        repo, ref = urllib.request.url2pathname(urllib.parse.urlparse(url).path), "HEAD"
        if Path(repo).is_file():
            return None  # a wheel or sdist file: uv installs it as it is
        _check_checkout(repo, spec)
    else:
        return None
    return SourceSpec(_check_name(req.name, spec), repo, ref, spec.strip())


def from_option(text: str) -> SourceSpec:
    """The source candidate of ``--source NAME=PATH_OR_URL[@REF]``.

    Raises:
      InvalidInput: no ``=``, an empty location, or a package other than optax or flax.
    """
    name, eq, location = text.partition("=")
    if not eq or not name.strip() or not location.strip():
        raise InvalidInput(f"--source {text!r}: write it as NAME=PATH_OR_URL[@REF], e.g. optax=../optax@main")
    repo, ref = _split_ref(location.strip())
    if not source_build.is_url(repo):
        repo = str(user_path(repo))  # read from where the user stands, like every path option
    return SourceSpec(_check_name(name.strip(), f"--source {text}"), repo, ref, f"--source {text}")


def split(specs: list[str], options: list[str] | None) -> tuple[list[str], list[SourceSpec]]:
    """The SPECs that are ordinary requirements, and the source candidates of
    the SPECs and the ``--source`` options.

    Raises:
      InvalidInput: see ``from_spec`` and ``from_option``; a package named
        both by a SPEC and by ``--source``, or twice by ``--source``.
    """
    plain, sources = [], []
    for spec in specs:
        source = from_spec(spec)
        (sources.append(source) if source else plain.append(spec))
    named = {}
    for spec in specs:
        with contextlib.suppress(ValueError):  # validate.parse_specs says why
            named[canonical_name(spec)] = spec
    for text in options or []:
        source = from_option(text)
        if source.name in named:
            raise InvalidInput(f"{source.name} is named twice: {named[source.name]!r} and {source.given!r}")
        named[source.name] = source.given
        sources.append(source)
    return plain, sources


def record(source: SourceSpec, built: source_build.BuiltWheel | None = None, message: str = "") -> model.SourceBuild:
    """What the report says of one source candidate: ``{"package", "given",
    "repository", "ref", "status": "built" | "failed", "commit": {"sha",
    "short", "date", "subject", "pr"} | null, "wheel", "sha256", "dirty":
    [paths with uncommitted changes], "message"}``."""
    out: model.SourceBuild = {
        "package": cast(Literal["optax", "flax"], source.name),  # from_spec and from_option take only these
        "given": source.given,
        "repository": source.repo,
        "ref": source.ref,
        "status": "built" if built else "failed",
        "commit": cast(model.SourceCommit, asdict(built.commit)) if built else None,
        "wheel": built.path.name if built else None,
        "sha256": built.sha256 if built else None,
        "dirty": [],
        "message": message,
    }
    if built:
        try:
            out["dirty"] = source_build.dirty(source.repo)
        except source_build.SourceBuildError as exc:
            out["dirty"] = [f"(cannot tell: {exc.message})"]
    return out


def build(
    sources: list[SourceSpec], cache_dir: Path, timeout: float, say: Callable[[str], None] = lambda message: None
) -> tuple[list[str], list[model.SourceBuild]]:
    """Build (or take from the cache) each source candidate's wheel.

    Returns:
      the requirement of each wheel (``optax @ file:///…/optax-….whl``) and
      each candidate's report record (see ``record``).

    Raises:
      SourceFailure: a build failed (fetch, checkout or build stage); its
        message names the package, the stage and git's or uv's message.
    """
    specs, records = [], []
    for source in sources:
        say(f"building {source.name} from source ({source.repo} at {source.ref})")
        try:
            built = source_build.build_wheel(source.repo, source.ref, cache_dir, timeout)
        except source_build.SourceBuildError as exc:
            message = f"{source.name} from source ({source.repo} at {source.ref}): {exc}"
            raise SourceFailure(message, record(source, message=message)) from None
        records.append(record(source, built))
        say(f"{source.name}: built {built.path.name} from {built.commit.short} {built.commit.subject}")
        specs.append(f"{source.name} @ {built.path.resolve().as_uri()}")
    return specs, records


def pinned_hashes(lock_text: str, name: str) -> tuple[str | None, list[str]]:
    """``(URL, [sha256 hex, ...])`` of the ``NAME @ URL`` entry of a lock text
    (``uv pip compile --generate-hashes`` output), or ``(None, [])``."""
    url, hashes, inside = None, [], False
    for raw in lock_text.splitlines():
        line = raw.strip()
        if raw[:1] not in (" ", "\t", "") and not line.startswith("#"):
            head = line.split(" @ ", 1)
            inside = len(head) == 2 and canonicalize_name(head[0].split("[")[0]) == name
            if inside:
                url = head[1].split()[0]
        if inside:
            hashes += [part.split(":", 1)[1] for part in line.split() if part.startswith("--hash=sha256:")]
    return url, hashes


def check_lock(lock: Path, records: list[model.SourceBuild]) -> None:
    """Fail closed unless the compiled lock pins each built wheel by exactly its SHA-256.

    Raises:
      SourceFailure: a wheel missing from the lock, or pinned by another hash.
    """
    text = lock.read_text(encoding="utf-8")
    for entry in records:
        url, hashes = pinned_hashes(text, entry["package"])
        if url is None or not url.endswith(f"/{entry['wheel']}") or hashes != [entry["sha256"]]:
            message = (
                f"the candidate lock does not pin the {entry['package']} wheel built from source by its SHA-256 "
                f"{entry['sha256']} (found {url or 'no entry'} with {hashes or 'no hash'})"
            )
            raise SourceFailure(message, {**entry, "status": "failed", "message": message})


def markdown(run: Mapping[str, Any]) -> list[str]:
    """Report lines naming each package a run built from source."""
    out = []
    for entry in run.get("sources") or []:
        if entry["status"] != "built":
            out.append(
                f"- **{entry['package']} from source: build failed** (`{entry['repository']}` at "
                f"`{entry['ref']}`; the reason above)"
            )
            continue
        c = entry["commit"]
        pr = f" (#{c['pr']})" if c.get("pr") and f"#{c['pr']}" not in c["subject"] else ""
        line = (
            f"- **{entry['package']} built from source** (unreleased): commit `{c['short']}` {c['date']} "
            f"“{c['subject']}”{pr} of `{entry['repository']}` at `{entry['ref']}`; wheel `{entry['wheel']}`, "
            f"sha256 `{entry['sha256'][:16]}…`"
        )
        if entry.get("dirty"):
            shown = ", ".join(f"`{p}`" for p in entry["dirty"][:5]) + (" …" if len(entry["dirty"]) > 5 else "")
            line += (
                f"; **the checkout has uncommitted changes** ({len(entry['dirty'])} path(s): {shown}), "
                "which the wheel does not contain (it is built from the commit)"
            )
        out.append(line)
    return out
