"""The pytest plugins a contract run loads: the ones this project declares, named one by one, never every plugin
the environment happens to have.

How it does its job and why: ``docs/module-notes.md``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from packaging.utils import canonicalize_name

#: Distributions whose pytest plugins the contracts use (all pinned in
#: ``requirements-lock.txt``): this project's own plugin (contract labels,
#: progress, warnings), hypothesis, pytest-xdist (the split over processes),
#: pytest-timeout (``timeout`` in ``pyproject.toml``), pytest-reportlog (the
#: gate's outcomes), pytest-regressions and pytest-datadir (the snapshots).
DECLARED = (
    "optax-gate",
    "hypothesis",
    "pytest-xdist",
    "pytest-timeout",
    "pytest-reportlog",
    "pytest-regressions",
    "pytest-datadir",
)

#: The declared plugins' entry-point modules at the baseline lock, for the nox
#: sessions (their environment is the lock; ``tests/meta/gate/test_pytest_plugins.py``
#: checks this table against the installed entry points).
AT_THE_LOCK: dict[str, tuple[str, ...]] = {
    "optax-gate": ("optax_gate.pytest_plugin",),
    "hypothesis": ("_hypothesis_pytestplugin",),
    "pytest-xdist": ("xdist.plugin", "xdist.looponfail"),
    "pytest-timeout": ("pytest_timeout",),
    "pytest-reportlog": ("pytest_reportlog.plugin",),
    "pytest-regressions": ("pytest_regressions.plugin",),
    "pytest-datadir": ("pytest_datadir.plugin",),
}

#: pytest's switch: load no entry-point plugin unless named with ``-p``.
ENV = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def modules(installed: Mapping[str, Sequence[str]] = AT_THE_LOCK) -> list[str]:
    """The plugin modules of the declared distributions that are installed.

    Args:
      installed: ``{distribution name: [entry-point module, ...]}`` of the
        environment's ``pytest11`` entry points (``optax_gate.kit.environment.probe``);
        names in any spelling (``pytest_xdist`` is ``pytest-xdist``).

    Returns:
      the modules, in ``DECLARED`` order; a declared distribution that is not
      installed contributes none (then what needs it fails in the run).
    """
    found: dict[str, Sequence[str]] = {canonicalize_name(name): mods for name, mods in installed.items()}
    return [module for dist in DECLARED for module in found.get(dist, ())]


def args(installed: Mapping[str, Sequence[str]] = AT_THE_LOCK) -> list[str]:
    """``["-p", module, ...]`` for each of ``modules(installed)``."""
    return [word for module in modules(installed) for word in ("-p", module)]


def left_out(installed: Mapping[str, Sequence[str]]) -> list[str]:
    """Installed distributions with a pytest plugin that the run does not load, sorted."""
    return sorted(str(canonicalize_name(name)) for name in installed if canonicalize_name(name) not in DECLARED)
