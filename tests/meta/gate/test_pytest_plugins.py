"""Contract runs load the declared pytest plugins only, by module name."""

import json
import os
import subprocess
import sys
from pathlib import Path

from optax_gate.gate.run import pytest_plugins
from optax_gate.kit.environment import probe


def test_the_table_for_the_nox_sessions_matches_the_installed_entry_points() -> None:
    """``AT_THE_LOCK`` names, for each declared plugin, the modules its
    distribution's ``pytest11`` entry points name in this (the lock's) environment."""
    installed = probe.pytest_plugins()
    declared = {name: tuple(sorted(mods)) for name, mods in installed.items() if name in pytest_plugins.DECLARED}
    assert declared == {name: tuple(sorted(mods)) for name, mods in pytest_plugins.AT_THE_LOCK.items()}
    assert pytest_plugins.left_out(installed) == []


def test_args_follow_the_declared_order_and_skip_what_is_missing() -> None:
    installed = {
        "pytest_xdist": ["xdist.plugin"],
        "jaxtyping": ["jaxtyping._pytest_plugin"],
        "optax-gate": ["optax_gate.pytest_plugin"],
    }
    assert pytest_plugins.args(installed) == ["-p", "optax_gate.pytest_plugin", "-p", "xdist.plugin"]
    assert pytest_plugins.left_out(installed) == ["jaxtyping"]


def test_an_undeclared_plugin_is_not_loaded(tmp_path: Path) -> None:
    """A plugin installed but not declared (a stand-in placed on the path and
    registered through an entry point) is loaded by pytest's default autoload
    and not with the gate's switch and arguments."""
    site = tmp_path / "site"
    (site / "stray_plugin-1.0.dist-info").mkdir(parents=True)
    (site / "stray_plugin-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: stray-plugin\nVersion: 1.0\n"
    )
    (site / "stray_plugin-1.0.dist-info" / "entry_points.txt").write_text("[pytest11]\nstray = stray_plugin\n")
    (site / "stray_plugin.py").write_text("def pytest_configure(config):\n    print('STRAY PLUGIN LOADED')\n")
    test = tmp_path / "test_one.py"
    test.write_text("def test_one():\n    pass\n")
    base = {**os.environ, "PYTHONPATH": str(site)}
    base.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    cmd = [sys.executable, "-m", "pytest", str(test), "-q", "-s", "-p", "no:cacheprovider", "--rootdir", str(tmp_path)]
    autoload = subprocess.run(cmd, capture_output=True, text=True, env=base, cwd=tmp_path)
    assert "STRAY PLUGIN LOADED" in autoload.stdout
    declared = subprocess.run(
        [*cmd, *pytest_plugins.args(probe.pytest_plugins())],
        capture_output=True,
        text=True,
        env={**base, **pytest_plugins.ENV},
        cwd=tmp_path,
    )
    assert declared.returncode == 0, declared.stdout + declared.stderr
    assert "STRAY PLUGIN LOADED" not in declared.stdout
    seen = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json; from optax_gate.kit.environment import probe; print(json.dumps(probe.pytest_plugins()))",
        ],
        capture_output=True,
        text=True,
        env=base,
        check=True,
    )
    assert pytest_plugins.left_out(json.loads(seen.stdout)) == ["stray-plugin"]  # what the run record names
