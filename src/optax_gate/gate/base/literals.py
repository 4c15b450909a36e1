"""A word narrowed to one of a fixed set of choices (a verdict, a finding's change, a scope), or refused."""

from __future__ import annotations


def one_of[Choice: str](value: str, choices: tuple[Choice, ...], what: str) -> Choice:
    """``value`` as the one of ``choices`` it equals (``what`` names the choice in the error).

    Raises:
      ValueError: ``value`` is none of ``choices``.
    """
    for choice in choices:
        if choice == value:
            return choice
    raise ValueError(f"unknown {what} {value!r}; one of {choices}")
