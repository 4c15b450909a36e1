"""A pure-Python package's git history for a bisection: where it is read
from, its release tags, and the first-parent commits between two refs.
``git`` runs as a subprocess (no Python git library: the gate needs five
plumbing commands, and git's own messages are what a report should quote).

The history is ``--history PACKAGE=PATH_OR_URL``: a local repository (bare or
not, read only), or a URL cloned once (bare) under the cache folder
(``optax_gate.gate.install.source_build.mirror``, shared with source candidates). The default is the package's public
repository (:data:`PUBLIC`); where it cannot be reached, :class:`NoHistory`
carries git's own reason.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from optax_gate.gate.inputs.typed_path import user_path
from optax_gate.gate.install import source_build

#: The pure-Python packages a bisection can build from source -> their public repository
#: (the default history, and the base of the links in reports).
PUBLIC = {"optax": "https://github.com/google-deepmind/optax", "flax": "https://github.com/google/flax"}
#: Seconds a clone or fetch of a history may take.
CLONE_TIMEOUT = 600


class NoHistory(Exception):
    """The history cannot be read (git's reason in the message)."""


def git(repo: Path | None, *args: str, timeout: float = 120) -> str:
    """``git ARGS``'s stdout in ``repo``, stripped (``source_build.git_output``).

    Raises:
      NoHistory: git failed, timed out or is missing (git's reason).
    """
    try:
        return source_build.git_output(list(args), timeout, cwd=repo).strip()
    except source_build.SourceBuildError as exc:
        raise NoHistory(exc.message) from None


def parse_histories(values: list[str] | None) -> dict[str, str]:
    """``--history PACKAGE=PATH_OR_URL`` options -> {package: location}.

    A local path is read from where the user stands (``typed_path.user_path``)
    and must be a git repository (a checkout or a bare one) now, so a typo is
    refused before anything runs; a URL is only tried when the bisection runs.

    Raises:
      ValueError: a value without ``=``, a package outside :data:`PUBLIC`
        (with the closest name as a hint), or a local path that does not exist
        or is no git repository (git's reason).
    """
    out = {}
    for value in values or []:
        name, sep, where = value.partition("=")
        name = name.strip().lower()
        if not sep or not where:
            raise ValueError(f"--history {value}: expected PACKAGE=PATH_OR_URL (e.g. optax=../optax)")
        if name not in PUBLIC:
            close = difflib.get_close_matches(name, list(PUBLIC), n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            raise ValueError(
                f"--history {value}: unknown package {name!r}: {hint}only the pure-Python packages "
                f"{' and '.join(PUBLIC)} can be bisected (jax and jaxlib are compiled)"
            )
        if not source_build.is_url(where):
            where = str(user_path(where))
            try:
                source_build.mirror(where, Path("."), CLONE_TIMEOUT)  # a local path: only checked, nothing written
            except source_build.SourceBuildError as exc:
                raise ValueError(f"--history {value}: not a git repository: {exc.message}") from None
        out[name] = where
    return out


def open_history(package: str, where: str | None, cache_dir: Path) -> Path:
    """The git directory to read ``package``'s history from: ``where`` (or
    the public repository) through ``source_build.mirror``: a local folder
    read in place, a URL cloned bare once under ``cache_dir`` and fetched again.

    Raises:
      NoHistory: not a repository, or the URL cannot be cloned or fetched (git's reason).
    """
    try:
        return source_build.mirror(where or PUBLIC[package], cache_dir, CLONE_TIMEOUT)
    except source_build.SourceBuildError as exc:
        raise NoHistory(exc.message) from None


def release_commit(repo: Path, version: str) -> tuple[str, str]:
    """(tag, commit SHA) of release ``version`` (tag ``vX.Y.Z`` or ``X.Y.Z``).

    Raises:
      NoHistory: no such tag.
    """
    for tag in (f"v{version}", version):
        try:
            return tag, git(repo, "rev-parse", "--verify", "--quiet", f"refs/tags/{tag}^{{commit}}")
        except NoHistory:
            continue
    raise NoHistory(f"no release tag v{version} (or {version}) in the history")


def resolve(repo: Path, ref: str) -> str:
    """The commit SHA of ``ref`` (a SHA, tag or branch).

    Raises:
      NoHistory: ``ref`` names no commit.
    """
    try:
        return git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    except NoHistory:
        raise NoHistory(f"{ref} names no commit in the history") from None


def first_parent(repo: Path, old: str, new: str) -> list[str]:
    """``[old, c1, ..., new]``: ``old`` then the first-parent commits after it
    up to ``new``, oldest first (the commits of ``main`` that landed, one per
    merged change).

    Raises:
      NoHistory: ``old`` is not an ancestor of ``new``.
    """
    try:
        git(repo, "merge-base", "--is-ancestor", old, new)
    except NoHistory:
        raise NoHistory(f"{old[:12]} is not an ancestor of {new[:12]}: no history runs from one to the other") from None
    listed = git(repo, "rev-list", "--first-parent", "--reverse", f"{old}..{new}").split()
    return [old, *listed]


def links(package: str, sha: str, pr: int | str | None) -> dict[str, str]:
    """``{"url": commit link, "pr_url": pull request link or ""}`` on the public repository."""
    base = PUBLIC[package]
    return {"url": f"{base}/commit/{sha}", "pr_url": f"{base}/pull/{pr}" if pr else ""}
