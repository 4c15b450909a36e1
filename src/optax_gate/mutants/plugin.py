"""pytest plugin of the mutants session: ``-p optax_gate.mutants.plugin
--mutant NAME`` applies one mutant (``optax_gate.mutants.registry``) to the
``optax`` module before the contracts are collected."""

from __future__ import annotations

import pytest

from optax_gate import mutants


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--mutant NAME``."""
    parser.addoption(
        "--mutant", default=None, choices=sorted(mutants.load()), help="run the contracts against a broken Optax"
    )


def pytest_configure(config: pytest.Config) -> None:
    """With ``--mutant NAME``, patch optax with that mutant before any contract imports it."""
    name = config.getoption("--mutant")
    if name:
        import optax

        for attr, replacement in mutants.MUTANTS[name].patch(optax).items():
            setattr(optax, attr, replacement)
