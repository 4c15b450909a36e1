"""Source candidates (gate/install/source_specs.py): the specs that ask for one, the
refusal of compiled packages, and the gate end to end on a synthetic git
repository of a tiny package named optax (fake environments; the wheel is
really built and really pinned by uv)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from optax_gate.gate.diffs import dependencies
from optax_gate.gate.inputs.validate import InvalidInput
from optax_gate.gate.install import source_specs
from optax_gate.gate.install.source_specs import SourceFailure, SourceSpec
from tests.meta.support.fake_optax import PYPROJECT, needs_uv
from tests.meta.support.gate_cli import FAKE_PYTHON, gate_cli, newest_run, uv_env
from tests.meta.support.paths import ROOT
from tests.meta.support.source_repos import commit, git

SCHEMA = json.loads((ROOT / "src/optax_gate/gate/report/report.schema.json").read_text())


@pytest.mark.parametrize(
    ("spec", "repo", "ref"),
    [
        (
            "optax @ git+https://github.com/google-deepmind/optax@main",
            "https://github.com/google-deepmind/optax",
            "main",
        ),
        (
            "optax @ git+https://github.com/google-deepmind/optax.git",
            "https://github.com/google-deepmind/optax.git",
            "HEAD",
        ),
        (
            "optax @ git+https://github.com/google-deepmind/optax@v0.2.8#egg=optax",
            "https://github.com/google-deepmind/optax",
            "v0.2.8",
        ),
        (
            "flax @ git+ssh://git@github.com/google/flax.git@release/0.12",
            "ssh://git@github.com/google/flax.git",
            "release/0.12",
        ),
        ("optax @ git+file:///srv/optax.git@abc123", "/srv/optax.git", "abc123"),
    ],
)
def test_a_git_spec_names_repository_and_ref(spec: Any, repo: Any, ref: Any) -> None:
    assert source_specs.from_spec(spec) == SourceSpec(spec.split(" @ ")[0], repo, ref, spec)


def test_a_file_spec_is_a_checkout_at_its_head_and_a_wheel_file_stays_an_ordinary_spec(tmp_path: Path) -> None:
    assert source_specs.from_spec(f"optax @ {tmp_path.as_uri()}") == SourceSpec(
        "optax", str(tmp_path), "HEAD", f"optax @ {tmp_path.as_uri()}"
    )
    wheel = tmp_path / "optax-0.2.8-py3-none-any.whl"
    wheel.write_bytes(b"")
    assert source_specs.from_spec(f"optax @ {wheel.as_uri()}") is None
    assert source_specs.from_spec("optax==0.2.8") is None


def test_source_option_takes_path_or_url_and_an_optional_ref(tmp_path: Path) -> None:
    assert source_specs.from_option(f"optax={tmp_path}@v1") == SourceSpec(
        "optax", str(tmp_path), "v1", f"--source optax={tmp_path}@v1"
    )
    assert source_specs.from_option("flax=git@github.com:google/flax.git").ref == "HEAD"
    assert source_specs.from_option("flax=git@github.com:google/flax.git").repo == "git@github.com:google/flax.git"
    assert source_specs.from_option("optax=https://example.org/optax@main").repo == "https://example.org/optax"
    assert source_specs.from_option("flax=ssh://git@github.com/google/flax.git") == SourceSpec(
        "flax", "ssh://git@github.com/google/flax.git", "HEAD", "--source flax=ssh://git@github.com/google/flax.git"
    )
    for bad in ("optax", "optax=", "=x"):
        with pytest.raises(InvalidInput, match="NAME=PATH_OR_URL"):
            source_specs.from_option(bad)


@pytest.mark.parametrize("spec", ["jax @ git+https://github.com/jax-ml/jax@main", "jaxlib @ file:///tmp"])
def test_jax_and_jaxlib_from_source_are_refused_as_compiled(spec: Any) -> None:
    with pytest.raises(InvalidInput, match="compiled .*use a published release or pre-release instead"):
        source_specs.split([spec], None)
    with pytest.raises(InvalidInput, match="compiled"):
        source_specs.split([], [spec.split(" @ ")[0] + "=/tmp/x"])
    with pytest.raises(InvalidInput, match="only optax and flax"):
        source_specs.split(["numpy @ git+https://github.com/numpy/numpy@main"], None)


def test_a_package_named_by_a_spec_and_by_source_is_refused() -> None:
    with pytest.raises(InvalidInput, match="optax is named twice"):
        source_specs.split(["optax==0.2.8"], ["optax=/tmp/optax"])
    plain, sources = source_specs.split(["jax==0.12.0.1", "optax @ git+https://h/o@main"], ["flax=/tmp/flax"])
    assert plain == ["jax==0.12.0.1"] and [s.name for s in sources] == ["optax", "flax"]


def test_jax_from_source_is_refused_by_the_gate_within_seconds(tmp_path: Path) -> None:
    out = tmp_path / "out"
    status, _, stderr, seconds = gate_cli("jax @ git+https://github.com/jax-ml/jax@main", out=out, timeout=60)
    assert status == 2 and "jax cannot be built from source" in stderr and "compiled" in stderr
    assert seconds < 15, f"took {seconds:.1f} s"
    report = json.loads((out / "not-judged.json").read_text())
    assert report["verdict"] == "not-verified" and "published release or pre-release" in report["candidate"]["reason"]


LOCK_ENTRY = """optax @ file:///c/wheels/{sha}/optax-0.2.9.dev0-py3-none-any.whl \\
    --hash=sha256:{digest}
    # via -r candidate-lock.in
numpy==2.0.0 \\
    --hash=sha256:{other}
"""


def test_the_lock_must_pin_the_built_wheel_by_its_own_hash(tmp_path: Path) -> None:
    digest, other = "a" * 64, "b" * 64
    entry: Any = {"package": "optax", "wheel": "optax-0.2.9.dev0-py3-none-any.whl", "sha256": digest}
    lock = tmp_path / "lock.txt"
    lock.write_text(LOCK_ENTRY.format(sha="1" * 40, digest=digest, other=other))
    source_specs.check_lock(lock, [entry])
    assert dependencies.parse_lock(lock.read_text())["optax"] == {"version": "0.2.9.dev0", "via": ["requested"]}
    lock.write_text(LOCK_ENTRY.format(sha="1" * 40, digest=other, other=digest))
    with pytest.raises(SourceFailure, match="does not pin the optax wheel built from source by its SHA-256"):
        source_specs.check_lock(lock, [entry])
    lock.write_text("numpy==2.0.0 \\\n    --hash=sha256:" + digest + "\n")
    with pytest.raises(SourceFailure, match="found no entry"):
        source_specs.check_lock(lock, [entry])


DRIVER = """
import sys
from pathlib import Path
from optax_gate.gate.install import environments
from optax_gate.gate import cli
environments.ensure = lambda *a, **k: Path({fake!r})
{patch}
sys.exit(cli.main(["gate", *{args!r}, "--out", {out!r}, "--cache-dir", {cache!r}, "--no-speed",
                   "--baseline-lock", {lock!r}, "--requirements-in", {req!r}]))
"""


@pytest.fixture(scope="module")
def tiny_optax(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("src") / "optax"
    path.mkdir()
    git(path, "init", "--quiet", "-b", "main")
    commit(
        path,
        {"pyproject.toml": PYPROJECT, "optax/__init__.py": '"""tiny."""\n__version__ = "0.2.9.dev0"\n'},
        "Add the tiny optax (#1234)",
    )
    return path


def fake_gate(tmp_path: Path, *args: str, patch: str = "") -> subprocess.CompletedProcess[str]:
    fake = tmp_path / "fake-python"
    fake.write_text(FAKE_PYTHON.format(python=sys.executable, pause=0, tests=2))
    fake.chmod(0o755)
    lock, req = tmp_path / "base-lock.txt", tmp_path / "requirements.in"
    lock.write_text("optax==0.2.6 \\\n    --hash=sha256:" + "0" * 64 + "\n")
    req.write_text("optax==0.2.6\n")
    driver = DRIVER.format(
        fake=str(fake),
        args=list(args),
        out=str(tmp_path / "out"),
        cache=str(tmp_path / "cache"),
        lock=str(lock),
        req=str(req),
        patch=patch,
    )
    return subprocess.run(
        [sys.executable, "-c", driver],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(uv_env() or {})},
    )


def latest(tmp_path: Path) -> tuple[dict[str, Any], str, Path]:
    """The newest complete run (judged or not): its report, its markdown, its folder."""
    run = newest_run(tmp_path / "out")
    return json.loads((run / "report.json").read_text()), (run / "report.md").read_text(), run


@needs_uv
@pytest.mark.parametrize("form", ["file spec", "source option"])
def test_a_checkout_is_built_pinned_by_its_hash_and_named_in_the_report(
    tmp_path: Path, tiny_optax: Any, form: Any
) -> None:
    args = [f"optax @ {tiny_optax.as_uri()}"] if form == "file spec" else ["--source", f"optax={tiny_optax}@main"]
    proc = fake_gate(tmp_path, *args)
    assert proc.returncode == 0, proc.stderr
    report, markdown, run = latest(tmp_path)
    jsonschema.validate(report, SCHEMA)
    [entry] = report["candidate"]["sources"]
    head = git(tiny_optax, "rev-parse", "HEAD")
    assert entry["status"] == "built" and entry["commit"]["sha"] == head and entry["commit"]["pr"] == 1234
    assert entry["dirty"] == []
    wheel = tmp_path / "cache" / "source" / "wheels" / head / entry["wheel"]
    assert entry["sha256"] == hashlib.sha256(wheel.read_bytes()).hexdigest()
    lock = (run / "candidate-lock.txt").read_text()
    assert f"optax @ {wheel.resolve().as_uri()}" in lock and f"--hash=sha256:{entry['sha256']}" in lock
    assert f"**optax built from source** (unreleased): commit `{entry['commit']['short']}`" in markdown
    assert "“Add the tiny optax (#1234)”" in markdown
    moved = {r["name"]: r for r in report["dependencies"]["rows"]}["optax"]
    assert (moved["old"], moved["new"]) == ("0.2.6", "0.2.9.dev0")


@needs_uv
def test_a_dirty_checkout_is_built_from_its_commit_and_the_report_says_so(tmp_path: Path, tiny_optax: Any) -> None:
    (tiny_optax / "optax" / "__init__.py").write_text('__version__ = "edited"\n')
    try:
        proc = fake_gate(tmp_path, f"optax @ {tiny_optax.as_uri()}")
    finally:
        git(tiny_optax, "checkout", "--", "optax/__init__.py")
    assert proc.returncode == 0, proc.stderr
    report, markdown, _ = latest(tmp_path)
    assert report["candidate"]["sources"][0]["dirty"] == ["optax/__init__.py"]
    assert "the checkout has uncommitted changes** (1 path(s): `optax/__init__.py`)" in markdown


@needs_uv
@pytest.mark.parametrize(
    ("where", "stage", "says"),
    [
        ("unreachable", "fetch", "unable to access"),
        ("unknown ref", "fetch", "no-such-ref"),
        ("no build", "build", "pyproject.toml"),
    ],
)
def test_a_failed_build_is_not_verified_with_its_message(
    tmp_path: Path, tiny_optax: Any, where: Any, stage: Any, says: Any
) -> None:
    if where == "unreachable":
        spec = "optax @ git+https://127.0.0.1:9/google-deepmind/optax@main"
    elif where == "unknown ref":
        spec = f"optax @ git+{tiny_optax.as_uri()}@no-such-ref"
    else:
        broken = tmp_path / "broken"
        subprocess.run(["git", "clone", "--quiet", str(tiny_optax), str(broken)], check=True)
        commit(broken, {"pyproject.toml": "[build-system\n"}, "Break the build")
        spec = f"optax @ git+{broken.as_uri()}@main"
    start = time.monotonic()
    proc = fake_gate(tmp_path, spec)
    assert proc.returncode == 2 and "cannot be built from source" in proc.stderr, proc.stderr
    report, markdown, _ = latest(tmp_path)
    jsonschema.validate(report, SCHEMA)
    assert report["verdict"] == "not-verified"
    assert report["baseline"]["reason"] == "not run: the candidate could not be built from source"
    assert f"failed at the {stage} stage" in report["candidate"]["reason"] and says in report["candidate"]["reason"]
    [entry] = report["candidate"]["sources"]
    assert entry["status"] == "failed" and entry["commit"] is None and says in entry["message"]
    assert "**optax from source: build failed**" in markdown
    assert not (newest_run(tmp_path / "out") / "candidate-lock.txt").exists()
    assert time.monotonic() - start < 120


# the resolver's lock, with the built wheel's hash replaced (a wheel swapped between build and lock)
SWAP_HASH = """
import re
real = environments.compile_lock
def compile_lock(*a, **k):
    out = real(*a, **k)
    out.write_text(re.sub(r"(optax @ \\S+ \\\\\\n\\s+--hash=sha256:)[0-9a-f]{64}", lambda m: m.group(1) + "f" * 64, out.read_text()))
    return out
environments.compile_lock = compile_lock
"""  # noqa: E501 (a script or page written out as it runs)


@needs_uv
def test_a_lock_that_pins_another_hash_than_the_built_wheels_is_not_verified(tmp_path: Path, tiny_optax: Any) -> None:
    proc = fake_gate(tmp_path, f"optax @ {tiny_optax.as_uri()}", patch=SWAP_HASH)
    assert proc.returncode == 2, proc.stderr
    report, _, _ = latest(tmp_path)
    assert "does not pin the optax wheel built from source by its SHA-256" in report["candidate"]["reason"]
    assert "f" * 64 in report["candidate"]["reason"]


def test_a_file_spec_with_a_ref_a_missing_folder_or_a_subfolder_of_a_checkout_is_refused_in_the_gates_words(
    tmp_path: Path,
) -> None:
    # refused in the gate's words, not uv's parser error or 'Distribution not found'; a subfolder of a checkout
    # would build the enclosing repository's HEAD
    checkout = tmp_path / "optax"
    git(checkout.parent, "init", "--quiet", "-b", "main", str(checkout))
    (checkout / "docs").mkdir()
    with pytest.raises(InvalidInput, match=r"takes no @REF; name the commit with --source NAME=.*optax@v0.2.6"):
        source_specs.from_spec(f"optax @ {checkout.as_uri()}@v0.2.6")
    with pytest.raises(InvalidInput, match="no such file or folder"):
        source_specs.from_spec(f"optax @ {(tmp_path / 'optx').as_uri()}")
    with pytest.raises(InvalidInput, match=r"inside the git checkout .*optax, not its top"):
        source_specs.from_spec(f"optax @ {(checkout / 'docs').as_uri()}")
    spec = source_specs.from_spec(f"optax @ {checkout.as_uri()}")
    assert spec is not None and spec.repo == str(checkout)
