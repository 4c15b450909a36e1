"""Build a wheel of a pure-Python package (optax, flax) at one git commit.

git and uv run as subprocesses; nothing of the package is imported here. The
user's repository is only read: a commit is checked out in a temporary clone
that shares the repository's objects (``git clone --shared``), never in the
user's work tree. Wheels are cached by commit SHA, so a commit is built once
whichever run (a source candidate, a bisection step) asks for it.

``repo`` is a local path (a bare repository or a checkout; read in place) or a
URL (``https://…``, ``file://…``, ``git@…``), cloned bare once into the cache
and fetched again on each later use.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from optax_gate.gate.base import atomic
from optax_gate.gate.install.environments import EnvironmentFailure, run_uv

#: The file that marks a complete cache entry; written last, atomically.
BUILT_FILE = "built.json"
_PR = (re.compile(r"\(#(\d+)\)\s*$"), re.compile(r"^Merge pull request #(\d+)\b"))
_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*://|^[^/\s]+@[^/\s]+:")


class SourceBuildError(Exception):
    """A commit could not be fetched, checked out or built.

    Attributes:
      stage: ``fetch``, ``checkout`` or ``build``.
      message: git's or uv's own explanation (the tail of its output).
    """

    def __init__(self, stage: str, message: str):
        super().__init__(f"source build failed at the {stage} stage: {message}")
        self.stage, self.message = stage, message


@dataclass(frozen=True)
class Commit:
    """One commit: full and short SHA, committer date (ISO 8601: when it landed on its branch), subject line and
    the pull request number its subject names (``… (#1234)`` or ``Merge pull
    request #1742 …``), else None."""

    sha: str
    short: str
    date: str
    subject: str
    pr: int | None


@dataclass(frozen=True)
class BuiltWheel:
    """A wheel built from ``commit``: its path (in the cache) and SHA-256 (hex)."""

    path: Path
    sha256: str
    commit: Commit


def is_url(repo: str | os.PathLike[str]) -> bool:
    """Whether ``repo`` names a remote (``scheme://…`` or ``user@host:path``)
    rather than a local path."""
    return bool(_SCHEME.match(str(repo)))


def pr_number(subject: str) -> int | None:
    """The pull request number a commit subject names, else None."""
    for pattern in _PR:
        match = pattern.search(subject)
        if match:
            return int(match.group(1))
    return None


def _git(stage: str, args: list[str], timeout: float, cwd: Path | None = None) -> str:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "LC_ALL": "C"}
    try:
        proc = subprocess.run(["git", *args], capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise SourceBuildError(stage, f"git {args[0]} timed out after {timeout:.0f} s") from None
    except OSError as e:
        raise SourceBuildError(stage, f"cannot run git: {e}") from None
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-8:]
        raise SourceBuildError(
            stage,
            " | ".join(line.strip() for line in tail if line.strip()) or f"git {args[0]} exited {proc.returncode}",
        )
    return proc.stdout


def git_output(args: list[str], timeout: float = 60, cwd: Path | None = None) -> str:
    """``git ARGS``'s standard output (run in ``cwd``), without prompts and in
    the C locale: the one git runner of the tool half (the bisection's history
    reads go through it too).

    Raises:
      SourceBuildError: stage ``fetch``, with git's message, when git fails,
        times out or cannot run.
    """
    return _git("fetch", args, timeout, cwd)


def mirror(repo: str | os.PathLike[str], cache_dir: Path, timeout: float = 600) -> Path:
    """A local git directory holding ``repo``'s history.

    A local path is returned as it is (checked to be a repository). A URL is
    cloned bare into ``cache_dir/repos/`` the first time (into a temporary
    folder renamed into place) and fetched (branches and tags) every later
    time.

    Raises:
      SourceBuildError: stage ``fetch`` when the path is no repository or the
        URL cannot be cloned or fetched (git's message).
    """
    if not is_url(repo):
        path = Path(repo).expanduser().resolve()
        if not path.exists():
            raise SourceBuildError("fetch", f"{repo}: no such folder")
        _git("fetch", ["-C", str(path), "rev-parse", "--git-dir"], timeout)
        return path
    url = str(repo)
    root = Path(cache_dir) / "repos"
    root.mkdir(parents=True, exist_ok=True)
    local = root / (hashlib.sha256(url.encode()).hexdigest()[:16] + ".git")
    if local.is_dir():
        _git(
            "fetch",
            ["-C", str(local), "fetch", "--quiet", "--prune", "--tags", "origin", "+refs/heads/*:refs/heads/*"],
            timeout,
        )
        return local
    work = Path(tempfile.mkdtemp(prefix=".cloning-", dir=root))
    try:
        _git("fetch", ["clone", "--quiet", "--bare", url, str(work / "repo.git")], timeout)
        try:
            os.replace(work / "repo.git", local)
        except OSError:
            if not local.is_dir():  # another run cloned it meanwhile: use theirs
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return local


def _commit(git_dir: Path, ref: str, timeout: float) -> Commit:
    try:
        out = _git(
            "fetch",
            ["-C", str(git_dir), "log", "-1", "--no-walk", "--format=%H%x00%h%x00%cI%x00%s", f"{ref}^{{commit}}", "--"],
            timeout,
        )
    except SourceBuildError as e:
        raise SourceBuildError("fetch", f"ref {ref!r} not found in {git_dir}: {e.message}") from None
    sha, short, date, subject = out.rstrip("\n").split("\x00", 3)
    return Commit(sha=sha, short=short, date=date, subject=subject, pr=pr_number(subject))


def commit_info(repo: str | os.PathLike[str], ref: str, cache_dir: Path | None = None, timeout: float = 600) -> Commit:
    """The commit ``ref`` (branch, tag, SHA, ``HEAD``) names in ``repo``; a URL
    is cloned into ``cache_dir`` (see ``mirror``), or, without one, into a
    temporary folder removed afterwards.

    Raises:
      SourceBuildError: stage ``fetch`` when the repository cannot be read or
        fetched, or has no such ref.
    """
    if cache_dir is None and is_url(repo):
        with tempfile.TemporaryDirectory(prefix="optax-gate-src-") as tmp:
            return _commit(mirror(repo, Path(tmp), timeout), ref, timeout)
    return _commit(mirror(repo, Path(cache_dir or "."), timeout), ref, timeout)


def dirty(repo: str | os.PathLike[str], timeout: float = 60) -> list[str]:
    """Paths with uncommitted changes in a local checkout's work tree
    (``git status --porcelain``; untracked files included); empty for a clean
    checkout, a bare repository or a URL."""
    if is_url(repo):
        return []
    path = Path(repo).expanduser()
    if _git("fetch", ["-C", str(path), "rev-parse", "--is-bare-repository"], timeout).strip() == "true":
        return []
    out = _git("fetch", ["-C", str(path), "status", "--porcelain", "-z"], timeout)
    return [entry[3:] for entry in out.split("\x00") if len(entry) > 3]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def cached(cache_dir: Path, sha: str) -> BuiltWheel | None:
    """The cached wheel of commit ``sha``, when its entry is complete and the
    wheel still has the SHA-256 recorded at build time; else None."""
    entry = Path(cache_dir) / "wheels" / sha
    try:
        meta = json.loads((entry / BUILT_FILE).read_text(encoding="utf-8"))
        wheel = entry / meta["wheel"]
        if _sha256(wheel) != meta["sha256"]:
            return None
        return BuiltWheel(path=wheel, sha256=meta["sha256"], commit=Commit(**meta["commit"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _uv_build(source: Path, out: Path, timeout: float) -> Path:
    try:  # the environments' uv runner: no Python downloads, the tail of uv's output on failure
        run_uv("build", ["build", "--wheel", "--quiet", "--out-dir", str(out), str(source)], timeout)
    except EnvironmentFailure as exc:
        raise SourceBuildError("build", exc.message) from None
    wheels = sorted(out.glob("*.whl"))
    if len(wheels) != 1:
        raise SourceBuildError("build", f"uv build made {len(wheels)} wheels, expected one")
    return wheels[0]


def build_wheel(repo: str | os.PathLike[str], ref: str, cache_dir: Path, timeout: float = 600) -> BuiltWheel:
    """Build a wheel of ``repo`` at ``ref`` with ``uv build --wheel``, or take it
    from the cache.

    The commit is checked out in a temporary clone sharing ``repo``'s objects
    (the user's checkout and its index are not touched); the wheel lands in
    ``cache_dir/wheels/<sha>/`` with a ``built.json`` beside it (wheel name,
    SHA-256, commit) written last and atomically, so an interrupted build
    leaves no entry and a second call for the same commit builds nothing.

    Args:
      repo: local path (bare or checkout) or URL.
      ref: branch, tag, SHA or ``HEAD``.
      cache_dir: folder of the wheel cache (and of the clones of URLs).
      timeout: seconds allowed to each git or uv step.

    Raises:
      SourceBuildError: stage ``fetch`` (repository or ref), ``checkout`` or
        ``build``, with git's or uv's message.
    """
    cache_dir = Path(cache_dir)
    git_dir = mirror(repo, cache_dir, timeout)
    commit = _commit(git_dir, ref, timeout)
    hit = cached(cache_dir, commit.sha)
    if hit is not None:
        return hit
    wheels = cache_dir / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".building-{commit.short}-", dir=wheels))
    try:
        tree = work / "src"
        _git("checkout", ["clone", "--quiet", "--shared", "--no-checkout", str(git_dir), str(tree)], timeout)
        _git("checkout", ["-C", str(tree), "checkout", "--quiet", "--detach", commit.sha], timeout)
        built = _uv_build(tree, work / "dist", timeout)
        entry = wheels / commit.sha
        entry.mkdir(exist_ok=True)
        os.replace(built, entry / built.name)
        digest = _sha256(entry / built.name)
        atomic.write_text(
            entry / BUILT_FILE,
            json.dumps({"wheel": built.name, "sha256": digest, "commit": asdict(commit)}, indent=2) + "\n",
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return BuiltWheel(path=entry / built.name, sha256=digest, commit=commit)
