"""JAX's persistent compilation cache changes speed, never outcomes
(``optax_gate.gate.install.compilation_cache``)."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from optax_gate.gate.install import compilation_cache, environments
from optax_gate.gate.run import outcomes

ROOT = Path(__file__).resolve().parents[3]
MODULE = "tests/contracts/test_incremental_update.py"  # golden, property, trajectories, jit/no-recompile


def run_module(tmp_path: Path, name: Any, env: Any, python: Any = sys.executable) -> Any:
    log = tmp_path / f"{name}.jsonl"
    subprocess.run(
        [str(python), "-m", "pytest", MODULE, "-q", "-p", "no:cacheprovider", f"--report-log={log}"],
        cwd=ROOT,
        capture_output=True,
        env={**os.environ, **env},
        timeout=600,
    )
    parsed = outcomes.parse(log)
    assert parsed.exitstatus == 0 and parsed.contracts, f"{name}: {parsed.exitstatus} {parsed.collection_errors}"
    return {cid: c.outcome for cid, c in parsed.contracts.items()}


@pytest.mark.timeout(900)  # three runs of a contract module
def test_a_cached_run_gives_the_outcomes_of_an_uncached_one(tmp_path: Path) -> None:
    on = compilation_cache.environment(tmp_path / "env", on=True)
    off = compilation_cache.environment(tmp_path / "env", on=False)
    uncached = run_module(tmp_path, "uncached", off)
    cold = run_module(tmp_path, "cold", on)
    entries = list((tmp_path / "env" / compilation_cache.FOLDER).iterdir())
    assert entries, "the cached run wrote no cache entry"
    warm = run_module(tmp_path, "warm", on)
    assert uncached == cold == warm


@pytest.mark.timeout(300)
def test_a_program_served_from_the_cache_counts_as_a_compilation(tmp_path: Path) -> None:
    """A recompilation must not hide behind the persistent cache: after the
    in-memory caches are cleared, the same program comes from disk, and
    ``recompilation.counting`` still sees one compilation."""
    code = textwrap.dedent("""
        import jax, jax.numpy as jnp
        from optax_gate.kit import recompilation
        f = jax.jit(lambda x: jnp.sin(x) * 2)
        f(jnp.ones(3)).block_until_ready()
        jax.clear_caches()
        x = jnp.ones(3).block_until_ready()
        with recompilation.counting() as seen:
            jax.jit(lambda x: jnp.sin(x) * 2)(x).block_until_ready()
        print(seen.count)
    """)
    env = {**os.environ, **compilation_cache.environment(tmp_path, on=True)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True, cwd=ROOT)
    assert out.stdout.strip() == "1", out.stderr
    assert any((tmp_path / compilation_cache.FOLDER).iterdir())


def test_the_switch_turns_the_cache_off(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(compilation_cache.SWITCH, "0")
    assert compilation_cache.environment(tmp_path)["JAX_ENABLE_COMPILATION_CACHE"] == "false"


def _second_environment(tmp_path: Path, name: Any) -> Any:
    """Another environment of the same packages (a venv over this one's site-packages): another sys.prefix,
    another folder, as a candidate's environment is to the baseline's."""
    import sysconfig

    from optax_gate.gate.install import environments

    folder = tmp_path / name
    subprocess.run(
        [environments.uv(), "venv", "--quiet", "--python", sys.executable, str(folder)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    (site,) = (folder / "lib").glob("python3*/site-packages")
    (site / "this_environment.pth").write_text(f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
    return folder / "bin" / "python"


@pytest.mark.timeout(900)
def test_entries_another_environment_wrote_give_the_outcomes_of_compiling_them(tmp_path: Path) -> None:
    """Issue 42: one cache shared by the baseline's and the candidate's environments. The candidate's run
    served the baseline's entries (a module with jit-vs-eager and does-not-recompile contracts) gives the
    outcomes of its run with the cache off, and is served them (it adds almost no entry)."""
    from optax_gate.gate.install import environments

    try:
        environments.uv()
    except environments.EnvironmentFailure as exc:
        pytest.skip(str(exc))
    candidate = _second_environment(tmp_path, "candidate")
    shared = compilation_cache.environment(tmp_path / "gate-cache", on=True)
    baseline_run = run_module(tmp_path, "baseline", shared)
    written = {p.name for p in (tmp_path / "gate-cache" / compilation_cache.FOLDER).iterdir()}
    alone = run_module(
        tmp_path, "candidate-alone", compilation_cache.environment(tmp_path / "x", on=False), python=candidate
    )
    served = run_module(tmp_path, "candidate-served", shared, python=candidate)
    assert baseline_run == alone == served
    added = {p.name for p in (tmp_path / "gate-cache" / compilation_cache.FOLDER).iterdir()} - written
    assert len(added) <= len(written) // 10, f"the candidate compiled {len(added)} of {len(written)} programs again"


def test_the_shared_cache_lives_in_the_gates_cache_folder(tmp_path: Path) -> None:
    assert compilation_cache.shared(tmp_path / "cache", tmp_path / "envs") == tmp_path / "cache"
    assert compilation_cache.shared(None, tmp_path / "envs") == tmp_path / "envs"
    env = compilation_cache.environment(compilation_cache.shared(tmp_path / "cache", tmp_path / "envs"))
    assert env["JAX_COMPILATION_CACHE_DIR"] == str((tmp_path / "cache" / compilation_cache.FOLDER).absolute())


def test_both_sides_of_a_gate_compile_into_one_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from optax_gate.gate import sides_prepare
    from optax_gate.gate.inputs.options import EnvironmentOptions

    monkeypatch.setattr(environments, "ensure", lambda *a, **k: Path(sys.executable))
    monkeypatch.setattr(sides_prepare, "look_up", lambda *a, **k: None)
    env = EnvironmentOptions(
        ROOT, ROOT / "requirements-lock.txt", sys.executable, tmp_path / "envs", cache_dir=tmp_path / "cache"
    )
    folders = sides_prepare.Folders(tmp_path / "evidence", tmp_path / "checkpoints")
    (tmp_path / "cand.txt").write_text("optax==0.2.8\n")
    got = {
        sides_prepare.prepare(label, lock, env, folders, lambda _: None).jax_env["JAX_COMPILATION_CACHE_DIR"]
        for label, lock in (("baseline", env.baseline_lock), ("candidate", tmp_path / "cand.txt"))
    }
    assert got == {str((tmp_path / "cache" / compilation_cache.FOLDER).absolute())}


def test_the_cache_is_bounded_entries_written_longest_ago_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / compilation_cache.FOLDER
    folder.mkdir()
    for i in range(5):  # entry i written at time 1000 + i, 1000 bytes each, with its access-time file
        entry = folder / f"jit_f{i}-{i:064x}{compilation_cache.ENTRY}"
        entry.write_bytes(b"x" * 1000)
        (folder / f"jit_f{i}-{i:064x}{compilation_cache.ATIME}").write_bytes(b"t")
        os.utime(entry, (1000 + i, 1000 + i))
    assert compilation_cache.prune(tmp_path, max_bytes=2500) == (3, 2000)
    assert sorted(p.name[:6] for p in folder.iterdir()) == ["jit_f3", "jit_f3", "jit_f4", "jit_f4"]
    monkeypatch.setenv(compilation_cache.SIZE_SWITCH, "not a number")
    assert compilation_cache.limit() == compilation_cache.DEFAULT_MB * 2**20
    monkeypatch.setenv(compilation_cache.SIZE_SWITCH, "0")
    assert compilation_cache.prune(tmp_path) == (2, 0) and not list(folder.glob(f"*{compilation_cache.ENTRY}"))
