"""Meta tests of gate/install/source_build.py on a synthetic git repository of a tiny
pure-Python package built in tmp_path (no network beyond the package index,
which uv needs for the build backend)."""

from __future__ import annotations

import hashlib
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest

from optax_gate.gate.install import source_build
from optax_gate.gate.install.source_build import SourceBuildError
from tests.meta.support.gate_cli import uv_env
from tests.meta.support.source_repos import PYPROJECT, commit, git

pytestmark = pytest.mark.skipif(uv_env() is None, reason="needs uv: run ./noxw once (it installs uv into .noxw/)")


def value_in(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as z:
        return z.read("tinypkg/__init__.py").decode()


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkout with three commits: a package returning 1, one returning 2
    (subject with a PR number), and one whose pyproject cannot be parsed."""
    path = tmp_path_factory.mktemp("tiny") / "tinypkg"
    path.mkdir()
    git(path, "init", "--quiet", "-b", "main")
    commit(path, {"pyproject.toml": PYPROJECT, "tinypkg/__init__.py": '"""tiny."""\nVALUE = 1\n'}, "first")
    git(path, "tag", "v0.1.0")
    commit(path, {"tinypkg/__init__.py": '"""tiny."""\nVALUE = 2\n'}, "Change the value (#1234)")
    commit(path, {"pyproject.toml": "[build-system\n"}, "Merge pull request #1742 from someone/broken")
    return path


def test_commit_info_names_sha_date_subject_and_pr(repo: Any) -> None:
    head = source_build.commit_info(repo, "HEAD")
    assert head.sha == git(repo, "rev-parse", "HEAD") and len(head.sha) == 40
    assert head.sha.startswith(head.short) and 4 <= len(head.short) < 40
    assert head.subject == "Merge pull request #1742 from someone/broken" and head.pr == 1742
    assert head.date == git(repo, "log", "-1", "--format=%cI", "HEAD")
    second = source_build.commit_info(repo, "HEAD~1")
    assert (second.subject, second.pr) == ("Change the value (#1234)", 1234)
    first = source_build.commit_info(repo, "v0.1.0")
    assert (first.subject, first.pr) == ("first", None)


def test_unknown_ref_and_missing_repository_fail_at_fetch(repo: Any, tmp_path: Path) -> None:
    with pytest.raises(SourceBuildError) as e:
        source_build.commit_info(repo, "no-such-branch")
    assert e.value.stage == "fetch" and "no-such-branch" in e.value.message
    with pytest.raises(SourceBuildError) as e:
        source_build.commit_info(tmp_path / "nothere", "HEAD")
    assert e.value.stage == "fetch" and "no such folder" in e.value.message
    (tmp_path / "plain").mkdir()
    with pytest.raises(SourceBuildError) as e:
        source_build.commit_info(tmp_path / "plain", "HEAD")
    assert e.value.stage == "fetch" and "not a git repository" in e.value.message


def test_builds_each_commit_once_and_leaves_the_checkout_alone(repo: Any, tmp_path: Path) -> None:
    status_before = git(repo, "status", "--porcelain", "--ignored")
    head_before = git(repo, "rev-parse", "HEAD")
    cache = tmp_path / "cache"
    built = source_build.build_wheel(repo, "HEAD~1", cache, timeout=300)
    assert built.commit.subject == "Change the value (#1234)"
    assert built.path.is_file() and built.path.name.startswith("tinypkg-0.1.0-") and built.path.suffix == ".whl"
    assert built.sha256 == hashlib.sha256(built.path.read_bytes()).hexdigest()
    assert "VALUE = 2" in value_in(built.path)
    assert built.path.parent == cache / "wheels" / built.commit.sha
    old = source_build.build_wheel(repo, "v0.1.0", cache, timeout=300)
    assert "VALUE = 1" in value_in(old.path) and old.commit.sha != built.commit.sha
    # the user's checkout: same HEAD, no new files, no worktrees registered, no leftovers in the cache
    assert git(repo, "rev-parse", "HEAD") == head_before
    assert git(repo, "status", "--porcelain", "--ignored") == status_before
    assert git(repo, "worktree", "list").count("\n") == 0
    assert sorted(p.name for p in (cache / "wheels").iterdir()) == sorted([built.commit.sha, old.commit.sha])

    # a second call for the same commit builds nothing: uv is not even run
    mtime = built.path.stat().st_mtime_ns
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            source_build, "run_uv", lambda *args, **kwargs: (_ for _ in ()).throw(AssertionError("built again"))
        )
        again = source_build.build_wheel(repo, built.commit.sha, cache, timeout=300)
    assert again == built and again.path.stat().st_mtime_ns == mtime


def test_a_tampered_or_incomplete_cache_entry_is_built_again(repo: Any, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    built = source_build.build_wheel(repo, "v0.1.0", cache, timeout=300)
    built.path.write_bytes(b"not the wheel")
    assert source_build.cached(cache, built.commit.sha) is None
    rebuilt = source_build.build_wheel(repo, "v0.1.0", cache, timeout=300)
    assert rebuilt.sha256 == hashlib.sha256(rebuilt.path.read_bytes()).hexdigest()
    (rebuilt.path.parent / source_build.BUILT_FILE).unlink()  # an interrupted build: no marker
    assert source_build.cached(cache, built.commit.sha) is None


def test_a_commit_that_does_not_build_fails_at_build_with_uvs_message(repo: Any, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with pytest.raises(SourceBuildError) as e:
        source_build.build_wheel(repo, "HEAD", cache, timeout=300)
    assert e.value.stage == "build" and "pyproject.toml" in e.value.message
    assert "build stage" in str(e.value)
    assert not (cache / "wheels" / git(repo, "rev-parse", "HEAD")).exists()
    assert [p.name for p in (cache / "wheels").iterdir()] == []  # the temporary clone is gone


def test_a_url_is_cloned_bare_into_the_cache_and_fetched_again(repo: Any, tmp_path: Path) -> None:
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "--quiet", "--bare", str(repo), str(bare)], check=True)
    cache = tmp_path / "cache"
    url = bare.as_uri()
    built = source_build.build_wheel(url, "v0.1.0", cache, timeout=300)
    assert "VALUE = 1" in value_in(built.path)
    clones = list((cache / "repos").iterdir())
    assert len(clones) == 1 and git(clones[0], "rev-parse", "--is-bare-repository") == "true"
    # a commit pushed later is found by the next call (fetched, not cloned again)
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "--quiet", str(bare), str(work)], check=True)
    new = commit(work, {"tinypkg/__init__.py": '"""tiny."""\nVALUE = 3\n'}, "Three (#7)")
    git(work, "push", "--quiet", "origin", "HEAD:main")
    info = source_build.commit_info(url, "main", cache_dir=cache)
    assert (info.sha, info.pr) == (new, 7)
    assert list((cache / "repos").iterdir()) == clones
    assert source_build.commit_info(url, "main").sha == new  # no cache: a temporary clone
    # a bare local path works as well, read in place
    assert source_build.commit_info(bare, "main").sha == new


def test_an_unreachable_url_fails_closed_at_fetch_with_gits_message(tmp_path: Path) -> None:
    with pytest.raises(SourceBuildError) as e:
        source_build.build_wheel("https://127.0.0.1:9/google-deepmind/optax.git", "main", tmp_path, timeout=60)
    assert e.value.stage == "fetch" and "unable to access" in e.value.message
    assert not list((tmp_path / "repos").iterdir())  # no half clone left behind


def test_dirty_lists_uncommitted_paths_of_a_checkout_only(repo: Any, tmp_path: Path) -> None:
    assert source_build.dirty(repo) == []
    (repo / "scratch.txt").write_text("x")
    try:
        assert source_build.dirty(repo) == ["scratch.txt"]
    finally:
        (repo / "scratch.txt").unlink()
    bare = tmp_path / "b.git"
    subprocess.run(["git", "clone", "--quiet", "--bare", str(repo), str(bare)], check=True)
    assert source_build.dirty(bare) == [] and source_build.dirty(bare.as_uri()) == []
