"""The registry of mutants and of the contract module each family of mutants
is run against.

A *family* is one contracted API (or set-up) and its contract module, e.g.
``family("sgd", "tests/contracts/test_sgd.py")``; it returns the decorator that
registers that family's mutants. A mutant is a function ``patch(optax) ->
{attribute: replacement}``: the attributes are set on the ``optax`` module
before the contracts are collected; a mutant of Flax or orbax patches those
itself and returns ``{}``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Patch = Callable[[Any], dict[str, Any]]


@dataclass(frozen=True)
class Mutant:
    """One deliberately broken variant of a contracted API.

    Attributes:
      name: unique name, prefixed by its family by convention.
      area: the family (``--area`` of the mutants session).
      what: the broken behaviour, in words (printed by the check).
      patch: ``patch(optax) -> {attribute: replacement}``.
      writer_side: for resume mutants, the variant breaks the process that
        writes the checkpoints (the others break the reader only).
    """

    name: str
    area: str
    what: str
    patch: Patch
    writer_side: bool = False


#: Every registered mutant by name.
MUTANTS: dict[str, Mutant] = {}
#: Family (area) -> the contract module its mutants are run against, relative
#: to the project root.
AREAS: dict[str, str] = {}


def family(area: str, contracts: str) -> Callable[..., Callable[[Patch], Patch]]:
    """Declare the family ``area`` whose contracts are ``contracts`` (a test
    module path relative to the project root) and return its ``mutant``
    decorator: ``@mutant(name, what, writer_side=False)``.

    Raises:
      ValueError: when ``area`` is already declared for another module, or a
        mutant name is registered twice.
    """
    if AREAS.get(area, contracts) != contracts:
        raise ValueError(f"mutant family {area!r} is declared for {AREAS[area]} and {contracts}")
    AREAS[area] = contracts

    def mutant(name: str, what: str, writer_side: bool = False) -> Callable[[Patch], Patch]:
        def register(fn: Patch) -> Patch:
            if name in MUTANTS:
                raise ValueError(f"mutant {name!r} registered twice")
            MUTANTS[name] = Mutant(name, area, what, fn, writer_side)
            return fn

        return register

    return mutant
