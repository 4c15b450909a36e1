"""Check the gate's inputs before anything runs: requirement specs, lock files
and the output folder. Every check answers within seconds with an
:class:`InvalidInput` naming the bad input; the CLI turns it into exit status 2
(not verified) with the reason on stderr and in the report.

Specs are parsed with ``packaging`` (PEP 508), not by hand.
"""

from __future__ import annotations

import difflib
import os
import re
import tempfile
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name


class InvalidInput(Exception):
    """An input of the gate that cannot be used; the message names it and says why."""


def parse_specs(specs: list[str], known: set[str], allow_extra: bool = False) -> list[Requirement]:
    """Parse candidate requirement specs (``optax==0.2.8``, ``jax>=0.12``).

    Args:
      specs: the ``SPEC`` arguments of ``gate``.
      known: canonical names of the packages the baseline requires (its lock).
      allow_extra: accept packages the baseline does not require.

    Returns:
      the parsed requirements, in order.

    Raises:
      InvalidInput: a spec that is not PEP 508 (``optax=>0.2``), a package the
        baseline does not require (without ``allow_extra``; a typo such as
        ``optx`` lands here), or a package named twice. A bare SPEC (no
        version, no extras) that looks like a path (``/`` or ``.`` in it, or
        close to no package of the baseline) gets the hint ``if it is a path:
        --usage SPEC``: a second path after ``--usage`` that does not exist.
    """
    parsed: list[Requirement] = []
    seen: dict[str, str] = {}
    for spec in specs:
        path_hint = f"; if it is a path: --usage {spec} (one path per --usage)"  # a second path after --usage, missing
        try:
            req = Requirement(spec)
        except InvalidRequirement as exc:
            why = str(exc).splitlines()[0].strip()  # packaging adds the spec again with a caret under it
            raise InvalidInput(
                f"not a valid requirement: {spec!r} ({why}); write it as name==version, e.g. optax==0.2.8"
                + (path_hint if "/" in spec or spec.startswith(".") else "")
            ) from None
        name = canonicalize_name(req.name)
        if name in seen:
            raise InvalidInput(f"{name} is named twice: {seen[name]!r} and {spec!r}")
        if name not in known and not allow_extra:
            close = difflib.get_close_matches(name, sorted(known), n=3, cutoff=0.75)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            bare = not (req.specifier or req.extras or req.url or req.marker)
            raise InvalidInput(
                f"{spec!r}: the baseline does not require a package named {name!r}{hint}; "
                "pass --allow-extra to add a new package to the candidate"
                + (path_hint if bare and ("." in spec or not close) else "")
            )
        seen[name] = spec
        parsed.append(req)
    return parsed


_ENTRY = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?\s*==\s*\S+")


def lock_packages(path: Path, what: str) -> set[str]:
    """Check that ``path`` is a usable hash-pinned lock file; return the
    canonical names of the packages it pins.

    A lock is a pip requirements file in hash-checking mode, as ``uv pip
    compile --generate-hashes`` writes it: every requirement is ``name==version``
    followed by at least one ``--hash=``.

    Raises:
      InvalidInput: the file is missing, unreadable, empty, or has a
        requirement that is not pinned with ``==`` or carries no hash.
    """
    if not path.exists():
        raise InvalidInput(f"{what} {path} does not exist")
    if not path.is_file():
        raise InvalidInput(f"{what} {path} is not a file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(
            f"{what} {path} is not a text file: a lock is the text `uv pip compile --generate-hashes` writes"
        ) from None
    except OSError as exc:
        raise InvalidInput(f"{what} {path} cannot be read: {exc.strerror or exc}") from None
    entries = [e.strip() for e in re.sub(r"\\\s*\n", " ", text).splitlines()]
    entries = [e.split(" #", 1)[0] for e in entries if e and not e.startswith("#")]
    entries = [e for e in entries if not e.startswith("-") or e.startswith("--hash")]
    if not entries:
        raise InvalidInput(f"{what} {path} pins no package (empty lock file)")
    if not any(_ENTRY.match(entry) for entry in entries):  # prose, a requirements.in without pins...
        raise InvalidInput(
            f"{what} {path} is not a lock: no line pins a package as name==version with --hash "
            "(a lock is what `uv pip compile --generate-hashes REQUIREMENTS.in -o LOCK` writes)"
        )
    names: set[str] = set()
    for entry in entries:
        m = _ENTRY.match(entry)
        if not m:
            raise InvalidInput(
                f"{what} {path}: {entry.split()[0]!r} is not pinned as name==version; "
                f"compile it with uv pip compile --generate-hashes REQUIREMENTS.in -o {path.name} "
                "(./noxw -s lock does this for the pinned baseline)"
            )
        if "--hash=" not in entry:
            raise InvalidInput(
                f"{what} {path}: {m.group(0)} has no --hash; optax-gate installs hash-checked locks only: "
                f"compile it with uv pip compile --generate-hashes REQUIREMENTS.in -o {path.name} "
                "(./noxw -s lock does this for the pinned baseline)"
            )
        names.add(canonicalize_name(m.group(1)))
    return names


def shown(path: Path) -> str:
    """``path`` as a refusal names it: as the user typed it (``typed``, set by
    ``optax_gate.gate.inputs.typed_path.user_path``), followed by ``(= ABSOLUTE)``
    when the absolute path it was read as reads differently."""
    typed = getattr(path, "typed", "") or str(path)
    full = os.path.abspath(path)
    return typed if typed == full else f"{typed} (= {full})"


#: The output folders :func:`writable_folder` created in this process, deepest first (see :func:`remove_empty_created`).
CREATED: list[Path] = []


def remove_empty_created() -> None:
    """Remove the folders :func:`writable_folder` created that are still empty (an interrupted command
    leaves no empty ``--out`` folder behind); a folder holding anything stays, and so does every folder
    that existed before."""
    while CREATED:
        folder = CREATED.pop(0)
        try:
            folder.rmdir()  # only an empty folder
        except OSError:
            continue


def writable_folder(path: Path) -> None:
    """Create ``path`` if needed (the folders made are kept in :data:`CREATED`) and check a file can be
    written in it.

    Raises:
      InvalidInput: ``path`` is a file, or cannot be created or written.
    """
    if path.exists() and not path.is_dir():
        raise InvalidInput(f"the output folder {shown(path)} (set with --out) exists and is not a folder")
    new = [p for p in (path, *path.parents) if not p.exists()]  # deepest first
    try:
        path.mkdir(parents=True, exist_ok=True)
        CREATED.extend(new)
        fd, probe = tempfile.mkstemp(prefix=".write-check.", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise InvalidInput(
            f"the output folder {shown(path)} (set with --out) is not writable: {exc.strerror or exc}"
        ) from None
