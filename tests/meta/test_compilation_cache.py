"""JAX's persistent compilation cache changes speed, never outcomes
(``optax_gate.gate.install.compilation_cache``)."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from optax_gate.gate.install import compilation_cache
from optax_gate.gate.run import outcomes

ROOT = Path(__file__).resolve().parents[2]
MODULE = "tests/contracts/test_incremental_update.py"  # golden, property, trajectories, jit/no-recompile


def run_module(tmp_path, name, env):
    log = tmp_path / f"{name}.jsonl"
    subprocess.run([sys.executable, "-m", "pytest", MODULE, "-q", "-p", "no:cacheprovider", f"--report-log={log}"],
                   cwd=ROOT, capture_output=True, env={**os.environ, **env}, timeout=600)
    parsed = outcomes.parse(log)
    assert parsed.exitstatus == 0 and parsed.contracts, f"{name}: {parsed.exitstatus} {parsed.collection_errors}"
    return {cid: c.outcome for cid, c in parsed.contracts.items()}


@pytest.mark.timeout(900)  # three runs of a contract module
def test_a_cached_run_gives_the_outcomes_of_an_uncached_one(tmp_path):
    on = compilation_cache.environment(tmp_path / "env", on=True)
    off = compilation_cache.environment(tmp_path / "env", on=False)
    uncached = run_module(tmp_path, "uncached", off)
    cold = run_module(tmp_path, "cold", on)
    entries = list((tmp_path / "env" / compilation_cache.FOLDER).iterdir())
    assert entries, "the cached run wrote no cache entry"
    warm = run_module(tmp_path, "warm", on)
    assert uncached == cold == warm


@pytest.mark.timeout(300)
def test_a_program_served_from_the_cache_counts_as_a_compilation(tmp_path):
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


def test_the_switch_turns_the_cache_off(monkeypatch, tmp_path):
    monkeypatch.setenv(compilation_cache.SWITCH, "0")
    assert compilation_cache.environment(tmp_path)["JAX_ENABLE_COMPILATION_CACHE"] == "false"
